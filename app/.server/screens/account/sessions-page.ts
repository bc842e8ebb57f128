import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { endSession, withCookies } from "../browser-session.ts";
import type { SessionsView } from "./views.ts";
import { withNotice } from "./notices.ts";
import { errorOutcome, redirectTo, type PageOutcome } from "../outcome.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import { describeUserAgent } from "./user-agent.ts";

/** GET /account/sessions: the browsers signed in to this account. */
export async function showSessions(services: Services, request: Request, t: Translate): Promise<PageOutcome<SessionsView>> {
  return signedInPage(services, request, t, async ({ account, sessionIdHash }, base) => {
    const [sessions, setting] = await Promise.all([services.sessions.list(account.did), services.signInNotices.settingOf(account.did)]);
    return {
      ...base,
      kind: "sessions",
      signInNotices: { available: services.signInNotices.available, ...setting },
      sessions: sessions
        .map((session) => ({
          id: session.idHash,
          device: describeUserAgent(session.userAgent, t),
          userAgent: session.userAgent ?? undefined,
          ipAddress: session.ipAddress || undefined,
          createdAt: session.createdAt.toISOString(),
          lastSeenAt: session.lastSeenAt.toISOString(),
          current: session.idHash === sessionIdHash,
        }))
        // This browser first.
        .sort((a, b) => Number(b.current) - Number(a.current)),
    };
  });
}

/** POST /account/sessions: sign out one browser, or every other one; or the new-sign-in emails on or off (docs/decisions/0056). */
export async function answerSessions(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  return signedInAction(services, request, form, t, async ({ account, sessionIdHash }) => {
    switch (form("intent")) {
      case "sign_in_notices": {
        const on = form("on") === "on";
        await services.signInNotices.setEnabled(account.did, on);
        return redirectTo(withNotice("/account/sessions", on ? "sign-in-notices-on" : "sign-in-notices-off"));
      }
      case "sign_out_others":
        await services.sessions.destroyOthers(account.did, sessionIdHash);
        return redirectTo(withNotice("/account/sessions", "others-ended"));
      case "sign_out": {
        const id = form("session_id");
        if (id === sessionIdHash) {
          // Signing out this browser: same as the Sign out button.
          return redirectTo(withNotice("/account", "signed-out"), withCookies(new Headers(), await endSession(services, request, account.did)));
        }
        await services.sessions.destroyByHash(account.did, id);
        return redirectTo(withNotice("/account/sessions", "session-ended"));
      }
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noBrowser"));
  });
}
