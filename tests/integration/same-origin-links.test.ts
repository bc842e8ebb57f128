import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Issue 16, hole 4: a path such as `//evil.example/x` rendered the branded 404 page, whose language picker linked
 * to `//evil.example/x?lng=fr`, another site, from a genuine page of this server. Every link, script, stylesheet
 * and form target of a page must stay on this origin, whatever path the page was asked for: every variant a
 * browser sends (WHATWG URL parsing turns `\` into `/` and drops tabs and newlines) and the raw bytes a script
 * sends, all at once.
 */

/** The paths of pages an attacker links to: what a browser makes of each, and each sent as raw bytes too. */
const PATHS = [
  "//evil.example/x",
  "///evil.example/x",
  "////evil.example",
  "/\\evil.example/x",
  "/\\\\evil.example/x",
  "/\\/evil.example/x",
  "//\\evil.example/x",
  "/\t/evil.example/x",
  "/\n/evil.example/x",
  "/\r\n/evil.example/x",
  "/%2F%2Fevil.example/x",
  "/%2F/evil.example/x",
  "/%5Cevil.example/x",
  "/%5C%5Cevil.example/x",
  "/%09/evil.example/x",
  "//evil.example/x?lng=fr",
  "//evil.example/x?next=//evil.example&lng=",
  "//evil.example:443/account",
  "//evil.example/account?lng=de",
  "//evil.example/oauth/authorize?client_id=x",
  "/.//evil.example/x",
  "//%65vil.example/x",
  // Doubled slashes before this server's own pages.
  "//account",
  "/\\account/recover",
  "/account//evil.example",
];

/** Every URL a page points the browser at: links, scripts, stylesheets, images, form targets. */
function targetsOf(html: string): string[] {
  return [...html.matchAll(/\s(?:href|src|action|formaction)="([^"]*)"/gi)].map((match) => match[1]!.replace(/&amp;/g, "&"));
}

/** GET with the path's bytes exactly as given (no URL parsing on the way out), as a script would send them. */
function rawGet(port: number, path: string): Promise<{ status: number; html: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ host: "127.0.0.1", port, path, headers: { Host: `localhost:${port}` } }, (answer) => {
      let html = "";
      answer.setEncoding("utf8");
      answer.on("data", (chunk: string) => (html += chunk));
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, html }));
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

describe("links built from the request's path", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  const expectSameOrigin = (pageUrl: URL, html: string, label: string) => {
    const targets = targetsOf(html);
    // The page is the branded one with its picker (six languages): the check below is not vacuous.
    expect(targets.filter((target) => target.includes("lng=")).length, label).toBeGreaterThanOrEqual(6);
    for (const target of targets) expect(new URL(target, pageUrl).origin, `${label}: ${target}`).toBe(server.issuer);
  };

  it("as a browser opens them: every link on the page stays on this origin", async () => {
    const pages = await Promise.all(
      PATHS.map(async (path) => {
        // The address a browser makes of the attacker's link, and so the base its links resolve against.
        const pageUrl = new URL(`${server.issuer}${path}`);
        const answer = await fetch(pageUrl, { redirect: "manual" });
        return { path, pageUrl, status: answer.status, html: await answer.text() };
      }),
    );
    for (const { path, pageUrl, status, html } of pages) {
      expect(status, JSON.stringify(path)).toBeLessThan(500);
      expectSameOrigin(pageUrl, html, JSON.stringify(path));
    }
  });

  it("as raw request targets: every link on the page still resolves to this origin", async () => {
    // Node's HTTP client refuses to send control characters; every other path goes out byte for byte.
    const raw = PATHS.filter((path) => !/[\t\r\n]/.test(path));
    const pages = await Promise.all(raw.map(async (path) => ({ path, ...(await rawGet(server.port, path)) })));
    for (const { path, status, html } of pages) {
      expect(status, JSON.stringify(path)).toBeLessThan(500);
      // A browser would be at the address WHATWG URL parsing makes of this path on this origin.
      expectSameOrigin(new URL(`${server.issuer}${path}`), html, JSON.stringify(path));
    }
  });
});
