import { beforeEach, describe, expect, it } from "vitest";
import { memoryClientManager, MemoryGrantStore, MemoryRequestStore } from "../../../../tests/helpers/memory-stores.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import { HOUR, MINUTE } from "../../util/time.ts";
import { REQUEST_URI_PREFIX } from "../request/par-manager.ts";
import { WAY_BACK_MAX_STATE, type AuthorizationParameters } from "../request/request-store.ts";
import { AuthorizationReturnError, AuthorizeManager } from "./authorize-manager.ts";

/**
 * From a pushed request to a code or an error redirect (RFC 6749 §4.1.2,
 * RFC 9126 §4, RFC 9207), on in-memory stores and a clock the test moves.
 */

const ISSUER = "https://pds.example.com";
const CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope: "atproto" })}`;
const REDIRECT = "http://127.0.0.1:4000/callback";
/** What identifies the browser the screen is shown to (a MAC of its cookie, in the app). */
const BROWSER = "browser-a";

let clock: number;
const now = () => clock;
let requests: MemoryRequestStore;
let grants: MemoryGrantStore;
let manager: AuthorizeManager;

beforeEach(() => {
  clock = Date.UTC(2026, 10, 1, 12, 0, 0);
  grants = new MemoryGrantStore();
  requests = new MemoryRequestStore(grants);
  const clients = memoryClientManager(ISSUER, now);
  manager = new AuthorizeManager(ISSUER, clients, requests, { requestUriLifetimeMs: 5 * MINUTE, codeLifetimeMs: 5 * MINUTE, now });
});

/** A request as PAR stores it; returns its request_uri. */
function pushed(parameters: Partial<AuthorizationParameters> = {}): string {
  const requestUri = `${REQUEST_URI_PREFIX}req-${Math.random().toString(36).slice(2)}`;
  requests.create({
    idHash: sha256Base64url(requestUri),
    clientId: CLIENT_ID,
    parameters: {
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT,
      scope: "atproto",
      state: "the-state",
      code_challenge: "c".repeat(43),
      code_challenge_method: "S256",
      response_mode: "query",
      ...parameters,
    },
    dpopJkt: "jkt",
    clientKey: null,
    createdAt: clock,
    expiresAt: clock + 5 * MINUTE,
  });
  return requestUri;
}

async function pageError(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    if (hasCode(error, "request_invalid", "request_expired", "request_answered")) return error.code;
    throw error;
  }
  throw new Error("expected a page error");
}

describe("AuthorizeManager.load", () => {
  it("finds the pushed request for its client", async () => {
    const pending = await manager.load(CLIENT_ID, pushed(), BROWSER);
    expect(pending.client.clientId).toBe(CLIENT_ID);
    expect(pending.request.parameters.state).toBe("the-state");
  });

  it("refuses a request_uri that is not one, an unknown one, a missing or other client_id (RFC 9126 §4)", async () => {
    expect(await pageError(manager.load(CLIENT_ID, null, BROWSER))).toBe("request_invalid");
    expect(await pageError(manager.load(CLIENT_ID, "https://evil.example/request", BROWSER))).toBe("request_invalid");
    expect(await pageError(manager.load(CLIENT_ID, `${REQUEST_URI_PREFIX}never-pushed`, BROWSER))).toBe("request_expired");
    expect(await pageError(manager.load(null, pushed(), BROWSER))).toBe("request_invalid");
    const other = await manager.load("http://localhost?scope=atproto", pushed(), BROWSER).catch((thrown: unknown) => thrown);
    expect(other).toBeInstanceOf(AuthorizationReturnError);
    expect((other as AuthorizationReturnError).code).toBe("request_invalid");
  });

  it("showing the screen keeps the request alive while the person reads, but at most an hour after it was pushed", async () => {
    const requestUri = pushed();
    const idHash = sha256Base64url(requestUri);
    for (let minute = 4; minute < 60; minute += 4) {
      clock += 4 * MINUTE;
      await manager.load(CLIENT_ID, requestUri, BROWSER);
    }
    expect(requests.rows.get(idHash)!.expiresAt).toBe(Date.UTC(2026, 10, 1, 12, 0, 0) + HOUR);
    clock = Date.UTC(2026, 10, 1, 12, 0, 0) + HOUR;
    expect(await pageError(manager.load(CLIENT_ID, requestUri, BROWSER))).toBe("request_expired");
  });
});

describe("AuthorizeManager.approve and reject", () => {
  it("approve issues one code, redirected with code, state and iss (RFC 9207); the request is then answered", async () => {
    const pending = await manager.load(CLIENT_ID, pushed(), BROWSER);
    const location = new URL(await manager.approve(pending, "did:plc:alice"));
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe("the-state");
    expect(location.searchParams.get("iss")).toBe(ISSUER);
    const code = location.searchParams.get("code")!;
    expect(grants.codes.get(sha256Base64url(code))).toMatchObject({ accountDid: "did:plc:alice", redirectUri: REDIRECT, expiresAt: clock + 5 * MINUTE });
    expect(await pageError(() => manager.approve(pending, "did:plc:alice"))).toBe("request_answered");
    expect(await pageError(() => manager.reject(pending, "access_denied", "no"))).toBe("request_answered");
    expect(grants.codes.size).toBe(1);
  });

  it("reject redirects with the error, in the fragment when the client asked for it", async () => {
    const pending = await manager.load(CLIENT_ID, pushed({ response_mode: "fragment" }), BROWSER);
    const location = new URL(await manager.reject(pending, "access_denied", "The user denied the request"));
    expect(location.search).toBe("");
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(Object.fromEntries(fragment)).toEqual({ error: "access_denied", error_description: "The user denied the request", state: "the-state", iss: ISSUER });
  });

  it("an expired request is not approved", async () => {
    const pending = await manager.load(CLIENT_ID, pushed(), BROWSER);
    clock += 5 * MINUTE;
    expect(await pageError(() => manager.approve(pending, "did:plc:alice"))).toBe("request_expired");
    expect(grants.codes.size).toBe(0);
  });
});

describe("ways back (docs/decisions/0020)", () => {
  async function returned(promise: Promise<unknown> | (() => unknown)): Promise<{ code: string; location: URL }> {
    try {
      await (typeof promise === "function" ? promise() : promise);
    } catch (error) {
      if (error instanceof AuthorizationReturnError) return { code: error.code, location: new URL(error.location) };
      throw error;
    }
    throw new Error("expected a way back to the app");
  }

  it("an expired request sends the browser it was shown to back with access_denied, state and iss, in the request's response_mode", async () => {
    const requestUri = pushed({ response_mode: "fragment", state: "s-expired" });
    await manager.load(CLIENT_ID, requestUri, BROWSER);
    clock += 5 * MINUTE;
    const { code, location } = await returned(manager.load(CLIENT_ID, requestUri, BROWSER));
    expect(code).toBe("request_expired");
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.search).toBe("");
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get("error")).toBe("access_denied");
    expect(fragment.get("state")).toBe("s-expired");
    expect(fragment.get("iss")).toBe(ISSUER);
    expect(fragment.get("code")).toBeNull();
  });

  it("an answered request goes back without a code, and cannot be answered again", async () => {
    const requestUri = pushed();
    const pending = await manager.load(CLIENT_ID, requestUri, BROWSER);
    await manager.approve(pending, "did:plc:alice");
    const { code, location } = await returned(manager.load(CLIENT_ID, requestUri, BROWSER));
    expect(code).toBe("request_answered");
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("the-state");
    expect(location.searchParams.get("code")).toBeNull();
    expect((await returned(() => manager.approve(pending, "did:plc:bob"))).location.searchParams.get("code")).toBeNull();
    expect(grants.codes.size).toBe(1);
  });

  it("an ended request opened with another client_id goes back like any other: the way back is the pushing app's; past the grace period the link is unknown", async () => {
    const requestUri = pushed();
    await manager.load(CLIENT_ID, requestUri, BROWSER);
    clock += 5 * MINUTE;
    const back = await returned(manager.load("http://localhost?scope=atproto", requestUri, BROWSER));
    expect(back.code).toBe("request_expired");
    expect(`${back.location.origin}${back.location.pathname}`).toBe(REDIRECT);
    clock += 24 * HOUR;
    expect(await pageError(manager.load(CLIENT_ID, requestUri, BROWSER))).toBe("request_expired");
    expect(requests.rows.size).toBe(0);
  });

  it("a live request opened with another client_id is ended: the browser it was shown to goes back to the pushing app with access_denied, state and iss; any other gets the page", async () => {
    const requestUri = pushed({ state: "s-other-client" });
    await manager.load(CLIENT_ID, requestUri, BROWSER);
    const mine = (await manager.load("http://localhost?scope=atproto", requestUri, BROWSER).catch((thrown: unknown) => thrown)) as AuthorizationReturnError;
    expect(mine).toBeInstanceOf(AuthorizationReturnError);
    expect({ automatic: mine.automatic, code: mine.code, host: mine.host }).toEqual({ automatic: true, code: "request_invalid", host: "127.0.0.1:4000" });
    const location = new URL(mine.location);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(Object.fromEntries(location.searchParams)).toEqual({
      error: "access_denied",
      error_description: "This authorization request was opened with another client_id",
      state: "s-other-client",
      iss: ISSUER,
    });
    // Ended: its own client_id now goes back too, without a code; another browser reads the page naming the host.
    expect((await returned(manager.load(CLIENT_ID, requestUri, BROWSER))).code).toBe("request_answered");
    const other = (await manager.load(CLIENT_ID, requestUri, "browser-b").catch((thrown: unknown) => thrown)) as AuthorizationReturnError;
    expect(other.automatic).toBe(false);
  });

  it("a live request never shown, opened with another client_id: ended, and the page with the button, never a redirect", async () => {
    for (const browser of [BROWSER, undefined]) {
      const requestUri = pushed();
      const error = (await manager.load("http://localhost?scope=atproto", requestUri, browser).catch((thrown: unknown) => thrown)) as AuthorizationReturnError;
      expect(error).toBeInstanceOf(AuthorizationReturnError);
      expect({ automatic: error.automatic, messageKey: error.messageKey }).toEqual({ automatic: false, messageKey: "errors:authorize.otherClient.message" });
      expect(new URL(error.location).searchParams.get("error")).toBe("access_denied");
      // Ended; a request never shown keeps nothing, so the link is unknown from now on.
      expect(await pageError(manager.load(CLIENT_ID, requestUri, browser))).toBe("request_expired");
    }
  });

  it("any other browser gets a page naming the app's host, with the way back as a link, never a redirect (RFC 9700 §4.11.2)", async () => {
    const requestUri = pushed();
    const pending = await manager.load(CLIENT_ID, requestUri, BROWSER);
    await manager.reject(pending, "access_denied", "no");
    for (const browser of ["browser-b", undefined]) {
      const error = await manager.load(CLIENT_ID, requestUri, browser).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(AuthorizationReturnError);
      const other = error as AuthorizationReturnError;
      expect({ automatic: other.automatic, host: other.host, messageKey: other.messageKey }).toEqual({ automatic: false, host: "127.0.0.1:4000", messageKey: "errors:authorize.otherBrowser.message" });
      expect(new URL(other.location).searchParams.get("error")).toBe("access_denied");
    }
    expect((await returned(manager.load(CLIENT_ID, requestUri, BROWSER))).code).toBe("request_answered");
  });

  it("a request whose screen was never shown keeps nothing once expired: the link is unknown", async () => {
    const requestUri = pushed();
    clock += 5 * MINUTE;
    expect(await pageError(manager.load(CLIENT_ID, requestUri, BROWSER))).toBe("request_expired");
    expect(requests.rows.size).toBe(0);
  });

  it("a state longer than a way back keeps gets no way back: once expired, the link is unknown", async () => {
    const requestUri = pushed({ state: "s".repeat(WAY_BACK_MAX_STATE + 1) });
    await manager.load(CLIENT_ID, requestUri, BROWSER);
    clock += 5 * MINUTE;
    expect(await pageError(manager.load(CLIENT_ID, requestUri, BROWSER))).toBe("request_expired");
  });

  it("a native app's private-use scheme, which has no host, names the app by its scheme", async () => {
    const requestUri = pushed({ redirect_uri: "com.example.app:/callback" });
    const pending = await manager.load(CLIENT_ID, requestUri, BROWSER);
    await manager.reject(pending, "access_denied", "no");
    const other = (await manager.load(CLIENT_ID, requestUri, "browser-b").catch((thrown: unknown) => thrown)) as AuthorizationReturnError;
    expect({ automatic: other.automatic, host: other.host }).toEqual({ automatic: false, host: "com.example.app" });
    expect(other.location.startsWith("com.example.app:/callback?error=access_denied&")).toBe(true);
  });
});
