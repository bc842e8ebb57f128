/**
 * Service proxying against the services themselves (docs/decisions/0048): with no proxy setting, a call reaches the
 * service its DID document names (did:web served by the stand-in, did:plc at the run's PLC directory), the document
 * fetched once and then cached; the default services (app view, report service); getFeed's token for the feed
 * generator; the protected methods, refused with the upstream never called, on both paths (proxy and
 * getServiceAuth); the headers passed each way; upstream failures; methods; the response size cap; and, on a server
 * with the production network rules, DID documents and endpoints on loopback or private addresses refused before any
 * connection. The services are stand-ins on loopback that verify every token as the reference's verifyJwt does
 * (tests/helpers/service-stand-in.ts). What is checked here is decided whatever the database: SQLite only
 * (vitest.config.ts); xrpc-proxy.test.ts and read-after-write.test.ts run on both engines.
 */
import dns from "node:dns/promises";
import os from "node:os";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { xrpcRouteLabel } from "../../app/.server/xrpc/router.ts";
import { createAlice } from "../helpers/flow.ts";
import { registerPlcService, startServiceStandIn, type ServiceStandIn, type StandInCall } from "../helpers/service-stand-in.ts";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callRaw, expectInsufficientScope, expectXrpcError, tokensForScopes, type ScopedToken, type XrpcErrorBody } from "../helpers/xrpc.ts";

const PLC_DIRECTORY = inject("plcDirectoryUrl");
/** The smallest cap the setting allows, so that passing it costs little. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const FEED_GENERATOR = "did:web:feeds.example.com";
const FEED = "at://did:plc:feedownerfeedownerfeedown/app.bsky.feed.generator/cats";

let server: TestServer;
/** The app view: a did:plc. */
let appview: ServiceStandIn;
/** The report service: a did:plc. */
let reports: ServiceStandIn;
/** A service named by atproto-proxy: a did:web, its document served (and counted) by itself. */
let web: ServiceStandIn;
let tokens: Record<"generic" | "chat" | "feedOnly", ScopedToken>;

beforeAll(async () => {
  [appview, reports, web] = await Promise.all([
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: { bsky_appview: "BskyAppView" } }),
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: { atproto_labeler: "AtprotoLabeler" } }),
    startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:web", services: { svc: "ExampleService" } }),
  ]);
  server = await startTestServer({
    ATRIUM_APPVIEW: `${appview.did}#bsky_appview`,
    ATRIUM_REPORT_SERVICE: `${reports.did}#atproto_labeler`,
    ATRIUM_PROXY_MAX_RESPONSE_BYTES: String(MAX_RESPONSE_BYTES),
  });
  await createAlice(server);
  tokens = await tokensForScopes(server, {
    generic: "atproto transition:generic",
    chat: "atproto transition:chat.bsky",
    feedOnly: `atproto rpc:app.bsky.feed.getFeed?aud=${appview.did}%23bsky_appview`,
  });
});
afterAll(async () => {
  await server?.stop();
  await Promise.all([appview?.close(), reports?.close(), web?.close()]);
});

/** Runs `step` and returns the calls it caused at the stand-ins. */
async function callsDuring<T>(step: () => Promise<T>): Promise<{ result: T; seen: StandInCall[] }> {
  const standIns = [appview, reports, web];
  const before = standIns.map((standIn) => standIn.calls.length);
  const result = await step();
  return { result, seen: standIns.flatMap((standIn, index) => standIn.calls.slice(before[index])) };
}

const aliceDid = () => tokens.generic.tokens.sub;

