import type { AccountSummary } from "../accounts/account-manager.ts";
import { PasskeyError } from "../accounts/passkey-manager.ts";
import { SignInError, type SignedInAccount } from "../accounts/sign-in.ts";
import { cookieNames, csrfFor, deviceCookie, isSameOriginPost, isValidCsrf, knownDeviceId, newDeviceId, readCookie, requestClientAddress, serializeCookie } from "../http/browser.ts";
import type { Services } from "../services.ts";
import { screenLanguage } from "../i18n/screen-language.ts";
import { sha256Base64url } from "../util/crypto.ts";

/**
 * The account area's browser session: who is signed in, the CSRF token of
 * this browser, and signing in and out. Sign-in goes through the same
 * throttled SignIn as the consent screen.
 */

export type SignedIn = {
  account: AccountSummary;
  sessionIdHash: string;
  /** When this browser session began (a sign-in). */
  signedInAt: Date;
  /** This browser proved the password or a passkey within the last few minutes (docs/decisions/0007). */
  recentlyAuthenticated: boolean;
  /** "Stay signed in on this device" was ticked (docs/decisions/0020). */
  staySignedIn: boolean;
};

/**
 * Several accounts in one browser (docs/decisions/0020): each signed-in account has a session row of its own; the
 * browser keeps their ids in two cookies, one that ends with the browser session and one, with a Max-Age, for the
 * sessions whose person chose to stay signed in. At most this many accounts at once: signing in to one more signs
 * the longest-signed-in one out.
 */
export const MAX_ACCOUNTS_PER_BROWSER = 8;

const ID_SEPARATOR = "~";

/** A session of this browser with the id its cookie holds (never sent to a page). */
type HeldSession = SignedIn & { id: string };

function idsIn(value: string | undefined): string[] {
  if (!value || value.length > 4096) return [];
  return value
    .split(ID_SEPARATOR)
    .filter((id) => id.length > 0 && id.length <= 128)
    .slice(0, MAX_ACCOUNTS_PER_BROWSER);
}

/** This browser's live sessions, one per account (the latest), in the order they were signed in. */
async function heldSessions(services: Services, request: Request): Promise<HeldSession[]> {
  const names = cookieNames(services.config);
  const ids = [...new Set([...idsIn(readCookie(request, names.keptSession)), ...idsIn(readCookie(request, names.session))])];
  const resolved = await Promise.all(ids.map(async (id) => ({ id, session: await services.sessions.resolve(id) })));
  const byAccount = new Map<string, HeldSession>();
  for (const { id, session } of resolved) {
    if (!session) continue;
    const held: HeldSession = {
      id,
      account: session.account,
      sessionIdHash: session.idHash,
      signedInAt: session.createdAt,
      recentlyAuthenticated: session.recentlyAuthenticated,
      staySignedIn: session.staySignedIn,
    };
    const earlier = byAccount.get(session.account.did);
    if (!earlier || earlier.signedInAt <= held.signedInAt) byAccount.set(session.account.did, held);
  }
  return [...byAccount.values()].sort((a, b) => a.signedInAt.getTime() - b.signedInAt.getTime());
}

function withoutId({ id: _id, ...signedIn }: HeldSession): SignedIn {
  return signedIn;
}

/** Every account signed in in this browser, in the order they signed in. */
export async function signedInAccounts(services: Services, request: Request): Promise<SignedIn[]> {
  return (await heldSessions(services, request)).map(withoutId);
}

/** The account the browser last chose on the account pages, when it is still signed in here. */
export function selectedAccountDid(services: Services, request: Request, accounts: readonly SignedIn[]): string | undefined {
  const did = readCookie(request, cookieNames(services.config).account);
  return accounts.some((signedIn) => signedIn.account.did === did) ? did : undefined;
}

/**
 * The session a request acts for. With `accountDid` (a form names the account it was shown for), that account's
 * session in this browser, or none; otherwise the selected account's, or the latest signed in.
 */
