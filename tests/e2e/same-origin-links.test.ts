import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { contextOptions, E2E_TIMEOUT, releaseBrowser, sharedBrowser } from "./support.ts";

/**
 * Issue 16, hole 4, in a real browser: a link to `//evil.example/x` (or `/\evil.example/x`, which the browser
 * sends as the same) opens this server's branded 404 page; choosing a language there must keep the person on this
 * server. Every link of the page is checked as Chromium resolves it, the picker is clicked, and any request that
 * leaves for evil.example is caught, with and without JavaScript.
 */

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), sharedBrowser()]);
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await server?.stop();
});

const PATHS = ["//evil.example/x", "/\\evil.example/x", "///evil.example/x", "/\t/evil.example/x", "/%2F%2Fevil.example/x"];

describe("the language picker on a page at an attacker's path", { timeout: E2E_TIMEOUT }, () => {
  for (const javaScriptEnabled of [true, false]) {
    it(`stays on this origin ${javaScriptEnabled ? "with" : "without"} JavaScript`, async () => {
      const context = await browser.newContext(contextOptions({ javaScriptEnabled }));
      const leaks: string[] = [];
      await context.route((url) => url.hostname.endsWith("evil.example"), async (route) => {
        leaks.push(route.request().url());
        await route.abort();
      });
      try {
        const page = await context.newPage();
        page.setDefaultTimeout(10_000);
        for (const path of PATHS) {
          const label = JSON.stringify(path);
          await context.clearCookies();
          const opened = await page.goto(`${server.issuer}${path}`);
          expect(opened?.status(), label).toBe(404);
          expect(await page.locator("html").getAttribute("lang"), label).toBe("en");
          if (javaScriptEnabled) await page.waitForFunction(() => document.readyState === "complete" && "__remixContext" in window);
          // Every link as the browser resolves it (the href property is absolute).
          const links = await page.locator("a[href]").evaluateAll((anchors) => anchors.map((anchor) => (anchor as HTMLAnchorElement).href));
          expect(links.length, label).toBeGreaterThanOrEqual(6);
          for (const link of links) expect(new URL(link).origin, `${label}: ${link}`).toBe(server.issuer);

          // Each path starts in English (the previous pick is forgotten), so the click changes something.
          await page.locator('nav a[hreflang="fr"]').click();
          await page.waitForURL(/lng=fr/);
          expect(new URL(page.url()).origin, label).toBe(server.issuer);
          expect(await page.locator("html").getAttribute("lang"), label).toBe("fr");
        }
        expect(leaks).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }
});