describe("the default services, resolved from their DID documents", () => {
  it("with no proxy setting, app.bsky.* reaches the app view its DID document names, with a token it verifies (iss, bare-DID aud, lxm, a minute)", async () => {
    const { result, seen } = await callsDuring(() => call(tokens.generic, "app.bsky.feed.getTimeline", { params: { limit: "5" } }));
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ ok: true, method: "app.bsky.feed.getTimeline", query: { limit: "5" } });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.failure).toBeUndefined();
    const { payload } = seen[0]!.token!;
    expect(payload).toMatchObject({ iss: aliceDid(), aud: appview.did, lxm: "app.bsky.feed.getTimeline" });
    expect(payload.exp - payload.iat!).toBe(60);
  });

  it("a did:web service is reached where its /.well-known/did.json says, the document fetched once and then served from the cache", async () => {
    const headers = { "atproto-proxy": `${web.did}#svc` };
    const { result, seen } = await callsDuring(() => Promise.all([1, 2, 3].map((n) => call(tokens.generic, "com.example.thing.get", { params: { n: String(n) }, headers }))));
    expect(result.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(seen.map((c) => [c.nsid, c.token?.payload.aud])).toEqual(Array(3).fill(["com.example.thing.get", web.did]));
    expect(web.didDocumentRequests).toBe(1);
    expect((await call(tokens.generic, "com.example.thing.get", { headers })).status).toBe(200);
    expect(web.didDocumentRequests).toBe(1);
  });

  it("chat.bsky.* without atproto-proxy goes to the app view too (the reference's default), for a token allowed chat", async () => {
    const { result, seen } = await callsDuring(() => call(tokens.chat, "chat.bsky.convo.listConvos"));
    expect(result.status).toBe(200);
    expect(seen.map((c) => c.token?.payload)).toEqual([expect.objectContaining({ aud: appview.did, lxm: "chat.bsky.convo.listConvos" })]);
  });

  it("com.atproto.moderation.createReport without atproto-proxy goes to the report service (a did:plc), body and all", async () => {
    const report = { reasonType: "com.atproto.moderation.defs#reasonSpam", subject: { $type: "com.atproto.admin.defs#repoRef", did: "did:plc:spammerspammerspammerspa" } };
    const { result, seen } = await callsDuring(() => call(tokens.generic, "com.atproto.moderation.createReport", { json: report }));
    expect(result.status).toBe(200);
    expect(seen).toHaveLength(1);
    expect(reports.calls.at(-1)).toBe(seen[0]);
    expect(seen[0]!.token!.payload).toMatchObject({ iss: aliceDid(), aud: reports.did, lxm: "com.atproto.moderation.createReport" });
    expect(JSON.parse(seen[0]!.body)).toEqual(report);
    expect(seen[0]!.headers["content-type"]).toBe("application/json");
  });
});

describe("app.bsky.feed.getFeed", () => {
  it("asks the app view for the feed's record, then sends getFeed with a token for the feed generator's DID and getFeedSkeleton", async () => {
    appview.route("com.atproto.repo.getRecord", (_call, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ uri: FEED, value: { $type: "app.bsky.feed.generator", did: FEED_GENERATOR, displayName: "Cats" } }));
    }, { anonymous: true });
    appview.route("app.bsky.feed.getFeed", (call, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ feed: [], cursor: call.query.cursor ?? null }));
    }, { audience: FEED_GENERATOR, lxm: "app.bsky.feed.getFeedSkeleton" });

    const { result, seen } = await callsDuring(() => call(tokens.generic, "app.bsky.feed.getFeed", { params: { feed: FEED, cursor: "c1" } }));
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ feed: [], cursor: "c1" });
    expect(seen.map((c) => c.nsid)).toEqual(["com.atproto.repo.getRecord", "app.bsky.feed.getFeed"]);
    expect(seen[0]!.query).toEqual({ repo: "did:plc:feedownerfeedownerfeedown", collection: "app.bsky.feed.generator", rkey: "cats" });
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(seen[1]!.failure).toBeUndefined();
    expect(seen[1]!.token!.payload).toMatchObject({ iss: aliceDid(), aud: FEED_GENERATOR, lxm: "app.bsky.feed.getFeedSkeleton" });
  });

  it("needs rpc:app.bsky.feed.getFeedSkeleton at the app view too; without it nothing is called", async () => {
    const { result, seen } = await callsDuring(() => call(tokens.feedOnly, "app.bsky.feed.getFeed", { params: { feed: FEED } }));
    expectInsufficientScope(result, `rpc:app.bsky.feed.getFeedSkeleton?aud=${appview.did}%23bsky_appview`);
    expect(seen).toEqual([]);
  });

  it("a feed whose record the app view does not have is 400 UnknownFeed, and getFeed is not sent", async () => {
    appview.route("com.atproto.repo.getRecord", (_call, response) => {
      response.writeHead(400, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: "RecordNotFound", message: "Could not locate record" }));
    }, { anonymous: true });
    const { result, seen } = await callsDuring(() => call(tokens.generic, "app.bsky.feed.getFeed", { params: { feed: FEED } }));
    expectXrpcError(result, 400, "UnknownFeed");
    expect(seen.map((c) => c.nsid)).toEqual(["com.atproto.repo.getRecord"]);
  });
});

