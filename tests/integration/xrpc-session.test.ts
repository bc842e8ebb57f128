/**
 * The data server's session, identity and account-management endpoints, and
 * how /xrpc treats the token itself (docs/architecture.md, "DPoP" and "Scopes and the data server"): missing, Bearer,
 * nonce, revoked, expired, CORS, unknown methods.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { createDpopProof, sha256Base64url } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { ALICE, createAlice, generateDpopKey, rawGet } from "../helpers/flow.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  call,
  callAnonymous,
  callRaw,
  expectInsufficientScope,
  expectTokenChallenge,
  expectXrpcError,
  tokensForScopes,
  type ScopedToken,
  type XrpcErrorBody,
} from "../helpers/xrpc.ts";

type Session = { did: string; handle: string; active: boolean; email?: string; emailConfirmed?: boolean; emailAuthFactor?: boolean };

const GET_SESSION = "com.atproto.server.getSession";

let server: TestServer;
let alice: { did: string; handle: string };
let bob: { did: string; handle: string };
const t = {} as Record<"atproto" | "accountEmail" | "transitionEmail" | "identityHandle" | "generic" | "toRevoke" | "toExpire", ScopedToken>;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  bob = await createAccount(server, { handle: "bob.test", email: "bob@example.com", password: "another horse battery" });
  const scopes = {
    atproto: "atproto",
    accountEmail: "atproto account:email",
    transitionEmail: "atproto transition:email",
    identityHandle: "atproto identity:handle",
    generic: "atproto transition:generic",
    toRevoke: "atproto transition:generic",
    toExpire: "atproto",
  } as const;
  Object.assign(t, await tokensForScopes(server, scopes));
});
afterAll(() => server?.stop());

const xrpcUrl = (nsid: string) => `${server.issuer}/xrpc/${nsid}`;
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);

async function resolveHandle(handle: string) {
  return callAnonymous<{ did: string } & XrpcErrorBody>(server, "com.atproto.identity.resolveHandle", { params: { handle } });
}

describe("com.atproto.server.getSession", () => {
  it("an atproto-only token gets did, handle and active, and no email", async () => {
    const result = await call<Session>(t.atproto, GET_SESSION);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ did: alice.did, handle: ALICE.handle, active: true });
    expect(result.body).not.toHaveProperty("email");
    expect(result.body).not.toHaveProperty("emailConfirmed");
  });

  it("transition:generic does not reveal the email either (it excludes account:)", async () => {
    const result = await call<Session>(t.generic, GET_SESSION);
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ did: alice.did, handle: ALICE.handle, active: true });
  });

  it("account:email and transition:email add email, emailConfirmed and emailAuthFactor", async () => {
    for (const token of [t.accountEmail, t.transitionEmail]) {
      const result = await call<Session>(token, GET_SESSION);
      expect(result.status).toBe(200);
      expect(result.body).toEqual({ did: alice.did, handle: ALICE.handle, active: true, email: ALICE.email, emailConfirmed: false, emailAuthFactor: false });
    }
  });
});

describe("an atproto-only token can do nothing but read its session", () => {
  it("createRecord is refused", async () => {
    const result = await call(t.atproto, "com.atproto.repo.createRecord", {
      json: { repo: alice.did, collection: "app.bsky.feed.post", rkey: "atproto-only", record: { text: "x", createdAt: new Date().toISOString() } },
    });
    expectInsufficientScope(result, "repo:app.bsky.feed.post?action=create");
    const stored = await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.did, collection: "app.bsky.feed.post", rkey: "atproto-only" } });
    expectXrpcError(stored, 400, "RecordNotFound");
  });

  it("uploadBlob is refused", async () => {
    const result = await callRaw(t.atproto, "POST", "com.atproto.repo.uploadBlob", { body: PNG, headers: { "Content-Type": "image/png" } });
    expectInsufficientScope(result, "blob:image/png");
    expect(await rowOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Blob"`)).toEqual({ n: 0 });
  });

  it("updateHandle is refused and the handle is unchanged", async () => {
    const result = await call(t.atproto, "com.atproto.identity.updateHandle", { json: { handle: "hijacked.test" } });
    expectInsufficientScope(result, "identity:handle");
    expectXrpcError(await resolveHandle("hijacked.test"), 400, "InvalidRequest");
    expect((await resolveHandle(ALICE.handle)).body.did).toBe(alice.did);
  });

  it("getPreferences and putPreferences are refused", async () => {
    expectInsufficientScope(await call(t.atproto, "app.bsky.actor.getPreferences"), "rpc:app.bsky.actor.getPreferences");
    expectInsufficientScope(await call(t.atproto, "app.bsky.actor.putPreferences", { json: { preferences: [] } }), "rpc:app.bsky.actor.putPreferences");
  });

  it("getServiceAuth is refused", async () => {
    const result = await call(t.atproto, "com.atproto.server.getServiceAuth", { params: { aud: "did:web:example.com", lxm: "app.bsky.feed.getTimeline" } });
    expectInsufficientScope(result, "rpc:app.bsky.feed.getTimeline");
  });

  it("the same calls succeed with transition:generic (control)", async () => {
    expect((await call(t.generic, "app.bsky.actor.getPreferences")).status).toBe(200);
    const blob = await callRaw<{ blob: { mimeType: string; size: number } }>(t.generic, "POST", "com.atproto.repo.uploadBlob", {
      body: PNG,
      headers: { "Content-Type": "image/png" },
    });
    expect(blob.status).toBe(200);
    expect(blob.body.blob).toMatchObject({ mimeType: "image/png", size: PNG.byteLength });
    expect(blob.headers.get("DPoP-Nonce")).toBeTruthy();
  });
});

describe("token failures on /xrpc", () => {
  it("no Authorization header: 401, DPoP invalid_token challenge, XRPC body", async () => {
    const result = await callAnonymous(server, GET_SESSION);
    expectTokenChallenge(result, "invalid_token", "InvalidToken");
  });

  it("the Bearer scheme is refused (401), even with a valid DPoP proof", async () => {
    const token = t.generic.accessToken;
    const bare = await rawGet(xrpcUrl(GET_SESSION), { Authorization: `Bearer ${token}` });
    expectTokenChallenge(bare, "invalid_token", "InvalidToken");

    const proof = await createDpopProof(t.generic.client.key, { method: "GET", url: xrpcUrl(GET_SESSION), nonce: t.generic.client.nonce, accessToken: token });
    const withProof = await rawGet(xrpcUrl(GET_SESSION), { Authorization: `Bearer ${token}`, DPoP: proof });
    expectTokenChallenge(withProof, "invalid_token", "InvalidToken");
  });

  it("a proof without a nonce: 401 use_dpop_nonce with a DPoP-Nonce header; the retry with it succeeds", async () => {
    const { client, accessToken } = t.generic;
    const url = xrpcUrl(GET_SESSION);
    const first = await rawGet(url, { Authorization: `DPoP ${accessToken}`, DPoP: await createDpopProof(client.key, { method: "GET", url, accessToken }) });
    expectTokenChallenge(first, "use_dpop_nonce", "UseDpopNonce");
    const nonce = first.headers.get("DPoP-Nonce");
    expect(nonce).toBeTruthy();

    const retry = await rawGet<Session>(url, { Authorization: `DPoP ${accessToken}`, DPoP: await createDpopProof(client.key, { method: "GET", url, accessToken, nonce: nonce! }) });
    expect(retry.status).toBe(200);
    expect(retry.body.did).toBe(alice.did);
  });

  it("a proof signed by another key than the token's is refused (401)", async () => {
    const { client, accessToken } = t.generic;
    const url = xrpcUrl(GET_SESSION);
    const proof = await createDpopProof(await generateDpopKey(), { method: "GET", url, accessToken, nonce: client.nonce });
    const result = await rawGet(url, { Authorization: `DPoP ${accessToken}`, DPoP: proof });
    expect(result.status).toBe(401);
    expect(result.headers.get("WWW-Authenticate") ?? "").toMatch(/^DPoP error="(invalid_token|invalid_dpop_proof)"/);
  });

  it("a DPoP-authenticated success carries DPoP-Nonce and no WWW-Authenticate", async () => {
    const result = await call(t.generic, GET_SESSION);
    expect(result.status).toBe(200);
    expect(result.headers.get("DPoP-Nonce")).toBeTruthy();
    expect(result.headers.get("WWW-Authenticate")).toBeNull();
  });

  it("a revoked token is refused on the very next request", async () => {
    const token = t.toRevoke;
    expect((await call(token, GET_SESSION)).status).toBe(200);
    const revoked = await token.client.revoke(token.accessToken);
    expect(revoked.status).toBe(200);
    const result = await call(token, GET_SESSION);
    expectTokenChallenge(result, "invalid_token", "InvalidToken");
  });

  it("an expired access token is refused (401 invalid_token)", async () => {
    const token = t.toExpire;
    expect((await call(token, GET_SESSION)).status).toBe(200);
    const changed = await execute(server.database(), sql`UPDATE "AccessToken" SET "expiresAt" = ${at(Date.now() - 60_000)} WHERE "tokenHash" = ${sha256Base64url(token.accessToken)}`);
    expect(changed).toBe(1);
    const result = await call(token, GET_SESSION);
    expectTokenChallenge(result, "invalid_token", "InvalidToken");
  });

  it("a garbage access token is refused (401 invalid_token)", async () => {
    const forged: ScopedToken = { ...t.generic, accessToken: "not-a-real-token" };
    expectTokenChallenge(await call(forged, GET_SESSION), "invalid_token", "InvalidToken");
  });
});

describe("CORS on /xrpc", () => {
  it("responses carry Access-Control-Allow-Origin: * (success, public, and refusal)", async () => {
    const success = await call(t.generic, GET_SESSION);
    expect(success.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const exposed = (success.headers.get("Access-Control-Expose-Headers") ?? "").toLowerCase();
    expect(exposed).toContain("dpop-nonce");
    expect(exposed).toContain("www-authenticate");

    const pub = await callAnonymous(server, "com.atproto.identity.resolveHandle", { params: { handle: ALICE.handle }, headers: { Origin: "https://app.example" } });
    expect(pub.status).toBe(200);
    expect(pub.headers.get("Access-Control-Allow-Origin")).toBe("*");

    const refused = await callAnonymous(server, GET_SESSION, { headers: { Origin: "https://app.example" } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("Access-Control-Allow-Origin")).toBe("*");
  });

  it("an OPTIONS preflight allows atproto-proxy, DPoP, Authorization and Content-Type", async () => {
    const response = await fetch(xrpcUrl("app.bsky.feed.getTimeline"), {
      method: "OPTIONS",
      headers: {
        Origin: "https://app.example",
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "atproto-proxy, dpop, authorization, content-type",
      },
    });
    expect(response.status).toBeGreaterThanOrEqual(200);
    expect(response.status).toBeLessThan(300);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const allowed = (response.headers.get("Access-Control-Allow-Headers") ?? "").toLowerCase().split(/\s*,\s*/);
    for (const header of ["atproto-proxy", "dpop", "authorization", "content-type"]) expect(allowed).toContain(header);
    const methods = (response.headers.get("Access-Control-Allow-Methods") ?? "").toUpperCase();
    expect(methods).toContain("GET");
    expect(methods).toContain("POST");
  });
});

