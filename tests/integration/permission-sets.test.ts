import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { CookieJar, openConsentPage, visibleText } from "../helpers/consent.ts";
import { rowsOf } from "../helpers/databases.ts";
import { startDnsStandIn, type DnsStandIn } from "../helpers/dns-stand-in.ts";
import { createAlice } from "../helpers/flow.ts";
import type { Keypair } from "@atproto/crypto";
import {
  atprotoDidDocument,
  buildLexiconCar,
  CAR_CONTENT_TYPE,
  LEXICON_COLLECTION,
  newAuthorityKey,
  permissionSetLexicon,
} from "../helpers/lexicon-car.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  loopbackClient,
  missingPermission,
  pushScope,
  scopedSession,
  startLocalHttpServer,
  type LocalHttpServer,
  type ScopedSession,
  type XrpcErrorBody,
} from "../helpers/xrpc-extra.ts";

/**
 * include:<nsid> permission sets (docs/architecture.md, "Scopes and the data server"): resolved at PAR through a
 * directory of lexicons or the atproto network, stored expanded, so the
 * token holds concrete repo:/rpc: permissions.
 */

const SET_NSID = "com.example.calendar.authFull";
const INCLUDE = `include:${SET_NSID}`;
const CAL_AUD = "did:web:calendar.test#cal";
const INCLUDE_WITH_AUD = `include:${SET_NSID}?aud=did:web:calendar.test%23cal`;
const TITLE = "Calendar access";
const DETAIL = "Create, edit and delete the events of your calendar.";
/** What the set grants: its own collection, an RPC method inheriting the include's aud, and a collection outside its namespace (never granted). */
const SET_DOCUMENT = permissionSetLexicon(
  SET_NSID,
  [
    { resource: "repo", collection: ["com.example.calendar.event"] },
    { resource: "rpc", lxm: ["com.example.calendar.getEvents"], inheritAud: true },
    { resource: "repo", collection: ["app.bsky.feed.post"] },
  ],
  { title: TITLE, detail: DETAIL },
);
const EXPANDED_REPO = "repo:com.example.calendar.event";
const EXPANDED_RPC = "rpc:com.example.calendar.getEvents?aud=did:web:calendar.test%23cal";

let lexiconDir: string;
let dirServer: TestServer;
let plainServer: TestServer;
let netServer: TestServer;
let dns: DnsStandIn;
let lexiconHost: LocalHttpServer;
let lexiconDid: string;
/** The lexicon authority's #atproto key: it signs the repository that holds the permission set. */
let lexiconKey: Keypair;
const lexiconRequests: URL[] = [];
const dids: Record<string, string> = {};

async function startLexiconHost(): Promise<LocalHttpServer> {
  let car: Uint8Array | undefined;
  const host = await startLocalHttpServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://lexicon.invalid");
    lexiconRequests.push(url);
    if (url.pathname === "/.well-known/did.json") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(atprotoDidDocument(lexiconDid, host.url, lexiconKey)));
      return;
    }
    const wanted =
      url.pathname === "/xrpc/com.atproto.sync.getRecord" &&
      url.searchParams.get("did") === lexiconDid &&
      url.searchParams.get("collection") === LEXICON_COLLECTION &&
      url.searchParams.get("rkey") === SET_NSID;
    if (wanted) {
      car ??= await buildLexiconCar({ authority: { did: lexiconDid, key: lexiconKey }, nsid: SET_NSID, document: SET_DOCUMENT });
      response.writeHead(200, { "content-type": CAR_CONTENT_TYPE });
      response.end(car);
      return;
    }
    response.writeHead(400, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "RecordNotFound", message: "Could not locate record" }));
  });
  return host;
}

beforeAll(async () => {
  lexiconDir = mkdtempSync(path.join(os.tmpdir(), "atrium-lexicons-"));
  writeFileSync(path.join(lexiconDir, `${SET_NSID}.json`), JSON.stringify(SET_DOCUMENT, null, 2));

  lexiconKey = await newAuthorityKey();
  [dns, lexiconHost] = await Promise.all([startDnsStandIn(), startLexiconHost()]);
  lexiconDid = `did:web:127.0.0.1%3A${lexiconHost.port}`;
  dns.setTxt("_lexicon.calendar.example.com", [`did=${lexiconDid}`]);

  [dirServer, plainServer, netServer] = await Promise.all([
    startTestServer({ ATRIUM_PERMISSION_SETS_DIR: lexiconDir }),
    startTestServer(),
    startTestServer({ ATRIUM_PERMISSION_SETS_NETWORK: "1", ATRIUM_DNS_SERVERS: dns.server }),
  ]);
  const accounts = await Promise.all([createAlice(dirServer), createAlice(netServer)]);
  dids.dir = accounts[0].did;
  dids.net = accounts[1].did;
});
afterAll(async () => {
  await Promise.all([dirServer?.stop(), plainServer?.stop(), netServer?.stop()]);
  await Promise.all([dns?.close(), lexiconHost?.close()]);
  if (lexiconDir) rmSync(lexiconDir, { recursive: true, force: true });
});