export async function currentSession(services: Services, request: Request, accountDid?: string): Promise<SignedIn | undefined> {
  const accounts = await signedInAccounts(services, request);
  const did = accountDid || selectedAccountDid(services, request, accounts);
  if (did) return accounts.find((signedIn) => signedIn.account.did === did);
  return accounts.at(-1);
}

/**
 * What identifies this browser (a MAC of its per-browser cookie, docs/decisions/0022). A browser without the cookie
 * gets the value that this answer's CSRF token will set (`csrfToken`), or, when the answer sets none, one it never
 * holds.
 */
export function browserOf(services: Services, request: Request): string {
  return csrfFor(request, services.config, services.cookieSecret).browser;
}

/** This browser's CSRF token; `headers` carries the cookie when it had none yet. */
export function csrfToken(services: Services, request: Request, headers: Headers): string {
  const csrf = csrfFor(request, services.config, services.cookieSecret);
  if (csrf.setCookie) headers.append("Set-Cookie", csrf.setCookie);
  return csrf.token;
}

/** A state-changing post comes from our origin and carries this browser's CSRF token (docs/architecture.md, "Browser security"). */
export function isTrustedPost(services: Services, request: Request, token: string): boolean {
  return isSameOriginPost(request, services.config) && isValidCsrf(request, services.config, services.cookieSecret, token);
}

/**
 * The Set-Cookies that leave this browser holding exactly `sessions`: the ones that end with the browser in the
 * session cookie, the ones that stay signed in in the kept one. A cookie left empty is cleared.
 */
function sessionCookies(services: Services, request: Request, sessions: readonly { id: string; staySignedIn: boolean }[]): string[] {
  const { config } = services;
  const names = cookieNames(config);
  const short = sessions.filter((session) => !session.staySignedIn).map((session) => session.id).join(ID_SEPARATOR);
  const kept = sessions.filter((session) => session.staySignedIn).map((session) => session.id).join(ID_SEPARATOR);
  const cookies: string[] = [];
  if (short !== (readCookie(request, names.session) ?? "")) cookies.push(short ? serializeCookie(config, names.session, short) : serializeCookie(config, names.session, "", 0));
  if (kept !== (readCookie(request, names.keptSession) ?? "")) {
    cookies.push(serializeCookie(config, names.keptSession, kept, kept ? Math.floor(config.lifetimes.browserSession / 1000) : 0));
  }
  return cookies;
}

/** The Set-Cookie that makes `accountDid` the account the account pages act on (a session cookie); none: forget it. */
function selectionCookie(services: Services, accountDid: string | undefined): string {
  const { config } = services;
  return accountDid ? serializeCookie(config, cookieNames(config).account, accountDid) : serializeCookie(config, cookieNames(config).account, "", 0);
}

/**
 * Creates a browser session for the account after it signed in, beside the other accounts signed in here (an
 * earlier session of the same account in this browser is ended: one per account). Returns the cookies to set: the
 * sessions', the selected account, and the one that records this browser as a known device of the account
 * (docs/decisions/0009).
 */
export async function startSession(services: Services, request: Request, account: SignedInAccount, staySignedIn = false, origin: "sign-in" | "sign-up" = "sign-in"): Promise<string[]> {
  const { config } = services;
  const accountDid = account.did;
  const held = await heldSessions(services, request);
  const userAgent = request.headers.get("user-agent");
  // docs/decisions/0056: the session records which browser it is (the device id of docs/decisions/0009, hashed).
  const knownDevice = knownDeviceId(request, config, services.cookieSecret, accountDid);
  const deviceId = knownDevice ?? newDeviceId();
  const deviceHash = sha256Base64url(deviceId);
  const sessionId = await services.sessions.create(
    accountDid,
    { userAgent: userAgent ?? undefined, ipAddress: requestClientAddress(request), staySignedIn, deviceHash },
    account.proof,
  );
  // The password changed, or the passkey went, while this sign-in was checked: it signs in nobody.
  if (sessionId === undefined) throw "passwordHash" in account.proof ? new SignInError() : new PasskeyError("unknownPasskey");
  if (origin === "sign-up") await services.signInNotices.accountCreatedIn(accountDid);
  else if (knownDevice === undefined) await tellOfNewBrowser(services, request, { accountDid, deviceHash, userAgent });
  const others = held.filter((session) => session.account.did !== accountDid);
  const dropped = [...held.filter((session) => session.account.did === accountDid), ...others.slice(0, Math.max(0, others.length - (MAX_ACCOUNTS_PER_BROWSER - 1)))];
  for (const session of dropped) await services.sessions.destroy(session.id);
  const kept = others.slice(Math.max(0, others.length - (MAX_ACCOUNTS_PER_BROWSER - 1)));
  return [
    ...sessionCookies(services, request, [...kept, { id: sessionId, staySignedIn }]),
    selectionCookie(services, accountDid),
    deviceCookie(request, config, services.cookieSecret, accountDid, deviceId),
  ];
}