describe("com.atproto.identity.updateHandle: identity:handle", () => {
  it("an atproto-only or account:email token is refused naming identity:handle", async () => {
    for (const token of [t.atproto, t.accountEmail]) {
      expectInsufficientScope(await call(token, "com.atproto.identity.updateHandle", { json: { handle: "alice-new.test" } }), "identity:handle");
    }
    expectXrpcError(await resolveHandle("alice-new.test"), 400, "InvalidRequest");
  });

  it("a taken handle is 400 HandleNotAvailable and nothing changes", async () => {
    const result = await call(t.identityHandle, "com.atproto.identity.updateHandle", { json: { handle: bob.handle } });
    expectXrpcError(result, 400, "HandleNotAvailable");
    expect((await resolveHandle(bob.handle)).body.did).toBe(bob.did);
    expect((await resolveHandle(ALICE.handle)).body.did).toBe(alice.did);
  });

  it("a malformed handle or body is 400", async () => {
    for (const json of [{ handle: "not a handle" }, { handle: "-bad-.test" }, { handle: "" }, { handle: 42 }, {}, { handle: `${"a".repeat(300)}.test` }]) {
      const result = await call(t.identityHandle, "com.atproto.identity.updateHandle", { json });
      expect(result.status).toBe(400);
      expect((result.body as XrpcErrorBody).error).toMatch(/^Invalid(Handle|Request)$/);
      expect(typeof (result.body as XrpcErrorBody).message).toBe("string");
    }
    expect((await resolveHandle(ALICE.handle)).body.did).toBe(alice.did);
  });

  it("is allowed with identity:handle: resolveHandle then finds the new handle, and the old one is gone", async () => {
    const result = await call(t.identityHandle, "com.atproto.identity.updateHandle", { json: { handle: "alice-renamed.test" } });
    expect(result.status).toBe(200);
    expect((await resolveHandle("alice-renamed.test")).body.did).toBe(alice.did);
    expectXrpcError(await resolveHandle(ALICE.handle), 400, "InvalidRequest");
    const session = await call<Session>(t.atproto, GET_SESSION);
    expect(session.body.handle).toBe("alice-renamed.test");
  });

  it("is allowed with transition:generic (restores the original handle)", async () => {
    const result = await call(t.generic, "com.atproto.identity.updateHandle", { json: { handle: ALICE.handle } });
    expect(result.status).toBe(200);
    expect((await resolveHandle(ALICE.handle)).body.did).toBe(alice.did);
    expectXrpcError(await resolveHandle("alice-renamed.test"), 400, "InvalidRequest");
  });
});