/** The reference's PROTECTED_METHODS and Atrium's three (app/.server/xrpc/protected-methods.ts), as the network names them. */
const PROTECTED = [
  "com.atproto.admin.sendEmail",
  "com.atproto.identity.requestPlcOperationSignature",
  "com.atproto.identity.signPlcOperation",
  "com.atproto.identity.submitPlcOperation",
  "com.atproto.identity.updateHandle",
  "com.atproto.server.activateAccount",
  "com.atproto.server.confirmEmail",
  "com.atproto.server.createAppPassword",
  "com.atproto.server.deactivateAccount",
  "com.atproto.server.deleteAccount",
  "com.atproto.server.getAccountInviteCodes",
  "com.atproto.server.getServiceAuth",
  "com.atproto.server.getSession",
  "com.atproto.server.listAppPasswords",
  "com.atproto.server.requestAccountDelete",
  "com.atproto.server.requestEmailConfirmation",
  "com.atproto.server.requestEmailUpdate",
  "com.atproto.server.revokeAppPassword",
  "com.atproto.server.updateEmail",
];
/** Each as written, with its authority upper-cased, and all upper-cased (the reference compares them without regard to case). */
const spellings = () => PROTECTED.flatMap((nsid) => [nsid, nsid.replace("com.atproto.", "COM.ATPROTO."), nsid.toUpperCase()]);
/** Whether this server implements `nsid` itself (its route table, as the metrics name it): a call runs here, whatever atproto-proxy says. */
const isLocal = (nsid: string) => xrpcRouteLabel(`/xrpc/${nsid}`) !== "other";

describe("protected methods: never proxied, no service token minted", () => {
  it("a call for one, named by atproto-proxy to the app view, in any spelling, is refused or served here; the app view is never called", async () => {
    const { result, seen } = await callsDuring(() =>
      Promise.all(
        spellings().map(async (nsid) => {
          const headers = { "atproto-proxy": `${appview.did}#bsky_appview` };
          // An NSID's authority is case-insensitive, its name is not: only the exact name is the local method.
          const local = isLocal(nsid);
          // Queries by GET, the rest by POST (with an empty JSON body), as a client would send them.
          const query = ["getSession", "getAccountInviteCodes", "listAppPasswords", "getServiceAuth"].some((name) => nsid.toLowerCase().endsWith(name.toLowerCase()));
          const answer = query ? await call<XrpcErrorBody>(tokens.generic, nsid, { headers }) : await call<XrpcErrorBody>(tokens.generic, nsid, { json: {}, headers });
          return { nsid, local, status: answer.status, error: answer.body?.error };
        }),
      ),
    );
    expect(seen).toEqual([]);
    for (const answer of result.filter((a) => !a.local)) {
      // Refused before the caller is even authenticated: the reference's 400 InvalidToken, or 403 for what OAuth apps may never call.
      expect([`${answer.status} ${answer.error}`], answer.nsid).toEqual([expect.stringMatching(/^(400 InvalidToken|403 Forbidden)$/)]);
    }
    expect(result.find((a) => a.nsid === "com.atproto.server.getSession")).toMatchObject({ status: 200 });
  });

  it("getServiceAuth mints no token for any of them, in any spelling (400, as the reference), and still mints createAccount's", async () => {
    const answers = await Promise.all(
      spellings().map(async (lxm) => ({ lxm, answer: await call<{ token?: string } & XrpcErrorBody>(tokens.generic, "com.atproto.server.getServiceAuth", { params: { aud: appview.did, lxm } }) })),
    );
    for (const { lxm, answer } of answers) expect({ lxm, status: answer.status, error: answer.body.error, token: answer.body.token }).toEqual({ lxm, status: 400, error: "InvalidRequest", token: undefined });
    const migration = await call<{ token?: string }>(tokens.generic, "com.atproto.server.getServiceAuth", { params: { aud: "did:web:newpds.example", lxm: "com.atproto.server.createAccount" } });
    expect(migration.status).toBe(200);
    expect(typeof migration.body.token).toBe("string");
  });

  it("without atproto-proxy a protected method not served here is refused too (never sent to the app view by default)", async () => {
    const elsewhere = PROTECTED.filter((nsid) => !isLocal(nsid));
    const { result, seen } = await callsDuring(() => Promise.all(elsewhere.map(async (nsid) => ({ nsid, answer: await call<XrpcErrorBody>(tokens.generic, nsid, { json: {} }) }))));
    for (const { nsid, answer } of result) expect([nsid, `${answer.status} ${answer.body.error}`]).toEqual([nsid, expect.stringMatching(/^(400 InvalidToken|403 Forbidden)$/)]);
    expect(seen).toEqual([]);
  });
});

