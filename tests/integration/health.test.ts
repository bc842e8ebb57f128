/**
 * GET /xrpc/_health (docs/decisions/0014): 200 {"version"} while the
 * database answers, 503 in the XRPC error shape once it does not. The
 * database is broken for real, last: the test moves everything into the
 * main file (a WAL checkpoint), then overwrites the file's header, so the
 * server's next read fails at once (SQLITE_NOTADB) instead of waiting on a
 * lock. (SQLite does not recover that connection when the header is put
 * back; the server stays broken until the test stops it.)
 */
import { closeSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { scrape, valueOf } from "../helpers/prometheus.ts";

const VERSION = (JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8")) as { version: string }).version;

let server: TestServer;
let metricsPort: number;
beforeAll(async () => {
  metricsPort = await freePort();
  server = await startTestServer({ ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "3", ATRIUM_METRICS_PORT: String(metricsPort) });
});
afterAll(() => server?.stop());

describe("GET /xrpc/_health", () => {
  it("answers 200 with the package version, never cached, with CORS; HEAD too", async () => {
    const response = await fetch(`${server.issuer}/xrpc/_health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ version: VERSION });
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const head = await fetch(`${server.issuer}/xrpc/_health`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const preflight = await fetch(`${server.issuer}/xrpc/_health`, { method: "OPTIONS", headers: { Origin: "https://status.example", "Access-Control-Request-Method": "GET" } });
    expect(preflight.status).toBe(204);
  });

  it("is an exact route ahead of the /xrpc/ prefix: a POST is 405 in the XRPC shape, not a method lookup", async () => {
    const response = await fetch(`${server.issuer}/xrpc/_health`, { method: "POST" });
    expect(response.status).toBe(405);
    expect(await response.json()).toEqual({ error: "InvalidRequest", message: "Method not allowed; use GET, HEAD" });
  });

  it("is never rate limited (a load balancer polls it), while other /xrpc calls are", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await fetch(`${server.issuer}/xrpc/_health`)).status);
    expect(statuses.every((status) => status === 200)).toBe(true);
    const others: number[] = [];
    for (let i = 0; i < 5; i++) others.push((await fetch(`${server.issuer}/xrpc/com.atproto.server.describeServer`)).status);
    expect(others).toEqual([200, 200, 200, 429, 429]);
  });

  it("answers 503 in the XRPC error shape once the database does not answer, at once, and logs and counts it", async () => {
    const errorsBefore = valueOf(await scrape(metricsPort), "atrium_database_errors_total");
    const header = Buffer.alloc(16);
    // Everything into the main file, so that the server's next read goes to it.
    const db = new Database(server.databasePath);
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
    const fd = openSync(server.databasePath!, "r+");
    try {
      readSync(fd, header, 0, 16, 0);
      expect(header.toString("latin1")).toBe("SQLite format 3\0");
      writeSync(fd, Buffer.from("not a database!!"), 0, 16, 0);
      const started = Date.now();
      const broken = await fetch(`${server.issuer}/xrpc/_health`);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(broken.status).toBe(503);
      expect(broken.headers.get("content-type")).toBe("application/json");
      expect(broken.headers.get("retry-after")).toBe("5");
      expect(await broken.json()).toEqual({ error: "ServiceUnavailable", message: "The database does not answer", version: VERSION });
    } finally {
      closeSync(fd);
    }

    expect(valueOf(await scrape(metricsPort), "atrium_database_errors_total")).toBe(errorsBefore + 1);
    const line = (await server.printed("Health check failed"))
      .split("\n")
      .find((candidate) => candidate.includes("Health check failed"));
    expect(line).toBeDefined();
    const logged = JSON.parse(line!) as { level: string; err: { type: string; code: string; stack: string } };
    expect(logged.level).toBe("error");
    expect(logged.err).toMatchObject({ type: "SqliteError", code: "SQLITE_NOTADB", stack: expect.stringContaining("\n    at ") });
  });
});
