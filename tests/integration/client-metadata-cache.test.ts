/**
 * The client metadata cache (docs/architecture.md, "Client metadata") stays small whatever clients publish: what is
 * stored is what validation kept, documents that do not validate are never stored, and the entry and byte caps evict
 * the oldest first. On both engines (the fetch itself: client-fetch-hardening.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { DocumentHost, expectInvalidClientMetadata, pushFor } from "../helpers/client-documents.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import type { OAuthErrorBody } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

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
