/**
 * The hardened fetch of client metadata documents (docs/architecture.md, "Client metadata"), driven
 * through the real PAR endpoint: a client_id that names a non-https URL, a
 * loopback/private/link-local address or a name resolving to one is refused
 * at once (400 invalid_client_metadata, never a 500, never a connection
 * attempt, never a wait for a timeout); a document host that redirects,
 * sends too much, is too slow or sends something other than JSON is refused
 * the same way.
 */
import dns from "node:dns/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey, type HttpResult } from "../../scripts/lib/dpop-client.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { SCOPE, type OAuthErrorBody } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/** The hardened fetch gives up on a client document after 10 s (docs/architecture.md, "Client metadata"). */
const FETCH_TIMEOUT_MS = 10_000;

/** A PAR for `clientId` with a valid DPoP proof and the current nonce; returns the answer and how long it took. */
async function pushFor(server: TestServer, clientId: string, redirectUri = "https://app.example.com/callback") {
  const client = new DpopClient(server.issuer, await generateDpopKey(), clientId);
  // Prime the nonce so the timed request is the one that reaches the client_id check.
  await client.pushAuthorizationRequest({});
  const pkce = createPkce();
  const started = performance.now();
  const result = await client.pushAuthorizationRequest({
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: "hardening-state",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  return { result, ms: performance.now() - started };
}

function expectInvalidClientMetadata(result: HttpResult<unknown>, context: string) {
  const body = result.body as OAuthErrorBody;
  expect({ context, status: result.status, contentType: result.headers.get("content-type"), error: body?.error }).toEqual({
    context,
    status: 400,
    contentType: expect.stringContaining("application/json"),
    error: "invalid_client_metadata",
  });
  expect(typeof body.error_description).toBe("string");
}

/**
 * Plain TCP listeners on port 443 of both loopback addresses: any connection
 * arriving there means the server tried to fetch a loopback client_id. (Only
 * available when the test may bind port 443; otherwise the timing bound
 * below still catches attempts that would wait for a timeout.)
 */
type Tripwire = { connections: string[]; close(): Promise<void>; armed: string[] };

async function startTripwire(): Promise<Tripwire> {
  const connections: string[] = [];
  const servers: net.Server[] = [];
  const armed: string[] = [];
  for (const host of ["127.0.0.1", "::1"]) {
    const server = net.createServer((socket) => {
      connections.push(`${host} from ${socket.remoteAddress}`);
      socket.destroy();
    });
    const ok = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(443, host, () => resolve(true));
    });
    if (ok) {
      servers.push(server);
      armed.push(host);
    }
  }
  return {
    connections,
    armed,
    close: async () => {
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    },
  };
}

