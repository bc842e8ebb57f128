import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_PASSWORD } from "../helpers/admin.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { contextOptions, E2E_TIMEOUT, expectAccessible, printFindings, releaseBrowser, sharedBrowser, visibleText, type Findings } from "./support.ts";

/**
 * The operator page, /admin (docs/decisions/0051), in Chromium, as an operator on a phone
 * (390×844) uses it: the sign-in with the error beside the field, the accounts as cards that fit the phone's width, one
 * account's takedown with its reason and its restoration; every state axe-clean in light and dark, and in French as in
 * English. Its forms without JavaScript, their CSRF and Origin checks and its paging through 10,000 accounts are
 * tests/integration/operator-page.test.ts's. Photographs in test-results/screenshots/admin-* (npm run test:photographs).
 */

let server: TestServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const findings: Findings = {};
let bob: { did: string };

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD });
  await createAccount(server, { handle: "alice.test", email: "alice@example.com", password: "a good long password" });
  bob = await createAccount(server, { handle: "bob.test", email: "bob@example.com", password: "another good password" });
  await createAccount(server, { handle: "longnameonaphone.test", email: "someone.with.a.rather.long.address@example.com", password: "a third good password" });
  browser = await sharedBrowser();
  context = await browser.newContext(contextOptions({ bypassCSP: true }));
  page = await context.newPage();
}, E2E_TIMEOUT);
afterAll(async () => {
  printFindings(findings);
  await releaseBrowser(browser);
  await server?.stop();
});

/** Whether the page is wider than the window (a phone would scroll sideways). */
async function overflowsSideways(): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}

describe("the operator page in Chromium on a phone", () => {
  it(
    "signs in with the admin password; a wrong one is said beside the field",
    async () => {
      await page.goto(`${server.issuer}/admin`);
      expect(await visibleText(page.locator("h1"))).toBe("Operator sign-in");
      await expectAccessible(page, "admin-sign-in", findings);
      await page.getByLabel("Admin password").fill("not the admin password");
      await page.getByRole("button", { name: "Sign in" }).click();
      expect(await visibleText(page.locator("#password-error"))).toBe("That is not the admin password.");
      expect(await page.getByLabel("Admin password").getAttribute("aria-describedby")).toContain("password-error");
      await expectAccessible(page, "admin-sign-in-wrong", findings);
      await page.getByLabel("Admin password").fill(ADMIN_PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${server.issuer}/admin`);
      expect(await visibleText(page.locator("h1"))).toBe("Accounts");
    },
    E2E_TIMEOUT,
  );

  it(
    "lists the accounts within a phone's width, finds one, and opens it",
    async () => {
      expect(await overflowsSideways()).toBe(false);
      for (const handle of ["@alice.test", "@bob.test", "@longnameonaphone.test"]) await expect(page.getByText(handle, { exact: true }).first().isVisible()).resolves.toBe(true);
      await expectAccessible(page, "admin-accounts", findings);
      await page.getByLabel("Find accounts").fill("BOB");
      await page.getByRole("button", { name: "Search" }).click();
      await page.getByRole("link", { name: "Manage @bob.test" }).first().click();
      await page.waitForURL(/\/admin\/account\?did=/);
      expect(await visibleText(page.locator("h1"))).toBe("@bob.test");
      expect(await overflowsSideways()).toBe(false);
      await expectAccessible(page, "admin-account", findings);
    },
    E2E_TIMEOUT,
  );

  it(
    "takes the account down with a reason (said beside the field when missing), then restores it",
    async () => {
      await page.getByRole("button", { name: "Take down @bob.test" }).click();
      expect(await visibleText(page.locator("#reason-error"))).toBe("Say why the account is taken down.");
      expect(await page.getByLabel("Reason", { exact: true }).getAttribute("aria-describedby")).toContain("reason-error");
      await expectAccessible(page, "admin-account-reason-missing", findings);
      await page.getByLabel("Reason", { exact: true }).fill("Spam, report #1234");
      await page.getByRole("button", { name: "Take down @bob.test" }).click();
      await page.waitForURL(/notice=taken-down/);
      expect(await visibleText(page.getByRole("status").first())).toContain("The account is taken down.");
      await expect(page.getByText("Spam, report #1234").first().isVisible()).resolves.toBe(true);
      await expectAccessible(page, "admin-account-taken-down", findings);
      const status = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepoStatus?did=${bob.did}`);
      expect(await status.json()).toMatchObject({ active: false, status: "takendown" });
      await page.getByRole("button", { name: "Restore @bob.test" }).click();
      await page.waitForURL(/notice=restored/);
      expect(await (await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepoStatus?did=${bob.did}`)).json()).toMatchObject({ active: true });
    },
    E2E_TIMEOUT,
  );

  it(
    "speaks the browser's language: French",
    async () => {
      const french = await browser.newContext(contextOptions({ bypassCSP: true, locale: "fr-FR" }));
      const frenchPage = await french.newPage();
      await frenchPage.goto(`${server.issuer}/admin`);
      expect(await visibleText(frenchPage.locator("h1"))).toBe("Connexion de l'opérateur");
      expect(await frenchPage.locator("html").getAttribute("lang")).toBe("fr");
      await expectAccessible(frenchPage, "admin-sign-in-fr", findings);
      await french.close();
    },
    E2E_TIMEOUT,
  );
});
