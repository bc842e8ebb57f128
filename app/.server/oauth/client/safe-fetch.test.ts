import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidClientMetadataError } from "../errors/oauth-error.ts";
import { fetchJsonDocument, isPublicUnicastAddress } from "./safe-fetch.ts";

describe("isPublicUnicastAddress", () => {
  it.each([
    "127.0.0.1",
    "127.1.2.3",
    "10.0.0.1",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.255",
    "0.0.0.0",
    "::1",
    "::",
    "fd12::1",
    "fc00::1",
    "fe80::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::FFFF:192.168.0.1",
    "::ffff:7f00:1", // ::ffff:127.0.0.1 as the WHATWG URL parser serializes it
    "224.0.0.1",
    "239.255.255.250",
    "ff02::1",
    "ff05::2",
    "255.255.255.255",
    "192.0.2.1",
    "2001:db8::1",
  ])("refuses %s", (address) => {
    expect(isPublicUnicastAddress(address)).toBe(false);
  });

  it.each(["8.8.8.8", "1.1.1.1", "93.184.215.14", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001::200e"])("accepts %s", (address) => {
    expect(isPublicUnicastAddress(address)).toBe(true);
  });

  it.each(["", "example.com", "localhost", "1.2.3", "[::1]"])("refuses a value that is not an IP address: %j", (value) => {
    expect(isPublicUnicastAddress(value)).toBe(false);
  });
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the promise to reject");
}

describe("fetchJsonDocument without allowPrivate (no network)", () => {
  it.each([
    ["http://example.com/client-metadata.json", /https/],
    ["ftp://example.com/client-metadata.json", /https/],
    ["https://127.0.0.1/client-metadata.json", /non-public/],
    ["https://localhost/client-metadata.json", /non-public/],
    ["https://localhost:8443/client-metadata.json", /non-public/],
    ["https://[::1]/client-metadata.json", /non-public/],
    ["https://[::ffff:127.0.0.1]/client-metadata.json", /non-public/],
    ["https://10.1.2.3/client-metadata.json", /non-public/],
    ["https://169.254.169.254/latest/meta-data", /non-public/],
    ["https://0x7f000001/client-metadata.json", /non-public/], // URL parser turns this into 127.0.0.1
  ])("refuses %s", async (url, message) => {
    const error = await rejection(fetchJsonDocument(url, { allowPrivate: false, timeoutMs: 2_000 }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect((error as InvalidClientMetadataError).code).toBe("invalid_client_metadata");
    expect(error.message).toMatch(message);
  });
});

describe("fetchJsonDocument against a loopback server (allowPrivate)", () => {
  let server: http.Server;
  let base: string;
  const hits = new Map<string, number>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const json = (body: string, type = "application/json") => {
        res.writeHead(200, { "content-type": type, "content-length": Buffer.byteLength(body) });
        res.end(body);
      };
      switch (path) {
        case "/ok":
          return json(JSON.stringify({ client_id: "x", n: 1 }));
        case "/ok-charset":
          return json(JSON.stringify({ ok: true }), "application/json; charset=utf-8");
        case "/ok-suffix":
          return json(JSON.stringify({ ok: true }), "application/jrd+json");
        case "/redirect":
          res.writeHead(302, { location: "/ok" });
          return res.end();
        case "/not-found":
          res.writeHead(404, { "content-type": "application/json" });
          return res.end("{}");
        case "/created":
          res.writeHead(201, { "content-type": "application/json" });
          return res.end("{}");
        case "/text":
          return json(JSON.stringify({ ok: true }), "text/plain");
        case "/html":
          return json("<html></html>", "text/html");
        case "/json-lookalike":
          return json(JSON.stringify({ ok: true }), "application/jsonx");
        case "/no-type":
          res.writeHead(200);
          return res.end(JSON.stringify({ ok: true }));
        case "/invalid-json":
          return json("{not json");
        case "/big":
          return json(JSON.stringify({ padding: "x".repeat(5_000) }));
        case "/big-chunked": {
          // No content-length: the cap must hold while streaming.
          res.writeHead(200, { "content-type": "application/json" });
          res.write('{"padding":"');
          for (let i = 0; i < 50; i++) res.write("x".repeat(1_000));
          return res.end('"}');
        }
        case "/slow-headers":
          setTimeout(() => json("{}"), 1_500).unref();
          return;
        case "/slow-body":
          res.writeHead(200, { "content-type": "application/json" });
          res.write('{"a":');
          setTimeout(() => res.end("1}"), 1_500).unref();
          return;
        default:
          res.writeHead(500);
          return res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const dev = { allowPrivate: true };

  it("accepts application/json with status 200", async () => {
    await expect(fetchJsonDocument(`${base}/ok`, dev)).resolves.toEqual({ client_id: "x", n: 1 });
  });

  it("accepts a charset parameter and a +json media type", async () => {
    await expect(fetchJsonDocument(`${base}/ok-charset`, dev)).resolves.toEqual({ ok: true });
    await expect(fetchJsonDocument(`${base}/ok-suffix`, dev)).resolves.toEqual({ ok: true });
  });

  it("still requires http(s) with allowPrivate", async () => {
    await expect(fetchJsonDocument(`ftp://127.0.0.1/x`, dev)).rejects.toBeInstanceOf(InvalidClientMetadataError);
  });

  it("refuses a redirect and does not follow it", async () => {
    const before = hits.get("/ok") ?? 0;
    const error = await rejection(fetchJsonDocument(`${base}/redirect`, dev));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/302/);
    expect(hits.get("/ok") ?? 0).toBe(before);
  });

  it.each([
    ["/not-found", /404/],
    ["/created", /201/],
    ["/unknown", /500/],
  ])("refuses a non-200 status (%s)", async (path, message) => {
    const error = await rejection(fetchJsonDocument(`${base}${path}`, dev));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(message);
  });

  it.each(["/text", "/html", "/json-lookalike", "/no-type"])("refuses a non-JSON content type (%s)", async (path) => {
    const error = await rejection(fetchJsonDocument(`${base}${path}`, dev));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/application\/json/);
  });

  it("refuses a body that is not JSON", async () => {
    const error = await rejection(fetchJsonDocument(`${base}/invalid-json`, dev));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/not valid JSON/);
  });

  it("refuses an oversized body", async () => {
    const error = await rejection(fetchJsonDocument(`${base}/big`, { ...dev, maxBytes: 1_024 }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/larger than 1024 bytes/);
    // The same document fits a larger cap.
    await expect(fetchJsonDocument(`${base}/big`, { ...dev, maxBytes: 10_000 })).resolves.toHaveProperty("padding");
  });

  it("refuses an oversized streamed body without content-length", async () => {
    const error = await rejection(fetchJsonDocument(`${base}/big-chunked`, { ...dev, maxBytes: 4_096 }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/larger than/);
  });

  it("accepts a body of exactly maxBytes", async () => {
    const size = Buffer.byteLength(JSON.stringify({ client_id: "x", n: 1 }));
    await expect(fetchJsonDocument(`${base}/ok`, { ...dev, maxBytes: size })).resolves.toEqual({ client_id: "x", n: 1 });
    await expect(fetchJsonDocument(`${base}/ok`, { ...dev, maxBytes: size - 1 })).rejects.toBeInstanceOf(InvalidClientMetadataError);
  });

  it("times out a slow response", async () => {
    const started = Date.now();
    const error = await rejection(fetchJsonDocument(`${base}/slow-headers`, { ...dev, timeoutMs: 200 }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/timed out/);
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  it("times out a body that trickles in", async () => {
    const started = Date.now();
    const error = await rejection(fetchJsonDocument(`${base}/slow-body`, { ...dev, timeoutMs: 200 }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    expect(error.message).toMatch(/timed out/);
    expect(Date.now() - started).toBeLessThan(1_400);
  });

  it("refuses the loopback server when allowPrivate is false", async () => {
    const error = await rejection(fetchJsonDocument(`${base}/ok`, { allowPrivate: false }));
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    const httpsError = await rejection(fetchJsonDocument(base.replace("http:", "https:") + "/ok", { allowPrivate: false }));
    expect(httpsError.message).toMatch(/non-public/);
    expect(hits.get("/ok")).toBeGreaterThan(0); // the server was reachable; the refusal is the policy
  });
});