describe("headers, failures, methods and size", () => {
  it("passes the reference's request headers on (and no others), and the reference's response headers back", async () => {
    const body = gzipSync(JSON.stringify({ suggestions: [] }));
    appview.route("app.bsky.unspecced.getSuggestions", (_call, response) => {
      response.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-encoding": "gzip",
        "content-language": "fr",
        "atproto-repo-rev": "3l5q5s2qzbk2b",
        "atproto-content-labelers": "did:plc:labelerlabelerlabelerlab",
        "retry-after": "3",
        "x-secret-upstream": "1",
        "set-cookie": "upstream=1",
      });
      response.end(body);
    });
    const { result, seen } = await callsDuring(() =>
      callRaw(tokens.generic, "GET", "app.bsky.unspecced.getSuggestions", {
        headers: {
          "accept-language": "fr, en;q=0.5",
          "atproto-accept-labelers": "did:plc:labelerlabelerlabelerlab;redact",
          "x-bsky-topics": "cats,dogs",
          "accept-encoding": "gzip",
          cookie: "session=secret",
          "x-forwarded-for": "203.0.113.9",
          "x-other": "no",
        },
      }),
    );
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ suggestions: [] });
    const sent = seen[0]!.headers;
    expect(sent).toMatchObject({ "accept-language": "fr, en;q=0.5", "atproto-accept-labelers": "did:plc:labelerlabelerlabelerlab;redact", "x-bsky-topics": "cats,dogs", "accept-encoding": "gzip" });
    expect(sent.authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    for (const name of ["cookie", "x-forwarded-for", "x-other", "dpop", "atproto-proxy"]) expect(sent[name], name).toBeUndefined();
    expect(Object.fromEntries(["content-encoding", "content-language", "atproto-repo-rev", "atproto-content-labelers", "retry-after"].map((name) => [name, result.headers.get(name)]))).toEqual({
      "content-encoding": "gzip",
      "content-language": "fr",
      "atproto-repo-rev": "3l5q5s2qzbk2b",
      "atproto-content-labelers": "did:plc:labelerlabelerlabelerlab",
      "retry-after": "3",
    });
    expect(result.headers.get("x-secret-upstream")).toBeNull();
    expect(result.headers.get("set-cookie")).toBeNull();
  });

  it("a browser app's preflight may send the headers passed on", async () => {
    const preflight = await fetch(`${server.issuer}/xrpc/app.bsky.feed.getTimeline`, {
      method: "OPTIONS",
      headers: { Origin: "https://app.example.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "atproto-accept-labelers, x-bsky-topics" },
    });
    expect(preflight.status).toBe(204);
    const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    expect(allowed).toEqual(expect.arrayContaining(["atproto-accept-labelers", "x-bsky-topics", "atproto-proxy"]));
  });

  it("without accept-encoding the upstream is asked for identity", async () => {
    const { seen } = await callsDuring(() => callRaw(tokens.generic, "GET", "app.bsky.actor.getSuggestions", { headers: { "accept-encoding": "" } }));
    expect(seen[0]!.headers["accept-encoding"]).toBe("identity");
  });

  it("an upstream 5xx is 502 UpstreamFailure (with its Retry-After); a 4xx is passed on as it is", async () => {
    appview.route("app.bsky.graph.getLists", (call, response) => {
      const status = Number(call.query.status);
      response.writeHead(status, { "content-type": "application/json", "retry-after": "7" });
      response.end(JSON.stringify({ error: status === 400 ? "InvalidRequest" : "InternalServerError", message: "upstream says" }));
    });
    for (const status of ["500", "503"]) {
      const answer = await call<XrpcErrorBody>(tokens.generic, "app.bsky.graph.getLists", { params: { status } });
      expectXrpcError(answer, 502, "UpstreamFailure");
      expect(answer.headers.get("retry-after")).toBe("7");
    }
    const refused = await call<XrpcErrorBody>(tokens.generic, "app.bsky.graph.getLists", { params: { status: "400" } });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 400, body: { error: "InvalidRequest", message: "upstream says" } });
  });

  it("an upstream that cannot be reached is 502 UpstreamFailure", async () => {
    const closed = await freePort();
    const did = await registerPlcService(PLC_DIRECTORY, { gone: { type: "Gone", endpoint: `http://127.0.0.1:${closed}` } });
    const answer = await call<XrpcErrorBody>(tokens.generic, "com.example.gone.get", { headers: { "atproto-proxy": `${did}#gone` } });
    expectXrpcError(answer, 502, "UpstreamFailure");
  });

  it("only GET, HEAD and POST are proxied: others are refused and never reach the upstream", async () => {
    const { result, seen } = await callsDuring(() => Promise.all(["PUT", "DELETE", "PATCH"].map((method) => callRaw(tokens.generic, method, "app.bsky.feed.getTimeline"))));
    for (const answer of result) expect(answer.status).toBe(405);
    expect(seen).toEqual([]);
    const head = await callsDuring(() => callRaw(tokens.generic, "HEAD", "app.bsky.feed.getTimeline"));
    expect(head.result.status).toBe(200);
    expect(head.seen.map((c) => c.method)).toEqual(["HEAD"]);
  });

  it(`an answer announcing more than ${MAX_RESPONSE_BYTES} bytes is 502 at once; one that passes the cap as it streams is cut off`, async () => {
    appview.route("app.bsky.feed.searchPosts", (call, response) => {
      const big = Buffer.alloc(MAX_RESPONSE_BYTES + 1024, "a");
      if (call.query.declared === "1") {
        response.writeHead(200, { "content-type": "application/json", "content-length": String(big.byteLength) });
        response.end(big);
        return;
      }
      response.writeHead(200, { "content-type": "application/json" });
      response.write(big.subarray(0, 1024));
      response.end(big.subarray(1024));
    });
    const declared = await call<XrpcErrorBody>(tokens.generic, "app.bsky.feed.searchPosts", { params: { declared: "1" } });
    expectXrpcError(declared, 502, "UpstreamFailure");
    // Chunked: the head went out before the cap was passed, so the answer is cut off (never taken for a whole one).
    await expect(call(tokens.generic, "app.bsky.feed.searchPosts", { params: { declared: "0" } })).rejects.toThrow();
  });
});