describe("client_id documents on a production server (no dev flag)", () => {
  let server: TestServer;
  let tripwire: Tripwire;

  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "0" });
    tripwire = await startTripwire();
  });
  afterAll(async () => {
    await tripwire?.close();
    await server?.stop();
  });

  const refusedAtOnce: Array<[string, string]> = [
    ["plain http", "http://example.com/client-metadata.json"],
    ["IPv4 loopback", "https://127.0.0.1/x.json"],
    ["IPv4 loopback with a port", "https://127.0.0.1:8443/x.json"],
    ["IPv6 loopback", "https://[::1]/x.json"],
    ["RFC 1918 10/8", "https://10.0.0.1/x.json"],
    ["RFC 1918 172.16/12", "https://172.16.0.1/x.json"],
    ["RFC 1918 192.168/16", "https://192.168.1.1/x.json"],
    ["link-local (cloud metadata)", "https://169.254.169.254/x.json"],
    ["carrier-grade NAT 100.64/10", "https://100.64.0.1/x.json"],
    ["unspecified 0.0.0.0", "https://0.0.0.0/x.json"],
    ["IPv6 unique local", "https://[fd00::1]/x.json"],
    ["IPv6 link-local", "https://[fe80::1]/x.json"],
    ["IPv6 unspecified", "https://[::]/x.json"],
    ["IPv4-mapped IPv6 loopback (as written)", "https://[::ffff:127.0.0.1]/x.json"],
    ["IPv4-mapped IPv6 loopback (normalized)", "https://[::ffff:7f00:1]/x.json"],
    ["IPv4-mapped IPv6 metadata address (normalized)", "https://[::ffff:a9fe:a9fe]/x.json"],
    ["NAT64 of loopback", "https://[64:ff9b::7f00:1]/x.json"],
    ["localhost", "https://localhost/x.json"],
    ["localhost. (fully qualified, resolved by DNS)", "https://localhost./x.json"],
    ["file: URL", "file:///etc/passwd"],
    ["data: URL", "data:application/json,{}"],
  ];

  for (const [label, clientId] of refusedAtOnce) {
    it(`refuses ${label} (${clientId}): 400 invalid_client_metadata, fast`, async () => {
      const { result, ms } = await pushFor(server, clientId);
      expectInvalidClientMetadata(result, clientId);
      // Refused before any connection: never the 10 s fetch timeout that a connection attempt could run into.
      expect(ms, `${clientId} took ${ms.toFixed(0)} ms`).toBeLessThan(FETCH_TIMEOUT_MS);
    });
  }

  it("refuses this machine's own host name when it resolves to a non-public address", async () => {
    const name = os.hostname();
    const addresses = await dns.lookup(name, { all: true }).catch(() => []);
    const { result, ms } = await pushFor(server, `https://${name.toLowerCase()}/x.json`);
    expect(result.status, "never a 5xx").toBeLessThan(500);
    if (addresses.length > 0 && addresses.every(({ address }) => /^(127\.|10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|::1$|f[cd]|fe80)/i.test(address))) {
      expectInvalidClientMetadata(result, `${name} → ${addresses.map((entry) => entry.address).join(", ")}`);
      expect(ms).toBeLessThan(FETCH_TIMEOUT_MS);
    }
  });

  it("never opened a connection to a loopback address for any of the refused client_ids", () => {
    // Meaningful only where port 443 could be bound (root in CI containers); empty otherwise.
    console.log(`loopback :443 tripwire armed on: ${tripwire.armed.join(", ") || "(none: port 443 not bindable)"}`);
    expect(tripwire.connections).toEqual([]);
  });

  it("logged no unexpected error for any of these refusals", () => {
    expect(server.output()).not.toMatch(/Unexpected error while handling a request/);
  });
});

type HostRoute = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A node:http server on 127.0.0.1 with one handler per path and a hit counter. */
class DocumentHost {
  readonly hits = new Map<string, number>();
  private readonly routes = new Map<string, HostRoute>();
  private readonly timers = new Set<NodeJS.Timeout>();
  origin = "";
  private server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
    const route = this.routes.get(path);
    if (!route) {
      res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    route(req, res);
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", () => resolve()));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  route(path: string, handler: HostRoute): string {
    this.routes.set(path, handler);
    return `${this.origin}${path}`;
  }

