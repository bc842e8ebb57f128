import type { Browser, Page } from "playwright-core";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LANGUAGES } from "../../app/i18n/languages.ts";
import { typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import type { TestServer } from "../helpers/test-server.ts";
import { E2E_TIMEOUT, expectAccessible, focusedId, mailingServer, PASSWORD, visibleText, watchedPage, type MailingServer } from "./support.ts";

/**
 * Deleting an account in Chromium on a phone (390×844; docs/decisions/0030), with JavaScript and without: the
 * warning and the step to take in the first screen, a refused code said at its field with the focus on it, then the
 * deletion signing this browser out of that account only. Every screen passes axe-core light and dark and is
 * photographed under test-results/screenshots/account-delete-*.
 */

let setup: MailingServer;
let server: TestServer;
let smtp: TestSmtp;
let browser: Browser;

beforeAll(async () => {
  setup = await mailingServer(["erin", "finn", "gus"]);
  ({ server, smtp, browser } = setup);
}, E2E_TIMEOUT);

afterAll(async () => {
  await setup?.close();
});

async function signIn(page: Page, handle: string): Promise<void> {
  await page.getByLabel("Handle or email").fill(handle);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/account" && !url.search.includes("add"));
}

/** Whether an element lies entirely within the first screen (the window, unscrolled). */
async function inFirstScreen(page: Page, locator: ReturnType<Page["locator"]>): Promise<boolean> {
  const box = await locator.boundingBox();
  const height = page.viewportSize()!.height;
  return box !== null && box.y >= 0 && box.y + box.height <= height;
}

describe("deleting an account on a phone", { timeout: E2E_TIMEOUT }, () => {
  for (const javaScript of [true, false]) {
    const handle = javaScript ? "erin.test" : "finn.test";
    // axe-core runs as a script in the page: the audit is of the JavaScript run (the pages are the same HTML).
    const audit = (page: Page, name: string) => (javaScript ? expectAccessible(page, name) : Promise.resolve());
    it(`${javaScript ? "with" : "without"} JavaScript: code by email, a wrong code said at its field, then the code and the password delete it`, async () => {
      const { context, page, csp } = await watchedPage(browser, javaScript);
      await page.goto(`${server.issuer}/account`);
      await signIn(page, "gus.test");
      // A second account in the same browser, which must stay signed in.
      await page.goto(`${server.issuer}/account?add=1`);
      await signIn(page, handle);
      await page.goto(`${server.issuer}/account/delete`);

      const send = page.getByRole("button", { name: "Email me a code" });
      await visibleText(page.getByText("This cannot be undone"));
      expect(await inFirstScreen(page, send)).toBe(true);
      await audit(page, `account-delete-request`);
      await send.click();
      await page.waitForURL((url) => url.search.includes("notice=deletion-code-sent"));
      const code = typedCodeIn(await smtp.next());

      const codeField = page.getByLabel("Code from the email");
      expect(await inFirstScreen(page, codeField)).toBe(true);
      await audit(page, `account-delete-confirm`);
      await codeField.fill("AAAAA-AAAAA");
      await page.getByLabel("Your password").fill(PASSWORD);
      await page.getByRole("button", { name: "Delete my account for good" }).click();
      await visibleText(page.getByText("This code does not work"));
      // The refused field has the focus, and its message is tied to it.
      expect(await focusedId(page, "code")).toBe("code");
      expect(await page.getByLabel("Code from the email").getAttribute("aria-describedby")).toContain("code-error");
      expect(await inFirstScreen(page, page.getByLabel("Code from the email"))).toBe(true);
      await audit(page, `account-delete-code-wrong`);

      await page.getByLabel("Code from the email").fill(code);
      await page.getByLabel("Your password").fill(PASSWORD);
      await page.getByRole("button", { name: "Delete my account for good" }).click();
      await page.waitForURL((url) => url.pathname === "/account" && url.search.includes("notice=account-deleted"));
      await visibleText(page.getByText("Your account is deleted."));
      // The other account of this browser is still signed in: the page manages it now.
      await visibleText(page.getByText("Managing @gus.test"));
      await audit(page, `account-deleted`);
      expect(csp).toEqual([]);
      await context.close();
    });
  }

  it("speaks every shipped language: the title, the warning and the button from each catalogue, axe-clean light and dark", async () => {
    const { context, page } = await watchedPage(browser, true);
    await page.goto(`${server.issuer}/account`);
    await signIn(page, "gus.test");
    for (const language of LANGUAGES) {
      const words = JSON.parse(readFileSync(new URL(`../../app/i18n/locales/${language}/account.json`, import.meta.url), "utf8")) as {
        titles: { delete: string };
        deletion: { sendCode: string };
      };
      await page.goto(`${server.issuer}/account/delete?lng=${language}`);
      expect(await page.locator("html").getAttribute("lang")).toBe(language);
      await visibleText(page.getByRole("heading", { level: 1, name: words.titles.delete }));
      expect(await inFirstScreen(page, page.getByRole("button", { name: words.deletion.sendCode }))).toBe(true);
      await expectAccessible(page, `i18n/${language}/account-delete`);
    }
    await context.close();
  });
});
