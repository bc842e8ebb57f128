import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawExchange } from "../helpers/raw-http.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * What the entry (server.ts) does before any route sees a request: request
 * targets that are not for this server (RFC 9112 §3.2) and clients that never
 * finish their headers. Sent as raw bytes, many connections at once.
 */

describe("request targets and slow headers", () => {
  let server: TestServer;
  let port: number;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_REQUEST_TIMEOUT_SECONDS: "2" });
    port = server.port;
  });
  afterAll(() => server?.stop());

  /** One request line plus headers on its own connection; the answer once the server closes it. */
  const send = (requestLine: string, headers = "Host: localhost\r\n") => rawExchange(port, (socket) => socket.write(`${requestLine}\r\n${headers}\r\n`), 5000);

  it("absolute-form, asterisk-form and authority-form targets get a short plain 400, and nothing alarming is logged", async () => {
    const targets = [
      "GET http://evil/oauth/par HTTP/1.1",
      "POST http://evil.example/oauth/token HTTP/1.1",
      "GET http://evil.example/account HTTP/1.1",
      `GET https://localhost:${port}/oauth/jwks HTTP/1.1`,
      `GET http://user:pw@localhost:${port}/oauth/jwks HTTP/1.1`,
      "GET ftp://evil.example/ HTTP/1.1",
      "OPTIONS * HTTP/1.1",
      "GET * HTTP/1.1",
      "CONNECT evil.example:443 HTTP/1.1",
      "GET evil.example:443 HTTP/1.1",
    ];
    // Each target three times, all at once.
    const answers = await Promise.all([...targets, ...targets, ...targets].map((line) => send(line, "Host: evil.example\r\nContent-Length: 0\r\n")));
    answers.forEach(({ text, closedByServer }, i) => {
      const line = targets[i % targets.length]!;
      expect(text, line).toMatch(/^HTTP\/1\.1 400 /);
      expect(closedByServer, line).toBe(true);
      // Node's own parser refuses the authority-form outside CONNECT with an empty 400; every other refusal is ours.
      if (!line.startsWith("GET evil.example:443")) expect(text, line).toContain("the request target must be a path on this server");
    });
    // The server is unharmed and said nothing about it (it used to answer 500 and print a stack trace).
    expect((await fetch(`${server.issuer}/oauth/jwks`)).status).toBe(200);
    expect(server.output()).not.toMatch(/error|\n\s+at /i);
  });

  it("an absolute-form target naming this server is served as its path (RFC 9112 §3.2.2)", async () => {
    const api = await send(`GET ${server.issuer}/oauth/jwks HTTP/1.1`, "Host: evil.example\r\nConnection: close\r\n");
    expect(api.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(api.text).toContain('{"keys":[]}');
    const screen = await send(`GET ${server.issuer}/account HTTP/1.1`, "Host: evil.example\r\nConnection: close\r\n");
    expect(screen.text).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("connections that never finish their headers are cut off soon after the request timeout, many at once", async () => {
    // ATRIUM_REQUEST_TIMEOUT_SECONDS=2 lowers the headers timeout to 2 s; Node used to look only every 30 s.
    const started = Date.now();
    const partial = (path: string) =>
      rawExchange(port, (socket) => socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nX-Unfinished: `), 12_000).then((result) => ({
        ...result,
        seconds: (Date.now() - started) / 1000,
      }));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => partial(i % 2 ? "/account" : "/oauth/jwks")));
    for (const { text, closedByServer, seconds } of results) {
      expect(closedByServer).toBe(true);
      expect(seconds).toBeLessThan(8);
      expect(text).toMatch(/^(HTTP\/1\.1 408 |$)/);
    }
  });
});