async function scopesSupported(server: TestServer): Promise<{ as: string[]; rs: string[] }> {
  const as = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as { scopes_supported: string[] };
  const rs = (await (await fetch(`${server.issuer}/.well-known/oauth-protected-resource`)).json()) as { scopes_supported: string[] };
  return { as: as.scopes_supported, rs: rs.scopes_supported };
}

function createRecord(session: ScopedSession, did: string, collection: string) {
  return session.client.xrpc<{ uri?: string } & XrpcErrorBody>(session.accessToken, "com.atproto.repo.createRecord", {
    json: { repo: did, collection, record: { $type: collection, text: "Team lunch", createdAt: new Date().toISOString() } },
  });
}

async function grantScopes(server: TestServer, did: string): Promise<string[]> {
  const rows = await rowsOf<{ scope: string }>(server.database(), sql`SELECT "scope" FROM "Grant" WHERE "accountDid" = ${did}`);
  return rows.map((row) => row.scope);
}

/** Checks a token obtained for `include:` holds the expanded permissions and works against the data server. */
async function expectExpandedSession(server: TestServer, did: string, session: ScopedSession) {
  const granted = session.tokens.scope.split(" ");
  expect(granted.sort()).toEqual(["atproto", EXPANDED_REPO].sort());
  expect(session.tokens.scope).not.toContain("include:");
  expect(session.tokens.scope).not.toContain("app.bsky.feed.post");

  const created = await createRecord(session, did, "com.example.calendar.event");
  expect(created.status).toBe(200);
  expect(created.body.uri).toMatch(new RegExp(`^at://${did}/com\\.example\\.calendar\\.event/`));

  const refused = await createRecord(session, did, "app.bsky.feed.post");
  expect(refused.status).toBe(403);
  expect(refused.body).toMatchObject({ error: "InsufficientScope", message: missingPermission("repo:app.bsky.feed.post?action=create") });

  // The stored grant is expanded too: resource checks never resolve anything.
  for (const scope of await grantScopes(server, did)) expect(scope).not.toContain("include:");
}

describe("permission sets from a directory (ATRIUM_PERMISSION_SETS_DIR)", () => {
  it("advertises include in scopes_supported", async () => {
    const { as, rs } = await scopesSupported(dirServer);
    expect(as).toContain("include");
    expect(rs).toContain("include");
  });

  it("a token for include:<nsid> holds the expanded permissions, which the data server enforces", async () => {
    const session = await scopedSession(dirServer, `atproto ${INCLUDE}`);
    await expectExpandedSession(dirServer, dids.dir!, session);
  });

  it("rpc permissions with inheritAud take the include's aud", async () => {
    const session = await scopedSession(dirServer, `atproto ${INCLUDE_WITH_AUD}`);
    expect(session.tokens.scope.split(" ").sort()).toEqual(["atproto", EXPANDED_REPO, EXPANDED_RPC].sort());
    const allowed = await session.client.xrpc<{ token?: string }>(session.accessToken, "com.atproto.server.getServiceAuth", {
      params: { aud: CAL_AUD, lxm: "com.example.calendar.getEvents" },
    });
    expect(allowed.status).toBe(200);
    expect(typeof allowed.body.token).toBe("string");
    const otherMethod = await session.client.xrpc<XrpcErrorBody>(session.accessToken, "com.atproto.server.getServiceAuth", {
      params: { aud: CAL_AUD, lxm: "com.example.calendar.deleteEverything" },
    });
    expect(otherMethod.status).toBe(403);
  });

  it("the consent page shows the set's title and detail", async () => {
    const client = await loopbackClient(dirServer, `atproto ${INCLUDE}`);
    const par = await pushScope(client, `atproto ${INCLUDE}`);
    expect(par.status).toBe(201);
    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri!), new CookieJar());
    expect(page.status).toBe(200);
    expect(page.html).toContain(TITLE);
    expect(page.html).toContain(DETAIL);
  });

  it("an unresolvable set fails at PAR with 400 invalid_scope", async () => {
    const scope = "atproto include:com.example.missing.set";
    const client = await loopbackClient(dirServer, scope);
    const par = await pushScope(client, scope);
    expect(par.status).toBe(400);
    expect(par.body.error).toBe("invalid_scope");
    expect(par.body.error_description).toContain("com.example.missing.set");
  });

  it("a lexicon added to the directory later is picked up without a restart", async () => {
    const nsid = "com.example.missing.later";
    const scope = `atproto include:${nsid}`;
    const client = await loopbackClient(dirServer, scope);
    expect((await pushScope(client, scope)).status).toBe(400);
    writeFileSync(
      path.join(lexiconDir, `${nsid}.json`),
      JSON.stringify(permissionSetLexicon(nsid, [{ resource: "repo", collection: ["com.example.missing.thing"] }], { title: "Later" })),
    );
    const par = await pushScope(client, scope);
    expect(par.status, JSON.stringify(par.body)).toBe(201);
  });
});

