import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { startServiceStandIn, type ServiceStandIn, type StandInCall } from "../helpers/service-stand-in.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { accountPublicKey, missingPermission, scopedSession, type ScopedSession, type XrpcErrorBody } from "../helpers/xrpc-extra.ts";

/**
 * Service auth (com.atproto.server.getServiceAuth) and service proxying (atproto-proxy: <did>#<service>),
 * docs/architecture.md, "Scopes and the data server": rpc:<lxm>?aud=<aud>; docs/decisions/0048. The services are
 * stand-ins on loopback (tests/helpers/service-stand-in.ts) with did:plc identities at the run's PLC directory,
 * which verify every service token as the reference's verifyJwt does; no proxy map is configured for them, so each
 * call reaches the service its DID document names. One (chat) is pinned by ATRIUM_PROXY_SERVICES, the override.
 */

const PLC_DIRECTORY = inject("plcDirectoryUrl");
/** Pinned to the chat stand-in by ATRIUM_PROXY_SERVICES: its DID resolves nowhere here. */
const CHAT_SERVICE = "did:web:api.bsky.chat#bsky_chat";

let server: TestServer;
/** A service named in atproto-proxy headers: `<did>#svc`. */
let upstream: ServiceStandIn;
let UPSTREAM_DID: string;
let UPSTREAM_SERVICE: string;
/** The app view (ATRIUM_APPVIEW): `<did>#bsky_appview`. */
let appview: ServiceStandIn;
let APPVIEW_SERVICE: string;
let chat: ServiceStandIn;
let alice: { did: string; handle: string };
let aliceKey: CryptoKey | Uint8Array | undefined;
const sessions: Record<string, ScopedSession> = {};

beforeAll(async () => {
  [upstream, appview, chat] = await Promise.all([
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: { svc: "ExampleService" } }),
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: { bsky_appview: "BskyAppView" } }),
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: {}, audience: "did:web:api.bsky.chat" }),
  ]);
  UPSTREAM_DID = upstream.did;
  UPSTREAM_SERVICE = `${UPSTREAM_DID}#svc`;
  APPVIEW_SERVICE = `${appview.did}#bsky_appview`;
  server = await startTestServer({ ATRIUM_APPVIEW: APPVIEW_SERVICE, ATRIUM_PROXY_SERVICES: JSON.stringify({ [CHAT_SERVICE]: chat.url }) });
  alice = await createAlice(server);
  aliceKey = await accountPublicKey(alice.did);
  const wanted: Record<string, string> = {
    fooGet: `atproto rpc:com.example.foo.get?aud=${UPSTREAM_DID}%23svc rpc:com.example.foo.set?aud=${UPSTREAM_DID}%23svc`,
    otherService: `atproto rpc:com.example.foo.get?aud=${UPSTREAM_DID}%23other`,
    generic: "atproto transition:generic",
    chat: "atproto transition:chat.bsky",
    bare: "atproto",
    bareDidAud: `atproto rpc:com.example.foo.bar?aud=${UPSTREAM_DID}`,
    serviceAuth: `atproto rpc:com.example.foo.bar?aud=${UPSTREAM_DID}%23svc rpc:com.example.foo.qux?aud=*`,
    serviceAuthAny: `atproto rpc:*?aud=${UPSTREAM_DID}%23svc`,
  };
  // One sign-in at a time, as one person signs in (simultaneous ones beyond the free attempts wait: docs/decisions/0009).
  for (const [name, scope] of Object.entries(wanted)) sessions[name] = await scopedSession(server, scope);
});
afterAll(async () => {
  await server?.stop();
  await Promise.all([upstream?.close(), appview?.close(), chat?.close()]);
});

function expectInsufficientScope(result: { status: number; body: unknown; headers: Headers }, scope: string) {
  expect(result.status).toBe(403);
  expect(result.body).toMatchObject({ error: "InsufficientScope", message: missingPermission(scope) });
  expect(result.headers.get("www-authenticate")).toMatch(/^DPoP error="insufficient_scope"/);
}

