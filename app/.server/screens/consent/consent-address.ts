import { z } from "zod";
import type { Translate } from "../../i18n/translate.ts";

/**
 * The consent screen's own address: `/oauth/authorize` with the pushed request's client_id and request_uri (RFC 9126
 * §4), and at most one of the screen's own parameters. Other pages send people back to it (a password reset started
 * there, "Confirm it's you" for reactivating: issue 19, issue 28 item 17); they accept only this shape, rebuilt from
 * its parts, so a parameter naming where to go can send nobody anywhere else.
 */

/** The pushed request a screen address names. */
export type ScreenRequest = { clientId: string; requestUri: string };

/**
 * The notices the consent screen shows after another page sent the person back (the account pages' words,
 * account:notices.*): a reset password, a reactivated account.
 */
const SCREEN_NOTICES = ["password-reset", "account-reactivated"] as const;

export type ScreenNotice = (typeof SCREEN_NOTICES)[number];

/** The screen's address for a request, with its step's parameters (`add`, `choose`, `account`, `notice`). */
export function screenAddress(request: ScreenRequest, extra: Record<string, string> = {}): string {
  return `/oauth/authorize?${new URLSearchParams({ client_id: request.clientId, request_uri: request.requestUri, ...extra })}`;
}

const ScreenAddress = z
  .string()
  .max(2048)
  .transform((value, context): ScreenRequest => {
    const url = value.startsWith("/oauth/authorize?") ? new URL(value, "http://screen.invalid") : undefined;
    const clientId = url?.searchParams.get("client_id");
    const requestUri = url?.searchParams.get("request_uri");
    if (!url || url.origin !== "http://screen.invalid" || url.pathname !== "/oauth/authorize" || !clientId || !requestUri) {
      context.addIssue({ code: "custom", message: "not the consent screen's address" });
      return z.NEVER;
    }
    return { clientId, requestUri };
  });

/** The request a value names when it is the consent screen's address (any other parameter dropped), else undefined. */
export function screenRequestOf(value: string | null | undefined): ScreenRequest | undefined {
  const parsed = ScreenAddress.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** The notice the screen's address names, in the screen's language, when it names one the screen shows. */
export function screenNoticeOf(url: URL, t: Translate): string | undefined {
  const key = SCREEN_NOTICES.find((known) => known === url.searchParams.get("notice"));
  return key ? t(`account:notices.${key}`) : undefined;
}
