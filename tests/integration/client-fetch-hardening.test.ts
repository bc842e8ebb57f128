/**
 * The hardened fetch of client metadata documents (docs/architecture.md, "Client metadata"), driven
 * through the real PAR endpoint: a client_id that names a non-https URL, a
 * loopback/private/link-local address or a name resolving to one is refused
 * at once (400 invalid_client_metadata, never a 500, never a connection
 * attempt, never a wait for a timeout); a document host that redirects,
 * sends too much, is too slow or sends something other than JSON is refused
 * the same way. What this file checks is decided in the fetch, whatever the database under it, so it runs on SQLite
 * only (vitest.config.ts); what the cache stores is client-metadata-cache.test.ts, on both engines.
 */
import dns from "node:dns/promises";
import net from "node:net";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DocumentHost, expectInvalidClientMetadata, pushFor } from "../helpers/client-documents.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/** The hardened fetch gives up on a client document after 10 s (docs/architecture.md, "Client metadata"). */
const FETCH_TIMEOUT_MS = 10_000;

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