/** Runs `step` and returns the calls it caused at every stand-in. */
async function upstreamCallsDuring<T>(step: () => Promise<T>): Promise<{ result: T; seen: StandInCall[] }> {
  const standIns = [upstream, appview, chat];
  const before = standIns.map((standIn) => standIn.calls.length);
  const result = await step();
  return { result, seen: standIns.flatMap((standIn, index) => standIn.calls.slice(before[index])) };
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

describe("com.atproto.server.getServiceAuth", () => {
  async function serviceAuth(session: ScopedSession, params: Record<string, string>) {
    return session.client.xrpc<{ token: string } & XrpcErrorBody>(session.accessToken, "com.atproto.server.getServiceAuth", { params });
  }

  it("an rpc: scope whose aud is a bare DID is not a valid scope value and is dropped at PAR", () => {
    // @atproto/oauth-scopes requires aud to be did#service (or *); unknown scope values are dropped (docs/architecture.md, "Scopes and the data server").
    expect(sessions.bareDidAud!.tokens.scope).toBe("atproto");
    expect(sessions.serviceAuth!.tokens.scope.split(" ").sort()).toEqual(
      ["atproto", `rpc:com.example.foo.bar?aud=${UPSTREAM_DID}%23svc`, "rpc:com.example.foo.qux?aud=*"].sort(),
    );
    expect(sessions.serviceAuthAny!.tokens.scope).toBe(`atproto rpc:*?aud=${UPSTREAM_DID}%23svc`);
  });

  it("returns a JWT signed with the account key for rpc:<lxm>?aud=<aud>", async () => {
    const result = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.bar" });
    expect(result.status).toBe(200);
    expect(Object.keys(result.body)).toEqual(["token"]);
    const { payload, protectedHeader } = await jwtVerify(result.body.token, aliceKey!, { algorithms: ["ES256"] });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.iss).toBe(alice.did);
    expect(payload.aud).toBe(UPSTREAM_SERVICE);
    expect(payload.lxm).toBe("com.example.foo.bar");
    expect(typeof payload.jti).toBe("string");
    // Default lifetime: a minute.
    expect(payload.exp!).toBeGreaterThan(nowSeconds() + 30);
    expect(payload.exp!).toBeLessThanOrEqual(nowSeconds() + 61);
    expect(payload.iat!).toBeGreaterThanOrEqual(nowSeconds() - 5);
  });

  it("a bare-DID aud (the usual getServiceAuth form) is covered by rpc:<lxm>?aud=*", async () => {
    const result = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_DID, lxm: "com.example.foo.qux" });
    expect(result.status).toBe(200);
    const { payload } = await jwtVerify(result.body.token, aliceKey!, { issuer: alice.did, audience: UPSTREAM_DID });
    expect(payload.lxm).toBe("com.example.foo.qux");
  });

  it("honours an exp up to an hour away", async () => {
    const exp = nowSeconds() + 30 * 60;
    const result = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.bar", exp: String(exp) });
    expect(result.status).toBe(200);
    const { payload } = await jwtVerify(result.body.token, aliceKey!, { issuer: alice.did, audience: UPSTREAM_SERVICE });
    expect(payload.exp).toBe(exp);
  });

  it("refuses exp two hours away with 400 BadExpiration", async () => {
    const result = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.bar", exp: String(nowSeconds() + 2 * 3600) });
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("BadExpiration");
    expect(result.body.token).toBeUndefined();
  });

  it("refuses an exp in the past with 400 BadExpiration", async () => {
    const result = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.bar", exp: String(nowSeconds() - 10) });
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("BadExpiration");
  });

  it("refuses another method or audience than the permission names", async () => {
    expectInsufficientScope(
      await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.baz" }),
      `rpc:com.example.foo.baz?aud=${UPSTREAM_DID}%23svc`,
    );
    expectInsufficientScope(
      await serviceAuth(sessions.serviceAuth!, { aud: `${UPSTREAM_DID}#other`, lxm: "com.example.foo.bar" }),
      `rpc:com.example.foo.bar?aud=${UPSTREAM_DID}%23other`,
    );
    const bareDid = await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_DID, lxm: "com.example.foo.bar" });
    expect(bareDid.status).toBe(403);
    expect(bareDid.body.error).toBe("InsufficientScope");
  });

  it("refuses a token without any rpc permission (403)", async () => {
    expectInsufficientScope(
      await serviceAuth(sessions.bare!, { aud: UPSTREAM_SERVICE, lxm: "com.example.foo.bar" }),
      `rpc:com.example.foo.bar?aud=${UPSTREAM_DID}%23svc`,
    );
    const dropped = await serviceAuth(sessions.bareDidAud!, { aud: UPSTREAM_DID, lxm: "com.example.foo.bar" });
    expect(dropped.status).toBe(403);
  });

  it("without lxm, needs rpc:*?aud=<aud>", async () => {
    expectInsufficientScope(await serviceAuth(sessions.serviceAuth!, { aud: UPSTREAM_SERVICE }), `rpc:*?aud=${UPSTREAM_DID}%23svc`);
    const result = await serviceAuth(sessions.serviceAuthAny!, { aud: UPSTREAM_SERVICE });
    expect(result.status).toBe(200);
    const { payload } = await jwtVerify(result.body.token, aliceKey!, { issuer: alice.did, audience: UPSTREAM_SERVICE });
    expect(payload.lxm).toBeUndefined();
    expect(payload.exp!).toBeLessThanOrEqual(nowSeconds() + 61);
  });

  it("without lxm, exp is bounded to a minute", async () => {
    const result = await serviceAuth(sessions.serviceAuthAny!, { aud: UPSTREAM_SERVICE, exp: String(nowSeconds() + 5 * 60) });
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("BadExpiration");
  });

  it("rpc:*?aud=<aud> also covers a named method", async () => {
    const result = await serviceAuth(sessions.serviceAuthAny!, { aud: UPSTREAM_SERVICE, lxm: "com.example.anything.at.all" });
    expect(result.status).toBe(200);
    const { payload } = await jwtVerify(result.body.token, aliceKey!, { issuer: alice.did, audience: UPSTREAM_SERVICE });
    expect(payload.lxm).toBe("com.example.anything.at.all");
  });

  it("transition:generic covers service auth except chat.bsky.*", async () => {
    const ok = await serviceAuth(sessions.generic!, { aud: "did:web:api.bsky.app", lxm: "app.bsky.feed.getTimeline" });
    expect(ok.status).toBe(200);
    const { payload } = await jwtVerify(ok.body.token, aliceKey!, { issuer: alice.did });
    expect(payload.aud).toBe("did:web:api.bsky.app");
    expectInsufficientScope(
      await serviceAuth(sessions.generic!, { aud: "did:web:api.bsky.chat#bsky_chat", lxm: "chat.bsky.convo.listConvos" }),
      "rpc:chat.bsky.convo.listConvos?aud=did:web:api.bsky.chat%23bsky_chat",
    );
  });

  it("an NSID's authority is case-insensitive: CHAT.BSKY.… and COM.ATPROTO.… are refused like their lower-case forms", async () => {
    const variants = ["CHAT.BSKY.convo.sendMessage", "Chat.Bsky.convo.sendMessage", "chat.BSKY.convo.sendMessage"];
    const chat = await Promise.all(variants.map((lxm) => serviceAuth(sessions.generic!, { aud: "did:web:api.bsky.chat#bsky_chat", lxm })));
    for (const result of chat) expectInsufficientScope(result, "rpc:chat.bsky.convo.sendMessage?aud=did:web:api.bsky.chat%23bsky_chat");
    const protectedVariants = ["COM.ATPROTO.server.createAppPassword", "Com.Atproto.Server.createAppPassword", "com.atproto.SERVER.deleteAccount"];
    const refused = await Promise.all(protectedVariants.map((lxm) => serviceAuth(sessions.generic!, { aud: "did:web:example.com", lxm })));
    for (const result of refused) expect({ status: result.status, error: result.body.error, token: result.body.token }).toEqual({ status: 400, error: "InvalidRequest", token: undefined });
    // A token minted for an allowed method names it in its one canonical spelling.
    const allowed = await serviceAuth(sessions.generic!, { aud: "did:web:api.bsky.app", lxm: "APP.BSKY.feed.getTimeline" });
    expect(allowed.status).toBe(200);
    const { payload } = await jwtVerify(allowed.body.token, aliceKey!, { issuer: alice.did });
    expect(payload.lxm).toBe("app.bsky.feed.getTimeline");
  });

  it("rejects a malformed aud or lxm with 400", async () => {
    const badAud = await serviceAuth(sessions.generic!, { aud: "https://upstream.test", lxm: "com.example.foo.bar" });
    expect(badAud.status).toBe(400);
    const badLxm = await serviceAuth(sessions.generic!, { aud: UPSTREAM_DID, lxm: "not an nsid" });
    expect(badLxm.status).toBe(400);
  });
});

