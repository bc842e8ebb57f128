import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Keypair } from "@atproto/crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { ENGINES, rowOf } from "../../../../../tests/helpers/databases.ts";
import { startDnsStandIn, type DnsStandIn } from "../../../../../tests/helpers/dns-stand-in.ts";
import {
  CAR_CONTENT_TYPE,
  atprotoDidDocument,
  buildLexiconCar,
  newAuthorityKey,
  permissionSetLexicon,
  registerPlcAuthority,
  type LexiconCarOptions,
} from "../../../../../tests/helpers/lexicon-car.ts";
import { countRows, useSharedDatabase } from "../../../../../tests/helpers/store-fixtures.ts";
import { sql } from "../../../db/sql.ts";
import { SqlPermissionSetCache } from "../../../stores/sql-permission-set-cache.ts";
import { DAY, HOUR, MINUTE } from "../../../util/time.ts";
import { NetworkPermissionSetResolver, nsidAuthority, type NetworkPermissionSetResolverOptions } from "./network-resolver.ts";
import { PermissionSetResolutionError } from "./permission-set-resolver.ts";

const NSID = "com.example.calendar.authFull";
const AUTHORITY_TXT = "_lexicon.calendar.example.com";
const PLC_DID = "did:plc:abcdefghijklmnopqrstuvwx";

const PERMISSIONS = [
  { resource: "repo", collection: ["com.example.calendar.event"] },
  { resource: "rpc", lxm: ["com.example.calendar.getEvents"], inheritAud: true },
];

/** The test run's real PLC directory (tests/helpers/postgres-global-setup.ts). */
const PLC_DIRECTORY = inject("plcDirectoryUrl");

/**
 * One loopback HTTP server plays the web parts: the did:web host
 * (/.well-known/did.json) and the PDS (/xrpc/com.atproto.sync.getRecord,
 * answering CAR files by DID and rkey). did:plc authorities are registered at
 * the real PLC directory.
 */
type Web = {
  origin: string;
  port: number;
  didWeb: string;
  didDocuments: Map<string, unknown>;
  /** `${did} ${rkey}` → CAR bytes. */
  records: Map<string, Uint8Array>;
  requests: string[];
  /** When set, every connection is dropped (the host is down). */
  down: boolean;
  close(): Promise<void>;
};

async function startWeb(): Promise<Web> {
  const web = {
    didDocuments: new Map<string, unknown>(),
    records: new Map<string, Uint8Array>(),
    requests: [] as string[],
    down: false,
  } as Web;
  const server = http.createServer((req, res) => {
    if (web.down) {
      req.socket.destroy();
      return;
    }
    web.requests.push(req.url ?? "");
    const url = new URL(req.url ?? "/", web.origin);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/did.json") {
      const document = web.didDocuments.get(web.didWeb);
      return document ? json(200, document) : json(404, { message: "DID not registered" });
    }
    if (url.pathname === "/xrpc/com.atproto.sync.getRecord") {
      if (url.searchParams.get("collection") !== "com.atproto.lexicon.schema") return json(400, { error: "InvalidRequest" });
      const car = web.records.get(`${url.searchParams.get("did")} ${url.searchParams.get("rkey")}`);
      if (!car) return json(404, { error: "RecordNotFound", message: "Could not locate record" });
      res.writeHead(200, { "content-type": CAR_CONTENT_TYPE });
      res.end(car);
      return;
    }
    json(404, { error: "NotFound" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  web.port = (server.address() as AddressInfo).port;
  web.origin = `http://127.0.0.1:${web.port}`;
  web.didWeb = `did:web:127.0.0.1%3A${web.port}`;
  web.close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return web;
}

async function rejection(promise: Promise<unknown>): Promise<PermissionSetResolutionError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PermissionSetResolutionError);
    return error as PermissionSetResolutionError;
  }
  throw new Error("expected the promise to reject");
}