describe("an upstream that answers after the response timeout", () => {
  let impatient: TestServer;
  let token: ScopedToken;

  beforeAll(async () => {
    impatient = await startTestServer({ ATRIUM_APPVIEW: `${appview.did}#bsky_appview`, ATRIUM_REQUEST_TIMEOUT_SECONDS: "1" });
    await createAlice(impatient);
    ({ generic: token } = await tokensForScopes(impatient, { generic: "atproto transition:generic" }));
  });
  afterAll(async () => {
    await impatient?.stop();
  });

  it("gets the timeout's 503; its answer, when it comes and then breaks off, is dropped and the server keeps serving", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve));
    appview.route("app.bsky.feed.getListFeed", (_call, response) => {
      void released.then(() => {
        response.socket?.once("close", closed);
        response.writeHead(200, { "content-type": "application/json", "content-length": "100000" });
        response.write("{\"feed\": [");
        // Half an answer, then the connection breaks off.
        setImmediate(() => response.socket?.destroy());
      });
    });
    const late = await call<XrpcErrorBody>(token, "app.bsky.feed.getListFeed");
    expect(late.status).toBe(503);
    release();
    await connectionClosed;
    for (let i = 0; i < 3; i++) expect((await call(token, "com.atproto.server.getSession")).status).toBe(200);
    expect(impatient.output()).not.toMatch(/Unhandled|uncaught|Error: /i);
  });
});