describe("without a permission-set resolver", () => {
  it("scopes_supported has no include", async () => {
    const { as, rs } = await scopesSupported(plainServer);
    expect(as).not.toContain("include");
    expect(rs).not.toContain("include");
    expect(as).toContain("transition:generic");
  });

  it("include: is not understood and is dropped at PAR, not fatal", async () => {
    const client = await loopbackClient(plainServer, `atproto ${INCLUDE}`);
    const par = await pushScope(client, `atproto ${INCLUDE}`);
    expect(par.status, JSON.stringify(par.body)).toBe(201);
    // The consent screen's technical details show the scope that will be granted.
    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri!), new CookieJar());
    expect(page.status).toBe(200);
    const technical = /<ul id="granted-scope"[^>]*>([\s\S]*?)<\/ul>/.exec(page.html)?.[1] ?? "";
    expect(visibleText(technical).trim()).toBe("atproto");
    expect(page.html).not.toContain(TITLE);
  });
});

describe("permission sets from the atproto network (ATRIUM_PERMISSION_SETS_NETWORK=1)", () => {
  it("advertises include in scopes_supported", async () => {
    const { as } = await scopesSupported(netServer);
    expect(as).toContain("include");
  });

  it("resolves DNS _lexicon → did:web → PDS getRecord → CAR and expands the set end to end", async () => {
    const session = await scopedSession(netServer, `atproto ${INCLUDE}`);
    await expectExpandedSession(netServer, dids.net!, session);

    expect(dns.queries.some((query) => query.name === "_lexicon.calendar.example.com" && query.type === 16)).toBe(true);
    expect(lexiconRequests.some((url) => url.pathname === "/.well-known/did.json")).toBe(true);
    const getRecord = lexiconRequests.filter((url) => url.pathname === "/xrpc/com.atproto.sync.getRecord");
    expect(getRecord).toHaveLength(1);
    expect(Object.fromEntries(getRecord[0]!.searchParams)).toEqual({ did: lexiconDid, collection: LEXICON_COLLECTION, rkey: SET_NSID });

    const cached = await rowsOf<{ nsid: string; document: string }>(netServer.database(), sql`SELECT "nsid", "document" FROM "PermissionSetCache"`);
    expect(cached.map((row) => row.nsid)).toEqual([SET_NSID]);
    expect(JSON.parse(cached[0]!.document)).toMatchObject({ id: SET_NSID, defs: { main: { type: "permission-set", title: TITLE } } });
  });

  it("the consent page shows the set's title and detail, served from the cache", async () => {
    const before = lexiconRequests.length;
    const client = await loopbackClient(netServer, `atproto ${INCLUDE}`);
    const par = await pushScope(client, `atproto ${INCLUDE}`);
    expect(par.status).toBe(201);
    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri!), new CookieJar());
    expect(page.html).toContain(TITLE);
    expect(page.html).toContain(DETAIL);
    // Fresh for 15 minutes: no second fetch.
    expect(lexiconRequests.length).toBe(before);
  });

  it("a set without a _lexicon TXT record fails at PAR with 400 invalid_scope", async () => {
    const scope = "atproto include:org.example.nowhere.set";
    const client = await loopbackClient(netServer, scope);
    const par = await pushScope(client, scope);
    expect(par.status).toBe(400);
    expect(par.body.error).toBe("invalid_scope");
    expect(par.body.error_description).toContain("org.example.nowhere.set");
    expect(dns.queries.some((query) => query.name === "_lexicon.nowhere.example.org")).toBe(true);
  });
});
