import type net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawExchange } from "../helpers/raw-http.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * The API entry (server/api-server.ts) serves the JSON endpoints ahead of
 * Express. What Express did for them must still hold: headers, CORS, limits
 * by the real client address, bounded bodies, and JSON errors everywhere.
 */

describe("the API entry", () => {
  let server: TestServer;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "3" });
    port = Number(new URL(server.issuer).port);
  });
  afterAll(() => server?.stop());

  it("an unknown /.well-known document is a JSON 404 with CORS and nosniff, not an HTML page", async () => {
    const response = await fetch(`${server.issuer}/.well-known/no-such-document`);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await response.json()).toMatchObject({ error: "invalid_request", error_description: expect.any(String) });
  });

  it("API answers carry no page policy (no CSP nonce work), screens keep theirs", async () => {
    const api = await fetch(`${server.issuer}/.well-known/oauth-authorization-server`);
    expect(api.status).toBe(200);
    expect(api.headers.get("content-security-policy")).toBeNull();
    expect(api.headers.get("referrer-policy")).toBe("no-referrer");
    const page = await fetch(`${server.issuer}/`);
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self' 'nonce-/);
    expect(page.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("X-Forwarded-For does not dodge the per-address limit unless ATRIUM_TRUST_PROXY says a proxy sets it", async () => {
    const post = (forwardedFor: string) =>
      fetch(`${server.issuer}/oauth/par`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": forwardedFor },
        body: "client_id=x",
      });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await post(`203.0.113.${i + 1}`)).status);
    // Three counted (refused for the missing proof: 400), then the limit, whatever address each claimed.
    expect(statuses).toEqual([400, 400, 400, 429, 429]);
  });

  /** Writes a chunked POST of `chunks` × 64 KiB to /oauth/token, then (if asked) a GET on the same connection. */
  const chunkedPost = (socket: net.Socket, chunks: number, then?: string) => {
    const chunk = "x".repeat(64 * 1024);
    socket.write("POST /oauth/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n");
    const send = (left: number) => {
      if (socket.destroyed) return;
      if (left === 0) {
        socket.write("0\r\n\r\n");
        if (then) socket.write(then);
        return;
      }
      socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`, () => send(left - 1));
    };
    send(chunks);
  };

  it("a chunked body over the limit is refused with 413, its rest discarded, and the connection carries the next request", async () => {
    // 4 MiB, four times the body limit: 413 in the endpoint's shape (never its first MiB parsed as the whole form:
    // issue 28, item 9), and the keep-alive connection survives.
    const bothAnswered = (received: string) => (received.match(/HTTP\/1\.1 \d{3} /g) ?? []).length === 2 && received.endsWith('{"keys":[]}');
    const { text } = await rawExchange(port, (socket) => chunkedPost(socket, 64, "GET /oauth/jwks HTTP/1.1\r\nHost: localhost\r\n\r\n"), 6000, bothAnswered);
    const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
    expect(statuses).toEqual([413, 200]);
    expect(text).toContain('{"error":"invalid_request","error_description":"Request body larger than 1048576 bytes"}');
  });

  it("a chunked body beyond what is ever drained (16 MiB) gets the connection cut, and the server is unharmed", async () => {
    const { closedByServer } = await rawExchange(port, (socket) => chunkedPost(socket, 20 * 16), 15000);
    expect(closedByServer).toBe(true);
    expect((await fetch(`${server.issuer}/oauth/jwks`)).status).toBe(200);
  });
});

describe("the API entry behind a trusted proxy (ATRIUM_TRUST_PROXY)", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "2", ATRIUM_TRUST_PROXY: "1" });
  });
  afterAll(() => server?.stop());

  it("counts the address the proxy appended (right-most X-Forwarded-For), whatever the client wrote before it", async () => {
    const post = (forwardedFor: string) =>
      fetch(`${server.issuer}/oauth/par`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": forwardedFor },
        body: "client_id=x",
      });
    const first = [];
    for (let i = 0; i < 3; i++) first.push((await post(`203.0.113.${i + 1}, 198.51.100.1`)).status);
    expect(first).toEqual([400, 400, 429]);
    expect((await post("198.51.100.1, 198.51.100.2")).status).toBe(400);
  });
});