/**
 * docs/decisions/0056: a browser without this account's device entry (docs/decisions/0009) is new to it. The account's
 * first browser (its first sign-in, when it was made elsewhere) is told of nothing, any later new one is emailed
 * about. The session is stored already; nothing here fails the sign-in.
 */
async function tellOfNewBrowser(services: Services, request: Request, signIn: { accountDid: string; deviceHash: string; userAgent: string | null }) {
  await services.signInNotices.browserSignedIn({
    ...signIn,
    address: requestClientAddress(request),
    language: await screenLanguage(services, request),
  });
}

/** Makes a signed-in account the one the account pages act on; undefined when it is not signed in here. */
export async function selectAccount(services: Services, request: Request, accountDid: string): Promise<string[] | undefined> {
  const held = await heldSessions(services, request);
  return held.some((session) => session.account.did === accountDid) ? [selectionCookie(services, accountDid)] : undefined;
}

/** Appends each Set-Cookie of `cookies` to `headers` (returned, for chaining). */
export function withCookies(headers: Headers, cookies: readonly string[]): Headers {
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return headers;
}

/**
 * Signs one account out of this browser (`accountDid`), or every account (none given); the other accounts stay
 * signed in. Returns the cookies to set.
 */
export async function endSession(services: Services, request: Request, accountDid?: string): Promise<string[]> {
  const held = await heldSessions(services, request);
  const ending = accountDid === undefined ? held : held.filter((session) => session.account.did === accountDid);
  for (const session of ending) await services.sessions.destroy(session.id);
  const remaining = held.filter((session) => !ending.includes(session));
  const cookies = sessionCookies(services, request, remaining);
  const selected = selectedAccountDid(services, request, held.map(withoutId));
  if (selected !== undefined && ending.some((session) => session.account.did === selected)) cookies.push(selectionCookie(services, undefined));
  return cookies;
}

/**
 * Signs in with a password and starts this browser's session: the account
 * and the session cookie. A wrong password (the same message whatever was
 * wrong; nothing typed is echoed) or a wait is thrown, as the error model's
 * refusal for the form to show (screens/outcome.ts, `formErrorOf`).
 */
export async function signInWithPassword(
  services: Services,
  request: Request,
  identifier: string,
  password: string,
  staySignedIn = false,
): Promise<{ account: AccountSummary; setCookies: string[] }> {
  const { config, cookieSecret } = services;
  const knownDevice = (accountDid: string) => knownDeviceId(request, config, cookieSecret, accountDid);
  const account = await services.signIn.withPassword(identifier, password, requestClientAddress(request), knownDevice);
  return { account, setCookies: await startSession(services, request, account, staySignedIn) };
}

/** Where to go after signing in: only a path of the account area (never another site). */
export function accountReturnPath(value: string | null | undefined): string {
  if (value && /^\/account(\/[a-z-]*)?$/.test(value)) return value;
  return "/account";
}

/** The sign-in page for a signed-out visitor of `path`. */
export function signInLocation(path: string): string {
  return path === "/account" ? "/account" : `/account?${new URLSearchParams({ next: path })}`;
}
