import http from "node:http";
import type { AddressInfo } from "node:net";
import { P256Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { registerPlcService } from "../../../tests/helpers/service-stand-in.ts";
import { HOUR, MINUTE } from "../util/time.ts";
import { serviceEndpointOf } from "./did-document.ts";
import { DidResolutionError, DidResolver, didWebHost, type DidResolverOptions } from "./did-resolver.ts";

/** The test run's real PLC directory (tests/helpers/postgres-global-setup.ts). */
const PLC_DIRECTORY = inject("plcDirectoryUrl");

/**
 * One loopback server plays a did:web host (/.well-known/did.json) and, in front of the real PLC directory, counts
 * what the resolver asks it (GET /<did> is passed on to the directory).
 */
type Host = {
  origin: string;
  did: string;
  document: unknown;
  /** Every path asked, in order. */
  requests: string[];
  down: boolean;
  close(): Promise<void>;
};

async function startHost(): Promise<Host> {
  const host = { requests: [] as string[], down: false } as Host;
  const server = http.createServer((req, res) => {
    if (host.down) return void req.socket.destroy();
    host.requests.push(req.url ?? "");
    if (req.url === "/.well-known/did.json") {
      const body = typeof host.document === "string" ? host.document : JSON.stringify(host.document);
      res.writeHead(host.document === undefined ? 404 : 200, { "content-type": "application/json" }).end(host.document === undefined ? "{}" : body);
      return;
    }
    void fetch(`${PLC_DIRECTORY}${req.url}`).then(async (answer) => {
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  host.origin = `http://127.0.0.1:${port}`;
  host.did = `did:web:127.0.0.1%3A${port}`;
  host.close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  };
  return host;
}

const webDocument = (did: string, endpoint: string) => ({ id: did, service: [{ id: "#svc", type: "ExampleService", serviceEndpoint: endpoint }] });

async function rejection(promise: Promise<unknown>): Promise<DidResolutionError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(DidResolutionError);
    return error as DidResolutionError;
  }
  throw new Error("expected the promise to reject");
}

describe("DidResolver", () => {
  let host: Host;
  let clock: number;
  let stale: string[];

  beforeAll(async () => {
    host = await startHost();
  });
  afterAll(async () => {
    await host.close();
  });
  beforeEach(() => {
    clock = Date.parse("2026-03-01T12:00:00Z");
    stale = [];
    host.down = false;
    host.requests.length = 0;
    host.document = webDocument(host.did, "https://svc.example.com");
  });

  /** The PLC directory is reached through the counting host. */
  function resolver(options: Partial<DidResolverOptions> = {}): DidResolver {
    return new DidResolver({ plcDirectoryUrl: host.origin, allowPrivate: true, now: () => clock, onStaleServed: (did) => stale.push(did), ...options });
  }

  it("resolves a did:web from its host and a did:plc from the PLC directory", async () => {
    const r = resolver();
    const web = await r.resolve(host.did);
    expect(serviceEndpointOf(web, "svc")).toBe("https://svc.example.com");
    const did = await registerPlcService(PLC_DIRECTORY, { bsky_appview: { type: "BskyAppView", endpoint: "https://appview.example.com" } });
    const document = await r.resolve(did);
    expect(document.id).toBe(did);
    expect(serviceEndpointOf(document, "bsky_appview")).toBe("https://appview.example.com");
    expect(serviceEndpointOf(document, "atproto_pds")).toBeUndefined();
    expect(host.requests).toEqual(["/.well-known/did.json", `/${did}`]);
  });

  it("serves a document for an hour, then fetches it again and sees the change", async () => {
    const rotation = await P256Keypair.create({ exportable: false });
    const genesis = await plc.signOperation(
      { type: "plc_operation", verificationMethods: {}, rotationKeys: [rotation.did()], alsoKnownAs: [], services: { svc: { type: "S", endpoint: "https://one.example.com" } }, prev: null },
      rotation,
    );
    const did = await plc.didForCreateOp(genesis);
    const directory = new plc.Client(PLC_DIRECTORY);
    await directory.sendOperation(did, genesis);
    const r = resolver();
    expect(serviceEndpointOf(await r.resolve(did), "svc")).toBe("https://one.example.com");

    const update = await plc.createUpdateOp(genesis, rotation, (op) => ({ ...op, services: { svc: { type: "S", endpoint: "https://two.example.com" } } }));
    await directory.sendOperation(did, update);
    clock += 59 * MINUTE;
    expect(serviceEndpointOf(await r.resolve(did), "svc")).toBe("https://one.example.com");
    expect(host.requests.filter((path) => path === `/${did}`)).toHaveLength(1);
    clock += 2 * MINUTE;
    expect(serviceEndpointOf(await r.resolve(did), "svc")).toBe("https://two.example.com");
    expect(host.requests.filter((path) => path === `/${did}`)).toHaveLength(2);
  });

  it("while fetching again fails, serves the old document for up to a day (and says so); after that, the failure", async () => {
    const r = resolver();
    await r.resolve(host.did);
    host.down = true;
    clock += 2 * HOUR;
    expect(serviceEndpointOf(await r.resolve(host.did), "svc")).toBe("https://svc.example.com");
    expect(stale).toEqual([host.did]);
    clock += 21 * HOUR;
    await r.resolve(host.did);
    clock += 2 * HOUR;
    expect((await rejection(r.resolve(host.did))).message).toMatch(/Resolving did:web:127\.0\.0\.1%3A\d+ failed/);
    expect(r.cached().entries).toBe(0);
  });

  it("keeps at most maxEntries documents, the oldest fetched dropped first", async () => {
    const dids = await Promise.all([1, 2, 3, 4].map((n) => registerPlcService(PLC_DIRECTORY, { svc: { type: "S", endpoint: `https://s${n}.example.com` } })));
    const r = resolver({ maxEntries: 3 });
    for (const did of dids) await r.resolve(did);
    expect(r.cached().entries).toBe(3);
    host.requests.length = 0;
    // The three newest are served from memory; the first was dropped and is fetched again.
    for (const did of dids.slice(1)) await r.resolve(did);
    expect(host.requests).toEqual([]);
    await r.resolve(dids[0]!);
    expect(host.requests).toEqual([`/${dids[0]}`]);
    expect(r.cached().entries).toBe(3);
  });

  it("keeps at most maxBytes of documents", async () => {
    const dids = await Promise.all([1, 2, 3, 4, 5].map((n) => registerPlcService(PLC_DIRECTORY, { svc: { type: "S", endpoint: `https://s${n}.example.com` } })));
    const r = resolver();
    await r.resolve(dids[0]!);
    const one = r.cached().bytes;
    const bounded = resolver({ maxBytes: Math.floor(one * 2.5) });
    for (const did of dids) await bounded.resolve(did);
    expect(bounded.cached()).toEqual({ entries: 2, bytes: expect.any(Number) });
    expect(bounded.cached().bytes).toBeLessThanOrEqual(Math.floor(one * 2.5));
  });

  it("does not remember a DID that does not resolve", async () => {
    host.document = undefined;
    const r = resolver();
    expect((await rejection(r.resolve(host.did))).message).toMatch(/answered HTTP 404/);
    host.document = webDocument(host.did, "https://svc.example.com");
    expect(serviceEndpointOf(await r.resolve(host.did), "svc")).toBe("https://svc.example.com");
  });

  it("makes one fetch for concurrent resolutions of one DID", async () => {
    const r = resolver();
    await Promise.all([r.resolve(host.did), r.resolve(host.did), r.resolve(host.did)]);
    expect(host.requests).toEqual(["/.well-known/did.json"]);
  });

  it("refuses a document for another DID, one that is malformed or too large, and DIDs it cannot resolve, without a request for those", async () => {
    host.document = webDocument("did:web:elsewhere.example", "https://svc.example.com");
    expect((await rejection(resolver().resolve(host.did))).message).toMatch(/is for did:web:elsewhere\.example/);
    host.document = { id: host.did, service: "not a list" };
    expect((await rejection(resolver().resolve(host.did))).message).toMatch(/is malformed/);
    host.document = JSON.stringify({ ...webDocument(host.did, "https://svc.example.com"), padding: "x".repeat(70 * 1024) });
    expect((await rejection(resolver().resolve(host.did))).message).toMatch(/larger than 65536 bytes/);
    host.requests.length = 0;
    for (const did of ["did:example:123", "did:web:example.com:user:alice", "did:plc:tooshort", `did:web:${"a".repeat(3000)}.com`]) {
      expect((await rejection(resolver().resolve(did))).message).toMatch(/cannot be resolved/);
    }
    expect(host.requests).toEqual([]);
  });

  it("without allowPrivate, refuses a did:web on a loopback address before any request, and still reads the operator's PLC directory", async () => {
    const r = resolver({ allowPrivate: false });
    expect((await rejection(r.resolve(host.did))).message).toMatch(/non-public address/);
    expect((await rejection(r.resolve("did:web:localhost"))).message).toMatch(/non-public address/);
    expect(host.requests).toEqual([]);
    const did = await registerPlcService(PLC_DIRECTORY, { svc: { type: "S", endpoint: "https://svc.example.com" } });
    expect((await r.resolve(did)).id).toBe(did);
  });
});

describe("didWebHost", () => {
  it.each([
    ["did:web:example.com", "example.com"],
    ["did:web:127.0.0.1%3A8080", "127.0.0.1:8080"],
    ["did:web:localhost%3a3000", "localhost:3000"],
    ["did:web:example.com:user:alice", undefined],
    ["did:web:exa_mple.com", undefined],
    ["did:web:example..com", undefined],
    ["did:web:0x7f000001", undefined],
    ["did:plc:abcdefghijklmnopqrstuvwx", undefined],
  ])("didWebHost(%s) is %s", (did, host) => {
    expect(didWebHost(did)).toBe(host);
  });
});

