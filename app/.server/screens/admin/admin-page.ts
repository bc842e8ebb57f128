import { z } from "zod";
import { accountStateOf } from "../../accounts/account-status.ts";
import type { OperatorAccountRow } from "../../accounts/account-store.ts";
import { cookieNames, readCookie, requestClientAddress, serializeCookie } from "../../http/browser.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { csrfToken, isTrustedPost, withCookies } from "../browser-session.ts";
import { errorOutcome, forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import type { AdminAccountsView, AdminAccountView, AdminSignInView, OperatorAccount, OperatorInvite } from "./admin-views.ts";

/**
 * The operator page, /admin (docs/decisions/0051): beyond the reference PDS, which has only its command line. Behind
 * the admin password (a sign-in form, checked and throttled as every admin call: admin/admin-auth.ts), with the
 * screens' CSRF token and Origin check on every form, and no JavaScript needed: the accounts a page at a time in
 * handle order (each page one bounded read, however many accounts there are), a search by the start of a handle,
 * email or DID, and one account's page with its takedown or untakedown, each with a reason.
 */

/** Accounts per page. */
export const ADMIN_PAGE_SIZE = 50;

const LIST_PATH = "/admin";
const ACCOUNT_PATH = "/admin/account";

/** Confirmations after a form post (post/redirect/get): the address names one, the page shows its fixed words. */
const NOTICES = ["signed-out", "taken-down", "restored"] as const;
type AdminNotice = (typeof NOTICES)[number];

function noticeOf(request: Request, t: Translate): string | undefined {
  const key = new URL(request.url).searchParams.get("notice");
  const known = NOTICES.find((notice) => notice === key);
  return known && t(`admin:notices.${known}`);
}

function withNotice(path: string, notice: AdminNotice): string {
  return `${path}${path.includes("?") ? "&" : "?"}notice=${notice}`;
}

function accountPath(did: string): string {
  return `${ACCOUNT_PATH}?${new URLSearchParams({ did })}`;
}

async function signedIn(services: Services, request: Request): Promise<boolean> {
  return services.adminSessions.isSignedIn(readCookie(request, cookieNames(services.config).admin));
}

function signInView(services: Services, request: Request, t: Translate, headers: Headers): AdminSignInView {
  return { kind: "admin-sign-in", csrfToken: csrfToken(services, request, headers), disabled: !services.adminSessions.enabled, notice: noticeOf(request, t) };
}

function isoOrUndefined(ms: number | null): string | undefined {
  return ms === null ? undefined : new Date(ms).toISOString();
}

function operatorAccount(row: OperatorAccountRow): OperatorAccount {
  const status = accountStateOf(row);
  return {
    did: row.did,
    handle: row.handle,
    email: row.email,
    emailConfirmed: row.emailConfirmedAt !== null,
    status,
    statusSince: isoOrUndefined(status === "takendown" ? row.takendownAt : status === "deactivated" ? row.deactivatedAt : null),
    takedownReason: status === "takendown" ? (row.takedownRef ?? undefined) : undefined,
    createdAt: new Date(row.createdAt).toISOString(),
    lastSignInAt: isoOrUndefined(row.lastSignInAt),
  };
}

/** What the search box holds: the start of a handle, an email or a DID, compared as stored (lower case). */
const listParams = z.object({
  q: z.string().trim().max(254).transform((text) => text.replace(/^@/, "").toLowerCase()).default(""),
  after: z.string().max(253).optional(),
});

/** GET /admin: the sign-in form, or a page of the accounts. */
export async function showAdmin(services: Services, request: Request, t: Translate): Promise<PageOutcome<AdminSignInView | AdminAccountsView>> {
  const headers = new Headers();
  if (!(await signedIn(services, request))) return view(signInView(services, request, t, headers), headers, services.adminSessions.enabled ? 200 : 403);
  const url = new URL(request.url);
  const parsed = listParams.safeParse({ q: url.searchParams.get("q") ?? undefined, after: url.searchParams.get("after") ?? undefined });
  const { q, after } = parsed.success ? parsed.data : { q: "", after: undefined };
  // One more than a page: whether there is a next one, without counting the accounts.
  const rows = await services.accounts.page({ prefix: q || undefined, afterHandle: after, limit: ADMIN_PAGE_SIZE + 1 });
  const shown = rows.slice(0, ADMIN_PAGE_SIZE);
  const search = (extra: Record<string, string>) => `${LIST_PATH}?${new URLSearchParams({ ...(q ? { q } : {}), ...extra })}`;
  return view(
    {
      kind: "admin-accounts",
      csrfToken: csrfToken(services, request, headers),
      query: q,
      accounts: shown.map(operatorAccount),
      nextHref: rows.length > ADMIN_PAGE_SIZE ? search({ after: shown.at(-1)!.handle }) : undefined,
      firstHref: after !== undefined ? search({}) : undefined,
      notice: noticeOf(request, t),
    },
    headers,
  );
}

/** POST /admin: sign in (intent=sign_in, the password) or out (intent=sign_out). */
export async function answerAdmin(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const names = cookieNames(services.config);
  if (form("intent") === "sign_out") {
    await services.adminSessions.signOut(readCookie(request, names.admin));
    return redirectTo(withNotice(LIST_PATH, "signed-out"), withCookies(new Headers(), [serializeCookie(services.config, names.admin, "", 0)]));
  }
  if (form("intent") !== "sign_in") return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  const password = form("password");
  if (!password) return formErrors("admin-sign-in", { password: t("admin:signIn.enterPassword") });
  try {
    const id = await services.adminSessions.signIn(password, requestClientAddress(request));
    // A cookie that ends with the browser; the session ends on the server after ADMIN_SESSION_MS whatever it does.
    return redirectTo(LIST_PATH, withCookies(new Headers(), [serializeCookie(services.config, names.admin, id)]));
  } catch (error) {
    return formErrorOf(error, t, "admin-sign-in", "password");
  }
}

/** The account a page names (`did`), or undefined. */
async function accountNamed(services: Services, did: string | null): Promise<OperatorAccountRow | undefined> {
  if (!did || did.length > 2048) return undefined;
  const [row] = await services.accounts.operatorView([did]);
  return row;
}

function noSuchAccount<V>(t: Translate): PageOutcome<V> {
  return errorOutcome(404, t("admin:account.notFound.title"), t("admin:account.notFound.message"));
}

/** GET /admin/account?did=…: one account, with its takedown or untakedown form. */
export async function showAdminAccount(services: Services, request: Request, t: Translate): Promise<PageOutcome<AdminAccountView>> {
  if (!(await signedIn(services, request))) return redirectTo(LIST_PATH);
  const row = await accountNamed(services, new URL(request.url).searchParams.get("did"));
  if (!row) return noSuchAccount(t);
  const headers = new Headers();
  const invites = (await services.invites.allOfAccount(row.did)).map(
    (invite): OperatorInvite => ({ code: invite.code, used: invite.usedCount, uses: invite.availableUses, disabled: invite.disabled, createdAt: new Date(invite.createdAt).toISOString() }),
  );
  return view({ kind: "admin-account", csrfToken: csrfToken(services, request, headers), account: operatorAccount(row), invites, notice: noticeOf(request, t) }, headers);
}

/** The most characters of a takedown's reason (the reference's `ref` has no bound; ours is read on every page). */
export const MAX_REASON_LENGTH = 1000;

/**
 * POST /admin/account: intent=takedown with a reason (required: the next operator reads it), or intent=untakedown
 * (its reason goes to the log). Both act at once and are logged (event "admin").
 */
export async function answerAdminAccount(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  if (!(await signedIn(services, request))) return redirectTo(LIST_PATH);
  const row = await accountNamed(services, form("did"));
  if (!row) return noSuchAccount(t);
  const reason = form("reason").trim();
  if (reason.length > MAX_REASON_LENGTH) return formErrors("admin-status", { reason: t("admin:account.reasonTooLong", { count: MAX_REASON_LENGTH }) }, { reason });
  const intent = form("intent");
  if (intent === "takedown") {
    if (!reason) return formErrors("admin-status", { reason: t("admin:account.reasonRequired") });
    await services.accountStatus.takedown(row.did, reason);
    services.log.info({ event: "admin", action: "takedown", did: row.did, ref: reason }, "Admin: takedown (operator page)");
    return redirectTo(withNotice(accountPath(row.did), "taken-down"));
  }
  if (intent === "untakedown") {
    await services.accountStatus.reverseTakedown(row.did);
    services.log.info({ event: "admin", action: "untakedown", did: row.did, reason }, "Admin: untakedown (operator page)");
    return redirectTo(withNotice(accountPath(row.did), "restored"));
  }
  return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
}

