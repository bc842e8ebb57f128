import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { contextOptions, E2E_TIMEOUT, releaseBrowser, sharedBrowser } from "./support.ts";

/**
 * Issue 16 in a real browser: another site's link with `?lng=` shows that language on the page it opens and sets
 * no cookie; the picker on this server's page sets it (docs/decisions/0024). Chromium sends its own Fetch
 * Metadata: nothing here is forged. The other site is a page on 127.0.0.1, another site than the issuer's
 * localhost.
 */

let server: TestServer;
let browser: Browser;
let elsewhere: http.Server;
let elsewhereUrl: string;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), sharedBrowser()]);
  elsewhere = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><title>Elsewhere</title></head><body><a href="${server.issuer}/account?lng=ja">Sign in there</a></body></html>`);
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
  elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`;
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  elsewhere?.closeAllConnections();
  await new Promise<void>((resolve) => (elsewhere ? elsewhere.close(() => resolve()) : resolve()));
  await server?.stop();
});

describe("the language cookie in Chromium", { timeout: E2E_TIMEOUT }, () => {
  it("another site's link shows its language without remembering it; the picker here remembers", async () => {
    const context = await browser.newContext(contextOptions({ locale: "en-GB" }));
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(elsewhereUrl);
      await page.getByRole("link", { name: "Sign in there" }).click();
      await page.waitForURL(`${server.issuer}/account?lng=ja`);
      expect(await page.locator("html").getAttribute("lang")).toBe("ja");
      expect((await context.cookies(server.issuer)).map((cookie) => cookie.name)).not.toContain("atrium_lang");
      // The next page of this server is in the browser's language again.
      await page.goto(`${server.issuer}/account/recover`);
      expect(await page.locator("html").getAttribute("lang")).toBe("en");

      // Picked on this server's page: remembered.
      await page.locator('nav a[hreflang="de"]').click();
      await page.waitForURL(/lng=de/);
      expect((await context.cookies(server.issuer)).map((cookie) => cookie.name)).toContain("atrium_lang");
      await page.goto(`${server.issuer}/account`);
      expect(await page.locator("html").getAttribute("lang")).toBe("de");
    } finally {
      await context.close();
    }
  });
});
