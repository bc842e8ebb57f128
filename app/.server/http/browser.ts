import { randomBytes } from "node:crypto";
import { parse, serialize } from "cookie";
import type { Config } from "../config.ts";
import { hmacBase64url, safeEqual } from "../util/crypto.ts";

/**
 * Cookies and CSRF protection for the screens (docs/architecture.md, "Browser security"). Cookies are
 * HttpOnly and SameSite=Lax, Secure with the __Host- prefix when the issuer
 * is https. Forms carry a CSRF token: an HMAC of a random per-browser cookie
 * under the server's cookie secret, so a page on another origin can neither
 * read nor forge it.
 *
 * Every cookie of the server is read and written here, through the `cookie` package (RFC 6265's syntax: the parser
 * and serializer Remix's createCookie is built on), synchronously and unsigned: the values that matter are random
 * identifiers looked up by their hash, or MACs of their own (docs/decisions/0032).
 */

/**
 * `session`: the ids of this browser's sessions that end with the browser session (no Max-Age); `keptSession`: those
 * whose person ticked "Stay signed in on this device" (Max-Age of the long lifetime); `account`: which of the
 * signed-in accounts the account pages act on (docs/decisions/0020); `language`: the language picked on this site
 * (docs/decisions/0019); `recoveryReturn`: the sign-in request a password reset started from (issue 19); `admin`: the
 * operator page's session (docs/decisions/0051).
 */
export type CookieNames = { session: string; keptSession: string; account: string; csrf: string; device: string; language: string; recoveryReturn: string; admin: string };

export function cookieNames(config: Pick<Config, "publicUrl">): CookieNames {
  const prefix = config.publicUrl.protocol === "https:" ? "__Host-" : "";
  return {
    session: `${prefix}atrium_session`,
    keptSession: `${prefix}atrium_session_kept`,
    account: `${prefix}atrium_account`,
    csrf: `${prefix}atrium_csrf`,
    device: `${prefix}atrium_device`,
    language: `${prefix}atrium_lang`,
    recoveryReturn: `${prefix}atrium_recovery_return`,
    admin: `${prefix}atrium_admin`,
  };
}

/** The request's cookies, parsed once per request however many parts of the answer read them; values still encoded. */
const parsedCookies = new WeakMap<Request, Record<string, string | undefined>>();

function cookiesOf(request: Request): Record<string, string | undefined> {
  let cookies = parsedCookies.get(request);
  if (!cookies) {
    // Decoded one by one in readCookie: the package would hand a malformed escape back undecoded.
    cookies = parse(request.headers.get("cookie") ?? "", { decode: (value) => value });
    parsedCookies.set(request, cookies);
  }
  return cookies;
}