describe("the production network rules (ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS off)", () => {
  let production: TestServer;
  let generic: ScopedToken;
  /** A did:plc whose document names services at loopback and private addresses. */
  let privateDid: string;

  beforeAll(async () => {
    // Its app view is the did:web stand-in on 127.0.0.1.
    production = await startTestServer({ ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "0", ATRIUM_APPVIEW: `${web.did}#svc` });
    await createAlice(production);
    ({ generic } = await tokensForScopes(production, { generic: "atproto transition:generic" }));
    const port = new URL(web.url).port;
    privateDid = await registerPlcService(PLC_DIRECTORY, {
      plainHttp: { type: "S", endpoint: `http://127.0.0.1:${port}` },
      loopback: { type: "S", endpoint: `https://127.0.0.1:${port}` },
      loopbackV6: { type: "S", endpoint: `https://[::1]:${port}` },
      private: { type: "S", endpoint: "https://10.0.0.1" },
      metadata: { type: "S", endpoint: "https://169.254.169.254" },
      mapped: { type: "S", endpoint: `https://[::ffff:127.0.0.1]:${port}` },
      localhost: { type: "S", endpoint: `https://localhost:${port}` },
      // This machine's own name: it resolves to loopback here (/etc/hosts), which only the connection can tell.
      named: { type: "S", endpoint: `https://${os.hostname().toLowerCase()}:${port}` },
    });
  });
  afterAll(async () => {
    await production?.stop();
  });

  it("a did:web on a loopback address is not fetched: 400, no request for its document, nothing called", async () => {
    const before = { documents: web.didDocumentRequests, calls: web.calls.length };
    const answer = await call<XrpcErrorBody>(generic, "app.bsky.feed.getTimeline");
    expectXrpcError(answer, 400, "InvalidRequest");
    expect(answer.body.message).toMatch(/non-public address/);
    expect({ documents: web.didDocumentRequests, calls: web.calls.length }).toEqual(before);
  });

  it.each(["plainHttp", "loopback", "loopbackV6", "private", "metadata", "mapped", "localhost"])(
    "an endpoint written at a loopback or private address (%s) is refused before anything is signed or sent",
    async (service) => {
      const before = web.calls.length;
      const answer = await call<XrpcErrorBody>(generic, "com.example.thing.get", { headers: { "atproto-proxy": `${privateDid}#${service}` } });
      expectXrpcError(answer, 400, "InvalidRequest");
      expect(answer.body.message).toMatch(/must use https|non-public address/);
      expect(web.calls.length).toBe(before);
    },
  );

  it("an endpoint whose name resolves to a loopback or private address is refused when connecting: 502, and nothing reaches it", async () => {
    const addresses = await dns.lookup(os.hostname(), { all: true }).catch(() => []);
    const before = web.calls.length;
    const answer = await call<XrpcErrorBody>(generic, "com.example.thing.get", { headers: { "atproto-proxy": `${privateDid}#named` } });
    expectXrpcError(answer, 502, "UpstreamFailure");
    expect(web.calls.length).toBe(before);
    // Meaningful where the name resolves to such addresses (it does on the machines this suite runs on: /etc/hosts).
    console.log(`${os.hostname()} resolves to ${addresses.map((entry) => entry.address).join(", ") || "nothing"}`);
    if (addresses.length > 0 && addresses.every(({ address }) => /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|f[cd]|fe80)/i.test(address))) {
      expect(answer.body.message).toMatch(/non-public address/);
    }
  });

  it("logged no unexpected error", () => {
    expect(production.output()).not.toMatch(/Unhandled server error|Unexpected error/);
    expect(server.output()).not.toMatch(/Unhandled server error|Unexpected error/);
  });
});