  later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  /** A valid metadata document for the client_id `clientId`, served from this host. */
  document(clientId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      client_id: clientId,
      client_name: "Hardening Test App",
      dpop_bound_access_tokens: true,
      redirect_uris: [`${this.origin}/callback`],
      scope: SCOPE,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      application_type: "web",
      token_endpoint_auth_method: "none",
      ...extra,
    };
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe("client_id documents from a misbehaving host (dev flag on, loopback host)", () => {
  let server: TestServer;
  let host: DocumentHost;

  beforeAll(async () => {
    server = await startTestServer();
    host = new DocumentHost();
    await host.start();
  });
  afterAll(async () => {
    await host?.stop();
    await server?.stop();
  });

  const push = (clientId: string) => pushFor(server, clientId, `${host.origin}/callback`);

  it("accepts a well-behaved host (control): 201", async () => {
    const clientId = `${host.origin}/valid.json`;
    host.route("/valid.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(host.document(clientId)));
    });
    const { result } = await push(clientId);
    expect({ status: result.status, body: result.body }).toMatchObject({ status: 201, body: { request_uri: expect.any(String) } });
  });

  it("refuses a redirect (302) to a valid document, and never follows it", async () => {
    const clientId = `${host.origin}/redirect.json`;
    host.route("/redirect.json", (_req, res) => {
      res.writeHead(302, { Location: `${host.origin}/redirect-target.json` }).end();
    });
    host.route("/redirect-target.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(host.document(clientId)));
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "302");
    expect(host.hits.get("/redirect-target.json") ?? 0).toBe(0);
  });

  it("refuses an oversized document (> 512 KiB, with Content-Length)", async () => {
    const clientId = `${host.origin}/big.json`;
    const body = JSON.stringify(host.document(clientId, { padding: "x".repeat(600 * 1024) }));
    host.route("/big.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) }).end(body);
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "oversized");
  });

  it("refuses an endless chunked document quickly, and stops reading it", async () => {
    const clientId = `${host.origin}/endless.json`;
    let sent = 0;
    let closed = false;
    let connectionClosed!: () => void;
    const dropped = new Promise<void>((resolve) => (connectionClosed = resolve));
    host.route("/endless.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(`{"client_id":${JSON.stringify(clientId)},"padding":"`);
      const chunk = "y".repeat(64 * 1024);
      const pump = () => {
        while (!closed && sent < 64 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
      };
      res.on("close", () => {
        closed = true;
        connectionClosed();
      });
      pump();
    });
    const { result, ms } = await push(clientId);
    expectInvalidClientMetadata(result, "endless");
    // Refused at the size cap, not at the 10 s fetch timeout.
    expect(ms).toBeLessThan(FETCH_TIMEOUT_MS);
    // The server drops the connection once the cap is reached (the test would time out waiting otherwise).
    await dropped;
    expect(sent).toBeLessThan(16 * 1024 * 1024);
  });

  // These two wait the fetch timeout out, each on its own route: at once, not one after the other.
  it.concurrent("refuses a document that answers after 12 s (fetch timeout 10 s)", async () => {
    const clientId = `${host.origin}/slow.json`;
    host.route("/slow.json", (_req, res) => {
      host.later(12_000, () => {
        if (!res.destroyed) res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(host.document(clientId)));
      });
    });
    const { result, ms } = await push(clientId);
    // Had the server waited, the document would have arrived whole and valid at 12 s.
    expectInvalidClientMetadata(result, "slow");
    expect(ms).toBeGreaterThan(9_000);
  });

  it.concurrent("refuses a document whose body trickles in for 12 s after prompt headers (the timeout covers the body)", async () => {
    const clientId = `${host.origin}/trickle.json`;
    const body = JSON.stringify(host.document(clientId));
    host.route("/trickle.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      const step = Math.ceil(body.length / 24);
      let offset = 0;
      const next = () => {
        if (res.destroyed) return;
        res.write(body.slice(offset, offset + step));
        offset += step;
        if (offset >= body.length) res.end();
        else host.later(500, next);
      };
      next();
    });
    const { result } = await push(clientId);
    // Had the timeout not covered the body, the document would have arrived whole and valid after 12 s.
    expectInvalidClientMetadata(result, "trickle");
  });

  it("refuses a document served as text/html", async () => {
    const clientId = `${host.origin}/html.json`;
    host.route("/html.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(JSON.stringify(host.document(clientId)));
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "text/html");
  });

  it("refuses a document without any Content-Type", async () => {
    const clientId = `${host.origin}/untyped.json`;
    host.route("/untyped.json", (_req, res) => {
      res.writeHead(200).end(JSON.stringify(host.document(clientId)));
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "no content-type");
  });

  it("refuses a body that is not JSON (served as application/json)", async () => {
    const clientId = `${host.origin}/not-json.json`;
    host.route("/not-json.json", (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" }).end(`{"client_id": ${JSON.stringify(clientId)}, oops`);
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "not JSON");
  });

  it("refuses JSON that is not an object (an array, a string, null)", async () => {
    for (const [path, text] of [["/array.json", "[]"], ["/string.json", '"hello"'], ["/null.json", "null"]] as const) {
      const clientId = host.route(path, (_req, res) => {
        res.writeHead(200, { "Content-Type": "application/json" }).end(text);
      });
      const { result } = await push(clientId);
      expectInvalidClientMetadata(result, text);
    }
  });

  it("refuses answers other than 200 (204, 404, 500), never passing on a 5xx", async () => {
    for (const status of [204, 404, 500]) {
      const clientId = host.route(`/status-${status}.json`, (_req, res) => {
        res.writeHead(status, { "Content-Type": "application/json" }).end(status === 204 ? undefined : JSON.stringify(host.document(`${host.origin}/status-${status}.json`)));
      });
      const { result } = await push(clientId);
      expectInvalidClientMetadata(result, `HTTP ${status}`);
    }
  });

  it("refuses a host that resets the connection", async () => {
    const clientId = host.route("/reset.json", (req) => {
      req.socket.destroy();
    });
    const { result } = await push(clientId);
    expectInvalidClientMetadata(result, "reset");
  });

  it("fetched each refused document once per PAR (no retries, no redirect following)", () => {
    for (const path of ["/redirect.json", "/big.json", "/slow.json", "/html.json", "/not-json.json"]) {
      expect({ path, hits: host.hits.get(path) }).toEqual({ path, hits: 1 });
    }
  });

  it("logged no unexpected error for any of these refusals", () => {
    expect(server.output()).not.toMatch(/Unexpected error while handling a request/);
  });
});

describe("the client metadata cache stays small whatever clients publish", () => {
  let server: TestServer;
  let host: DocumentHost;
  const MAX_ENTRIES = 12;

  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_CLIENT_CACHE_MAX_ENTRIES: String(MAX_ENTRIES) });
    host = new DocumentHost();
    await host.start();
  });
  afterAll(async () => {
    await host?.stop();
    await server?.stop();
  });

  /** The cached entries, oldest first, with the byte length of what is stored (UTF-8, as `size` counts it). */
  const cache = async () =>
    (await rowsOf<{ clientId: string; size: number; metadata: string }>(server.database(), sql`SELECT "clientId", "size", "metadata" FROM "Client" ORDER BY "fetchedAt"`)).map(
      ({ clientId, size, metadata }) => ({ clientId, size, length: Buffer.byteLength(metadata, "utf8") }),
    );

  /** Serves a ~500 KB document (valid, padded, with a huge name) at a new client_id. */
  function paddedClient(i: number, extra: Record<string, unknown> = {}): string {
    const clientId = `${host.origin}/padded-${i}.json`;
    const body = JSON.stringify(host.document(clientId, { client_name: `App ${i} ${"n".repeat(100_000)}`, padding: "x".repeat(400 * 1024), ...extra }));
    host.route(`/padded-${i}.json`, (_req, res) => res.writeHead(200, { "Content-Type": "application/json" }).end(body));
    return clientId;
  }

  it("30 invalid PARs at once, each naming a new ~500 KB document: each cached entry holds only what validation kept", async () => {
    const clientIds = Array.from({ length: 30 }, (_, i) => paddedClient(i));
    // Each PAR is refused (a redirect_uri the client never declared) after its document was fetched and validated.
    const results = await Promise.all(clientIds.map((clientId) => pushFor(server, clientId, "https://elsewhere.example/callback")));
    for (const { result } of results) expect((result.body as OAuthErrorBody).error).toBe("invalid_request");
    const rows = await cache();
    expect(rows.length).toBeLessThanOrEqual(MAX_ENTRIES);
    for (const row of rows) {
      expect(row.size).toBe(row.length);
      expect(row.size).toBeLessThan(2048);
    }
    const stored = (await rowOf<{ metadata: string }>(server.database(), sql`SELECT "metadata" FROM "Client" LIMIT 1`))!;
    expect(stored.metadata).not.toContain("xxxxxxxx");
    const { client } = JSON.parse(stored.metadata) as { client: { clientName: string } };
    expect([...client.clientName].length).toBeLessThanOrEqual(100);
  });

  it("documents that do not validate are never cached", async () => {
    const before = (await cache()).map((row) => row.clientId);
    const invalid = [
      paddedClient(100, { dpop_bound_access_tokens: false }),
      paddedClient(101, { scope: `atproto ${"repo:com.example.x ".repeat(300)}` }),
      paddedClient(102, { redirect_uris: Array.from({ length: 11 }, (_, i) => `${host.origin}/callback-${i}`) }),
    ];
    const results = await Promise.all(invalid.map((clientId) => pushFor(server, clientId, `${host.origin}/callback`)));
    for (const { result } of results) expectInvalidClientMetadata(result, "invalid padded document");
    const after = (await cache()).map((row) => row.clientId);
    for (const clientId of invalid) expect(after).not.toContain(clientId);
    expect(after.filter((clientId) => !before.includes(clientId))).toEqual([]);
  });

  it("past the entry cap the oldest entries are evicted first", async () => {
    const first = paddedClient(200);
    await pushFor(server, first, `${host.origin}/callback`);
    const newer = Array.from({ length: MAX_ENTRIES }, (_, i) => paddedClient(300 + i));
    for (const clientId of newer) await pushFor(server, clientId, `${host.origin}/callback`);
    const rows = (await cache()).map((row) => row.clientId);
    expect(rows).toHaveLength(MAX_ENTRIES);
    expect(rows).not.toContain(first);
    expect(rows).toEqual(newer);
  });
});

describe("the client metadata cache's byte cap", () => {
  let server: TestServer;
  let host: DocumentHost;

  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_CLIENT_CACHE_MAX_BYTES: String(64 * 1024) });
    host = new DocumentHost();
    await host.start();
  });
  afterAll(async () => {
    await host?.stop();
    await server?.stop();
  });

  it("keeps the total stored size under ATRIUM_CLIENT_CACHE_MAX_BYTES, evicting the oldest", async () => {
    // Confidential clients with 20 inline keys: the largest entries validation lets through.
    const keys = Array.from({ length: 25 }, (_, i) => ({ kty: "EC", crv: "P-256", x: "A".repeat(43), y: "B".repeat(43), kid: `k${i}-${"k".repeat(200)}`, alg: "ES256", use: "sig" }));
    for (let i = 0; i < 20; i++) {
      const clientId = `${host.origin}/keys-${i}.json`;
      const body = JSON.stringify(host.document(clientId, { token_endpoint_auth_method: "private_key_jwt", token_endpoint_auth_signing_alg: "ES256", jwks: { keys } }));
      host.route(`/keys-${i}.json`, (_req, res) => res.writeHead(200, { "Content-Type": "application/json" }).end(body));
      await pushFor(server, clientId, `${host.origin}/callback`);
    }
    const { total, entries } = (await rowOf<{ total: number; entries: number }>(server.database(), sql`SELECT SUM("size") AS "total", COUNT(*) AS "entries" FROM "Client"`))!;
    expect(total).toBeLessThanOrEqual(64 * 1024);
    expect(entries).toBeGreaterThan(1);
    expect(entries).toBeLessThan(20);
    const newest = (await rowOf<{ clientId: string }>(server.database(), sql`SELECT "clientId" FROM "Client" ORDER BY "fetchedAt" DESC LIMIT 1`))!;
    expect(newest.clientId).toBe(`${host.origin}/keys-19.json`);
  });
});