/** A cookie's value; undefined when absent, or when it holds a malformed escape (a cookie this server never set). */
export function readCookie(request: Request, name: string): string | undefined {
  const value = cookiesOf(request)[name];
  if (value === undefined) return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

/**
 * A cookie of the screens; without `maxAgeSeconds`, a session cookie that ends with the browser session. Path=/ and
 * no Domain, as the __Host- prefix requires (RFC 6265bis §4.1.3.2).
 */
export function serializeCookie(config: Pick<Config, "publicUrl">, name: string, value: string, maxAgeSeconds?: number): string {
  return serialize(name, value, { path: "/", httpOnly: true, sameSite: "lax", secure: config.publicUrl.protocol === "https:", maxAge: maxAgeSeconds });
}

/**
 * `browser`: what identifies this browser to the server (a MAC of the same per-browser value, under another label),
 * e.g. to recall which browser a sign-in request was shown to (docs/decisions/0022); never sent to a page.
 */
export type CsrfState = { token: string; setCookie?: string; browser: string };

const CSRF_COOKIE_MAX_AGE = 60 * 60 * 24;

/** One per request: a browser without the cookie gets one new value, however many parts of the answer ask. */
const issued = new WeakMap<Request, CsrfState>();

/** The CSRF token for this browser, creating its cookie when missing. */
export function csrfFor(request: Request, config: Config, secret: string): CsrfState {
  const known = issued.get(request);
  if (known) return known;
  const names = cookieNames(config);
  let seed = readCookie(request, names.csrf);
  let setCookie: string | undefined;
  if (!seed || seed.length > 128) {
    seed = randomBytes(24).toString("base64url");
    setCookie = serializeCookie(config, names.csrf, seed, CSRF_COOKIE_MAX_AGE);
  }
  const state = { token: hmacBase64url(secret, `csrf:${seed}`), setCookie, browser: hmacBase64url(secret, `browser:${seed}`) };
  issued.set(request, state);
  return state;
}

export function isValidCsrf(request: Request, config: Config, secret: string, token: string | undefined): boolean {
  const seed = readCookie(request, cookieNames(config).csrf);
  if (!seed || !token) return false;
  return safeEqual(hmacBase64url(secret, `csrf:${seed}`), token);
}

/** A cross-site form post carries a foreign Origin; same-origin posts carry ours (or none, from old agents). */
export function isSameOriginPost(request: Request, config: Config): boolean {
  const origin = request.headers.get("origin");
  return origin === null || origin === config.issuer;
}

/** The client address the entry put on this request (x-atrium-client-ip, server/middleware.ts), never one the request chose. */
export function requestClientAddress(request: Request): string | undefined {
  return request.headers.get("x-atrium-client-ip") ?? undefined;
}

/**
 * Known devices (docs/decisions/0009): a browser that signed in to an account
 * keeps, per account, a random id MAC'ed under the cookie secret, so that
 * its later sign-ins are throttled on their own counter and no one elsewhere
 * can make its owner wait. The cookie proves only that this browser signed
 * in to that account before; it signs in nobody. Entries are
 * `base64url(did).id.mac`, newest first, joined by "~".
 */
const DEVICE_COOKIE_MAX_AGE = 365 * 24 * 60 * 60;
const MAX_DEVICE_ENTRIES = 10;

type DeviceEntry = { did: string; id: string };

function deviceMac(secret: string, entry: DeviceEntry): string {
  return hmacBase64url(secret, `device:${entry.did}:${entry.id}`);
}

function knownDevices(request: Request, config: Config, secret: string): DeviceEntry[] {
  const value = readCookie(request, cookieNames(config).device);
  if (!value || value.length > 4096) return [];
  const entries: DeviceEntry[] = [];
  for (const part of value.split("~").slice(0, MAX_DEVICE_ENTRIES)) {
    const [encodedDid, id, mac] = part.split(".");
    if (!encodedDid || !id || !mac) continue;
    const entry = { did: Buffer.from(encodedDid, "base64url").toString("utf8"), id };
    if (safeEqual(deviceMac(secret, entry), mac)) entries.push(entry);
  }
  return entries;
}

/** This browser's device id for the account, when it signed in to it before. */
export function knownDeviceId(request: Request, config: Config, secret: string, accountDid: string): string | undefined {
  return knownDevices(request, config, secret).find((entry) => entry.did === accountDid)?.id;
}

/** A new device id, for a browser that has none for the account yet. */
export function newDeviceId(): string {
  return randomBytes(16).toString("base64url");
}

/** The Set-Cookie that records this browser as a known device of the account (kept first, its id kept; `newId` when it has none). */
export function deviceCookie(request: Request, config: Config, secret: string, accountDid: string, newId: string = newDeviceId()): string {
  const entries = knownDevices(request, config, secret);
  const current = entries.find((entry) => entry.did === accountDid) ?? { did: accountDid, id: newId };
  const kept = [current, ...entries.filter((entry) => entry.did !== accountDid)].slice(0, MAX_DEVICE_ENTRIES);
  const value = kept.map((entry) => `${Buffer.from(entry.did).toString("base64url")}.${entry.id}.${deviceMac(secret, entry)}`).join("~");
  return serializeCookie(config, cookieNames(config).device, value, DEVICE_COOKIE_MAX_AGE);
}