/** The resolver with its cache in a real database of each engine (SqlPermissionSetCache). */
describe.each(ENGINES)("NetworkPermissionSetResolver on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let dns: DnsStandIn;
  let web: Web;
  let clock: number;
  let staleWarnings: string[];
  /** The did:web authority's #atproto key. */
  let webKey: Keypair;
  const keys = new Map<string, Keypair>();

  beforeAll(async () => {
    dns = await startDnsStandIn();
    web = await startWeb();
    webKey = await newAuthorityKey();
    keys.set(web.didWeb, webKey);
  });
  afterAll(async () => {
    await web.close();
    await dns.close();
  });

  beforeEach(async () => {
    clock = Date.parse("2026-03-01T12:00:00Z");
    staleWarnings = [];
    web.down = false;
    web.requests.length = 0;
    web.didDocuments.clear();
    web.records.clear();
    dns.queries.length = 0;
    dns.remove(AUTHORITY_TXT);

    // The happy path; tests break one link of it.
    dns.setTxt(AUTHORITY_TXT, [`did=${web.didWeb}`]);
    web.didDocuments.set(web.didWeb, atprotoDidDocument(web.didWeb, web.origin, webKey));
    await publish(web.didWeb, NSID, permissionSetLexicon(NSID, PERMISSIONS, { title: "Calendar" }));
  });
  async function publish(did: string, nsid: string, document: Record<string, unknown>, options: Partial<LexiconCarOptions> = {}) {
    web.records.set(`${did} ${nsid}`, await buildLexiconCar({ authority: { did, key: keys.get(did)! }, nsid, document, ...options }));
  }

  function resolver(options: Partial<NetworkPermissionSetResolverOptions> = {}) {
    return new NetworkPermissionSetResolver({
      cache: new SqlPermissionSetCache(shared.db),
      allowPrivate: true,
      dnsServers: [dns.server],
      plcDirectoryUrl: PLC_DIRECTORY,
      now: () => clock,
      timeoutMs: 5_000,
      dnsTimeoutMs: 1_000,
      onStaleServed: (_nsid, error) => staleWarnings.push(error.message),
      ...options,
    });
  }

  const getRecordRequests = () => web.requests.filter((url) => url.startsWith("/xrpc/com.atproto.sync.getRecord"));

  it("resolves DNS → did:web → PDS → CAR record, and caches the lexicon document", async () => {
    const set = await resolver().resolve(NSID);
    expect(set).toEqual({
      type: "permission-set",
      title: "Calendar",
      permissions: PERMISSIONS.map((p) => ({ type: "permission", ...p })),
    });

    expect(dns.queries).toContainEqual({ name: AUTHORITY_TXT, type: 16 });
    expect(web.requests).toEqual([
      "/.well-known/did.json",
      `/xrpc/com.atproto.sync.getRecord?did=${encodeURIComponent(web.didWeb)}&collection=com.atproto.lexicon.schema&rkey=${NSID}`,
    ]);

    const row = (await rowOf<Record<string, unknown>>(shared.db, sql`SELECT * FROM "PermissionSetCache" WHERE "nsid" = ${NSID}`))!;
    expect(row.fetchedAt).toBe(clock);
    expect(row.expiresAt).toBe(clock + 90 * DAY);
    expect(JSON.parse(row.document as string)).toEqual({
      $type: "com.atproto.lexicon.schema",
      ...permissionSetLexicon(NSID, PERMISSIONS, { title: "Calendar" }),
    });
  });

  it("resolves a did:plc authority registered at the real PLC directory, joining split TXT strings", async () => {
    const authority = await registerPlcAuthority(PLC_DIRECTORY, `${web.origin}/`);
    keys.set(authority.did, authority.key);
    dns.setTxt(AUTHORITY_TXT, ["v=spf1 -all", ["did=did:plc:", authority.did.slice("did:plc:".length)]]);
    await publish(authority.did, NSID, permissionSetLexicon(NSID, PERMISSIONS));

    expect((await resolver().resolve(NSID)).permissions).toHaveLength(2);
    expect(web.requests).toEqual([
      `/xrpc/com.atproto.sync.getRecord?did=${encodeURIComponent(authority.did)}&collection=com.atproto.lexicon.schema&rkey=${NSID}`,
    ]);

    // The same record signed by a key the directory's document does not name is refused.
    await publish(authority.did, NSID, permissionSetLexicon(NSID, PERMISSIONS), { signWith: await newAuthorityKey() });
    clock += DAY + MINUTE;
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/signature does not verify with did:plc:[a-z2-7]{24}'s #atproto key/);
  });

  it("refuses a record whose commit is signed by another key than the DID document's #atproto key", async () => {
    await publish(web.didWeb, NSID, permissionSetLexicon(NSID, PERMISSIONS), { signWith: await newAuthorityKey() });
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is in a commit whose signature does not verify/);
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);
  });

  it("refuses a record that the signed commit's MST does not reach (a block beside the proof)", async () => {
    await publish(web.didWeb, NSID, permissionSetLexicon(NSID, PERMISSIONS), { recordOutsideProof: true });
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is not in the signed repository: the proof shows no com\.atproto\.lexicon\.schema\/com\.example\.calendar\.authFull/);
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);
  });

  it("refuses a commit of another repository, and an authority whose document names no #atproto key", async () => {
    const other = `did:web:other.example`;
    keys.set(other, webKey);
    web.records.set(`${web.didWeb} ${NSID}`, await buildLexiconCar({ authority: { did: other, key: webKey }, nsid: NSID, document: permissionSetLexicon(NSID, PERMISSIONS) }));
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is in a commit of another repository \(did:web:other\.example\)/);

    web.didDocuments.set(web.didWeb, atprotoDidDocument(web.didWeb, web.origin));
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/names no usable #atproto signing key/);
  });

  it("refuses an NSID whose authority has no TXT record", async () => {
    dns.remove(AUTHORITY_TXT);
    const error = await rejection(resolver().resolve(NSID));
    expect(error.nsid).toBe(NSID);
    expect(error.message).toMatch(/there is no TXT record at _lexicon\.calendar\.example\.com/);
    expect(web.requests).toEqual([]);
  });

  it("refuses TXT records without a usable did= entry", async () => {
    dns.setTxt(AUTHORITY_TXT, ["v=spf1 -all", "hello"]);
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/have no did= entry/);

    dns.setTxt(AUTHORITY_TXT, ["did=did:example:123"]);
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/does not name a did:plc or did:web DID/);

    dns.setTxt(AUTHORITY_TXT, [`did=${web.didWeb}`, `did=${PLC_DID}`]);
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/name more than one DID/);
    expect(web.requests).toEqual([]);
  });

  it("refuses a DID document without an atproto PDS service", async () => {
    web.didDocuments.set(web.didWeb, {
      id: web.didWeb,
      service: [{ id: "#atproto_labeler", type: "AtprotoLabeler", serviceEndpoint: web.origin }],
    });
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/names no atproto PDS/);

    web.didDocuments.set(web.didWeb, atprotoDidDocument("did:web:elsewhere.example", web.origin));
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is for did:web:elsewhere\.example/);

    web.didDocuments.delete(web.didWeb);
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/Resolving did:web:127\.0\.0\.1%3A\d+ .*HTTP 404/);
    expect(getRecordRequests()).toEqual([]);
  });

  it("refuses when the PDS has no such record (HTTP 404)", async () => {
    web.records.clear();
    const error = await rejection(resolver().resolve(NSID));
    expect(error.message).toMatch(/Fetching the lexicon record of com\.example\.calendar\.authFull .* answered HTTP 404/);
  });

  it("refuses a CAR whose record has another id, or is not a permission set", async () => {
    await publish(web.didWeb, NSID, permissionSetLexicon("com.example.calendar.other", PERMISSIONS));
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(
      /is not a com\.atproto\.lexicon\.schema record with id com\.example\.calendar\.authFull/,
    );

    await publish(web.didWeb, NSID, { lexicon: 1, id: NSID, defs: { main: { type: "query" } } });
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is not a permission set: defs\.main\.type/);
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);
  });

  it("refuses a CAR with a block whose bytes do not match its CID, and bytes that are not a CAR", async () => {
    await publish(web.didWeb, NSID, permissionSetLexicon(NSID, PERMISSIONS), { tamperRecord: true });
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is not a valid CAR file with one root and blocks matching their CIDs/);

    web.records.set(`${web.didWeb} ${NSID}`, new TextEncoder().encode("not a car file"));
    expect((await rejection(resolver().resolve(NSID))).message).toMatch(/is not a valid CAR file/);
  });

  it("caches: fresh for 15 minutes, stale-if-error up to 24 hours, then required; rows dropped after 90 days", async () => {
    const r = resolver();
    await r.resolve(NSID);
    expect(getRecordRequests()).toHaveLength(1);

    // Within 15 minutes: no DNS query, no HTTP request.
    const queriesBefore = dns.queries.length;
    const requestsBefore = web.requests.length;
    clock += 14 * MINUTE;
    expect((await r.resolve(NSID)).title).toBe("Calendar");
    expect(web.requests.length).toBe(requestsBefore);
    expect(dns.queries.length).toBe(queriesBefore);

    // After 16 minutes a refresh is tried; it succeeds and brings the new version.
    await publish(web.didWeb, NSID, permissionSetLexicon(NSID, PERMISSIONS, { title: "Calendar v2" }));
    clock += 2 * MINUTE;
    expect((await r.resolve(NSID)).title).toBe("Calendar v2");
    expect(getRecordRequests()).toHaveLength(2);
    const refreshedAt = clock;
    expect(await rowOf(shared.db, sql`SELECT "fetchedAt" FROM "PermissionSetCache" WHERE "nsid" = ${NSID}`)).toEqual({ fetchedAt: refreshedAt });

    // 16 minutes later with the PDS down: the cached copy is served, and the failure reported.
    web.down = true;
    clock = refreshedAt + 16 * MINUTE;
    expect((await r.resolve(NSID)).title).toBe("Calendar v2");
    expect(staleWarnings).toHaveLength(1);

    // 23 hours on, still down: still served.
    clock = refreshedAt + 23 * HOUR;
    expect((await r.resolve(NSID)).title).toBe("Calendar v2");

    // 25 hours on, still down: a refresh is required, and it fails.
    clock = refreshedAt + 25 * HOUR;
    const error = await rejection(r.resolve(NSID));
    expect(error.message).toMatch(/failed/);
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(1);

    // 91 days on: reading drops the row.
    clock = refreshedAt + 91 * DAY;
    await rejection(r.resolve(NSID));
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);

    // Back up: fetched again and cached anew.
    web.down = false;
    expect((await r.resolve(NSID)).title).toBe("Calendar v2");
    expect(await rowOf(shared.db, sql`SELECT "fetchedAt" FROM "PermissionSetCache" WHERE "nsid" = ${NSID}`)).toEqual({ fetchedAt: clock });
  });

  it("shares the cache between resolver instances (it is the database)", async () => {
    await resolver().resolve(NSID);
    web.down = true;
    clock += 5 * MINUTE;
    expect((await resolver().resolve(NSID)).title).toBe("Calendar");
  });

  it("makes one fetch for concurrent resolves of the same NSID", async () => {
    const r = resolver();
    const results = await Promise.all([r.resolve(NSID), r.resolve(NSID), r.resolve(NSID)]);
    expect(results.map((set) => set.title)).toEqual(["Calendar", "Calendar", "Calendar"]);
    expect(getRecordRequests()).toHaveLength(1);
  });

  it("without allowPrivate, refuses to fetch from loopback", async () => {
    const error = await rejection(resolver({ allowPrivate: false }).resolve(NSID));
    expect(error.message).toMatch(/must use https|non-public/);
    expect(web.requests).toEqual([]);
  });

  it("refuses an invalid NSID without any lookup", async () => {
    expect((await rejection(resolver().resolve("calendar"))).message).toMatch(/not a valid NSID/);
    expect(dns.queries).toEqual([]);
  });
});

describe("helpers", () => {
  it("nsidAuthority reverses the NSID less its name", () => {
    expect(nsidAuthority("com.example.calendar.authFull")).toBe("calendar.example.com");
    expect(nsidAuthority("App.Bsky.Feed.post")).toBe("feed.bsky.app");
  });
});