describe("service proxying (atproto-proxy)", () => {
  it("forwards a query with a valid service JWT and passes the answer back", async () => {
    const { client, accessToken } = sessions.fooGet!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "com.example.foo.get", { params: { q: "hello", limit: "3" }, headers: { "atproto-proxy": UPSTREAM_SERVICE } }),
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ ok: true, method: "com.example.foo.get", query: { q: "hello", limit: "3" } });
    expect(result.headers.get("atproto-repo-rev")).toBe("3l5q5s2qzbk2a");
    expect(result.headers.get("x-secret-upstream")).toBeNull();
    expect(seen).toHaveLength(1);
    const call = seen[0]!;
    expect(call.failure).toBeUndefined();
    expect(call.method).toBe("GET");
    expect(call.token!.header.alg).toBe("ES256");
    expect(call.token!.payload).toMatchObject({ iss: alice.did, aud: UPSTREAM_DID, lxm: "com.example.foo.get" });
    // A minute's lifetime (atproto service auth: short-lived).
    expect(call.token!.payload.exp - call.token!.payload.iat!).toBe(60);
    expect(call.token!.payload.exp).toBeGreaterThan(nowSeconds());
  });

  it("forwards a procedure's JSON body", async () => {
    const { client, accessToken } = sessions.fooGet!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "com.example.foo.set", { json: { value: 42, name: "x" }, headers: { "atproto-proxy": UPSTREAM_SERVICE } }),
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ ok: true, method: "com.example.foo.set", query: {}, body: { value: 42, name: "x" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe("POST");
    expect(seen[0]!.headers["content-type"]).toBe("application/json");
    expect(seen[0]!.token!.payload).toMatchObject({ iss: alice.did, aud: UPSTREAM_DID, lxm: "com.example.foo.set" });
  });

  it("without the rpc permission: 403 and the upstream is not called", async () => {
    for (const name of ["bare", "otherService", "bareDidAud", "serviceAuth"]) {
      const { client, accessToken } = sessions[name]!;
      const { result, seen } = await upstreamCallsDuring(() =>
        client.xrpc(accessToken, "com.example.foo.get", { headers: { "atproto-proxy": UPSTREAM_SERVICE } }),
      );
      expectInsufficientScope(result, `rpc:com.example.foo.get?aud=${UPSTREAM_DID}%23svc`);
      expect(seen, name).toHaveLength(0);
    }
  });

  it("the permission names one method: another is refused", async () => {
    const { client, accessToken } = sessions.fooGet!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "com.example.foo.delete", { json: {}, headers: { "atproto-proxy": UPSTREAM_SERVICE } }),
    );
    expectInsufficientScope(result, `rpc:com.example.foo.delete?aud=${UPSTREAM_DID}%23svc`);
    expect(seen).toHaveLength(0);
  });

  it("without a token: 401 and the upstream is not called", async () => {
    const { seen, result } = await upstreamCallsDuring(() =>
      fetch(`${server.issuer}/xrpc/com.example.foo.get`, { headers: { "atproto-proxy": UPSTREAM_SERVICE } }),
    );
    expect(result.status).toBe(401);
    expect(seen).toHaveLength(0);
  });

  it("chat.bsky.*: transition:generic alone is refused", async () => {
    const { client, accessToken } = sessions.generic!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "chat.bsky.convo.listConvos", { headers: { "atproto-proxy": "did:web:api.bsky.chat#bsky_chat" } }),
    );
    expectInsufficientScope(result, "rpc:chat.bsky.convo.listConvos?aud=did:web:api.bsky.chat%23bsky_chat");
    expect(seen).toHaveLength(0);
  });

  it("chat.bsky.* in any case of its authority (/xrpc/CHAT.BSKY.…) is refused to transition:generic and never reaches the upstream", async () => {
    const { client, accessToken } = sessions.generic!;
    const paths = ["CHAT.BSKY.convo.listConvos", "Chat.Bsky.convo.listConvos", "chat.BSKY.convo.listConvos"];
    const { result, seen } = await upstreamCallsDuring(() =>
      Promise.all(paths.map((nsid) => client.xrpc(accessToken, nsid, { headers: { "atproto-proxy": "did:web:api.bsky.chat#bsky_chat" } }))),
    );
    for (const refused of result) expectInsufficientScope(refused, "rpc:chat.bsky.convo.listConvos?aud=did:web:api.bsky.chat%23bsky_chat");
    expect(seen).toHaveLength(0);
  });

  it("a proxied call in a non-canonical spelling goes upstream as the canonical method", async () => {
    const { client, accessToken } = sessions.chat!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "CHAT.BSKY.convo.listConvos", { headers: { "atproto-proxy": "did:web:api.bsky.chat#bsky_chat" } }),
    );
    expect(result.status).toBe(200);
    expect(seen[0]!.token!.payload).toMatchObject({ lxm: "chat.bsky.convo.listConvos" });
    expect(result.body).toMatchObject({ method: "chat.bsky.convo.listConvos" });
  });

  it("chat.bsky.*: transition:chat.bsky is allowed", async () => {
    const { client, accessToken } = sessions.chat!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc(accessToken, "chat.bsky.convo.listConvos", {
        params: { limit: "10" },
        headers: { "atproto-proxy": "did:web:api.bsky.chat#bsky_chat" },
      }),
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ ok: true, method: "chat.bsky.convo.listConvos", query: { limit: "10" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.failure).toBeUndefined();
    expect(seen[0]!.token!.payload).toMatchObject({ iss: alice.did, aud: "did:web:api.bsky.chat", lxm: "chat.bsky.convo.listConvos" });
  });

  it("transition:chat.bsky does not cover non-chat calls", async () => {
    const { client, accessToken } = sessions.chat!;
    const { result, seen } = await upstreamCallsDuring(() => client.xrpc(accessToken, "app.bsky.feed.getTimeline"));
    expectInsufficientScope(result, `rpc:app.bsky.feed.getTimeline?aud=${appview.did}%23bsky_appview`);
    expect(seen).toHaveLength(0);
  });

  it("app.bsky.* without the header goes to the app view (transition:generic)", async () => {
    const { client, accessToken } = sessions.generic!;
    const { result, seen } = await upstreamCallsDuring(() => client.xrpc(accessToken, "app.bsky.feed.getTimeline", { params: { limit: "5" } }));
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ ok: true, method: "app.bsky.feed.getTimeline", query: { limit: "5" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.failure).toBeUndefined();
    expect(seen[0]!.token!.payload).toMatchObject({ iss: alice.did, aud: appview.did, lxm: "app.bsky.feed.getTimeline" });
  });

  it("a DID whose document lacks the service is a 400 naming it, and nothing is called", async () => {
    const { client, accessToken } = sessions.generic!;
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc<XrpcErrorBody>(accessToken, "com.example.foo.get", { headers: { "atproto-proxy": `${UPSTREAM_DID}#nope` } }),
    );
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("InvalidRequest");
    expect(result.body.message).toBe(`The DID document of ${UPSTREAM_DID} names no service #nope`);
    expect(seen).toHaveLength(0);
  });

  it("a DID that does not resolve (unknown to the PLC directory) is a 400, and nothing is called", async () => {
    const { client, accessToken } = sessions.generic!;
    const unknown = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    const { result, seen } = await upstreamCallsDuring(() =>
      client.xrpc<XrpcErrorBody>(accessToken, "com.example.foo.get", { headers: { "atproto-proxy": `${unknown}#svc` } }),
    );
    expect(result.status).toBe(400);
    expect(result.body.error).toBe("InvalidRequest");
    expect(result.body.message).toContain(`Could not resolve the service ${unknown}#svc`);
    expect(seen).toHaveLength(0);
  });

  it.each(["did:web:upstream.test", "upstream.test#svc", "did:web:upstream.test#", "#svc", "did:web:a#b#c", "did:web:a b#c", "not a did at all"])(
    "a malformed atproto-proxy header (%s) is a 400",
    async (header) => {
      const { client, accessToken } = sessions.generic!;
      const { result, seen } = await upstreamCallsDuring(() =>
        client.xrpc<XrpcErrorBody>(accessToken, "com.example.foo.get", { headers: { "atproto-proxy": header } }),
      );
      expect(result.status).toBe(400);
      expect(result.body.error).toBe("InvalidRequest");
      expect(result.body.message).toMatch(/atproto-proxy/);
      expect(seen).toHaveLength(0);
    },
  );

  it("a non-app.bsky method without the header is not implemented (501), not proxied", async () => {
    const { client, accessToken } = sessions.generic!;
    const { result, seen } = await upstreamCallsDuring(() => client.xrpc<XrpcErrorBody>(accessToken, "com.example.foo.get"));
    expect(result.status).toBe(501);
    expect(result.body.error).toBe("MethodNotImplemented");
    expect(seen).toHaveLength(0);
  });
});