describe("account management is refused for OAuth tokens, whatever the scope", () => {
  const refused = {
    "com.atproto.server.createAppPassword": { name: "my app" },
    "com.atproto.server.deleteAccount": { did: "", password: ALICE.password, token: "123456" },
    "com.atproto.server.deactivateAccount": {},
    "com.atproto.server.updateEmail": { email: "mallory@example.com" },
  };

  it("createAppPassword, deleteAccount, deactivateAccount, updateEmail: 403 with an explanation, even with transition:generic", async () => {
    for (const token of [t.generic, t.transitionEmail, t.atproto]) {
      for (const [nsid, input] of Object.entries(refused)) {
        const json = nsid.endsWith("deleteAccount") ? { ...input, did: alice.did } : input;
        const result = await call(token, nsid, { json });
        expect(result.status, nsid).toBe(403);
        const body = result.body as XrpcErrorBody;
        expect(typeof body.error).toBe("string");
        expect(body.message).toMatch(/OAuth/);
      }
    }
  });

  it("the same methods in any case of their authority (COM.ATPROTO.server.…) are refused too, all at once", async () => {
    const spellings = ["COM.ATPROTO.server.createAppPassword", "Com.Atproto.Server.createAppPassword", "com.ATPROTO.server.deactivateAccount", "COM.atproto.SERVER.updateEmail"];
    const results = await Promise.all(spellings.map((nsid) => call(t.generic, nsid, { json: { name: "my app", email: "mallory@example.com" } })));
    for (const [i, result] of results.entries()) {
      expect(result.status, spellings[i]).toBe(403);
      expect((result.body as XrpcErrorBody).message).toMatch(/OAuth/);
    }
  });

  it("nothing happened: the account is active with its email", async () => {
    const session = await call<Session>(t.accountEmail, GET_SESSION);
    expect(session.status).toBe(200);
    expect(session.body).toEqual({ did: alice.did, handle: ALICE.handle, active: true, email: ALICE.email, emailConfirmed: false, emailAuthFactor: false });
    const rows = await rowOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Account" WHERE "did" = ${alice.did}`);
    expect(rows).toEqual({ n: 1 });
  });
});

describe("unknown methods", () => {
  it("a method that is not implemented and has no proxy target is 501 MethodNotImplemented", async () => {
    expectXrpcError(await callAnonymous(server, "com.example.nothing.here"), 501, "MethodNotImplemented");
    expectXrpcError(await call(t.generic, "com.example.nothing.here"), 501, "MethodNotImplemented");
    expectXrpcError(await call(t.generic, "com.example.nothing.here", { json: {} }), 501, "MethodNotImplemented");
  });
});
