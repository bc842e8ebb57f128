import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { E2E_TIMEOUT, expectAccessible, releaseBrowser, sharedBrowser, PASSWORD, visibleText, watchedPage } from "./support.ts";

/**
 * Changing the email address in Chromium on a phone (390×844; docs/decisions/0030), with JavaScript and without: the
 * new address in the first screen, the code from the new address's email, a wrong code said at its field with the
 * focus on it, then the change. Every screen passes axe-core light and dark and is photographed under
 * test-results/screenshots/account-email-*.
 */

let server: TestServer;
let smtp: TestSmtp;
let browser: Browser;

beforeAll(async () => {
  smtp = await startSmtpServer();
  [server, browser] = await Promise.all([startTestServer({ ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>" }), sharedBrowser()]);
  for (const name of ["hana", "ivo"]) await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD });
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await server?.stop();
  await smtp?.stop();
});

/** Whether an element lies entirely within the first screen (the window, unscrolled). */
async function inFirstScreen(page: Page, locator: ReturnType<Page["locator"]>): Promise<boolean> {
  const box = await locator.boundingBox();
  return box !== null && box.y >= 0 && box.y + box.height <= page.viewportSize()!.height;
}

describe("changing the email address on a phone", { timeout: E2E_TIMEOUT }, () => {
  for (const javaScript of [true, false]) {
    const handle = javaScript ? "hana" : "ivo";
    const audit = (page: Page, name: string) => (javaScript ? expectAccessible(page, name) : Promise.resolve());
    it(`${javaScript ? "with" : "without"} JavaScript: the new address, a wrong code said at its field, then the right one`, async () => {
      const { context, page, csp } = await watchedPage(browser, javaScript);
      await page.goto(`${server.issuer}/account`);
      await page.getByLabel("Handle or email").fill(`${handle}.test`);
      await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL((url) => url.pathname === "/account");
      await page.goto(`${server.issuer}/account/email`);

      const field = page.getByLabel("New email address");
      expect(await inFirstScreen(page, field)).toBe(true);
      await audit(page, "account-email-request");
      await field.fill(`${handle}.new@example.com`);
      await page.getByRole("button", { name: "Send the code" }).click();
      await page.waitForURL((url) => url.search.includes("notice=email-code-sent"));
      const code = typedCodeIn(await smtp.next());

      const codeField = page.getByLabel("Code from the email", { exact: true });
      expect(await inFirstScreen(page, codeField)).toBe(true);
      // The page names the address the code went to (issue 28, item 21); the current one stays above.
      expect(await page.locator("main").innerText()).toContain(`Enter the code we sent to ${handle}.new@example.com.`);
      await audit(page, "account-email-code");
      await codeField.fill("AAAAA-AAAAA");
      await page.getByRole("button", { name: "Change the email address" }).click();
      await visibleText(page.getByText("This code does not work"));
      const refused = page.getByLabel("Code from the email", { exact: true });
      await expect.poll(() => refused.evaluate((element) => element === document.activeElement)).toBe(true);
      expect(await refused.getAttribute("aria-describedby")).toContain("code-error");
      expect(await inFirstScreen(page, page.getByText("This code does not work"))).toBe(true);
      await audit(page, "account-email-code-wrong");

      await refused.fill(code);
      await page.getByRole("button", { name: "Change the email address" }).click();
      await page.waitForURL((url) => url.search.includes("notice=email-changed"));
      await visibleText(page.getByText(`${handle}.new@example.com`));
      // The old address is told.
      const notice = await smtp.next();
      expect(notice.to && "text" in notice.to ? notice.to.text : "").toBe(`${handle}@example.com`);
      await audit(page, "account-email-changed");
      expect(csp).toEqual([]);
      await context.close();
    });
  }
});
