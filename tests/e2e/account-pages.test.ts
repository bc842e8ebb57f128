import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { contextOptions, E2E_TIMEOUT, hydrated, releaseBrowser, sharedBrowser, PASSWORD, visibleText, watchCsp } from "./support.ts";

/**
 * The account area in a real browser: signed-in browsers (sign out one, all
 * others), changing the password with errors tied to their fields, and the
 * CSRF check on its forms.
 */

const HANDLE = "bob.test";
const NEW_PASSWORD = "a brand new passphrase";

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), sharedBrowser()]);
  await createAccount(server, { handle: HANDLE, email: "bob@example.com", password: PASSWORD });
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await server?.stop();
});

async function signedInBrowser(password = PASSWORD): Promise<{ context: BrowserContext; page: Page; csp: string[] }> {
  const context = await browser.newContext(contextOptions());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const csp = watchCsp(page);
  await page.goto(`${server.issuer}/account`);
  await page.getByLabel("Handle or email").fill(HANDLE);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/notice=signed-in/);
  return { context, page, csp };
}

async function isSignedIn(page: Page): Promise<boolean> {
  await page.goto(`${server.issuer}/account`);
  return (await page.getByRole("heading", { level: 1 }).innerText()) === "Your account";
}

describe("account pages", { timeout: E2E_TIMEOUT }, () => {
  it("a wrong password is refused without saying which part was wrong; fields keep their labels", async () => {
    const context = await browser.newContext(contextOptions());
    const page = await context.newPage();
    await page.goto(`${server.issuer}/account`);
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill("not it");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    expect(await visibleText(page.getByRole("alert").filter({ hasText: /\w/ }))).toContain("not right");
    expect(await page.getByLabel("Password").getAttribute("aria-describedby")).toContain("sign-in-error");
    expect(await page.getByLabel("Handle or email").inputValue()).toBe(HANDLE);
    expect(await page.content()).not.toContain("not it");
    await context.close();
  });

  it("lists signed-in browsers; signs out all others", async () => {
    const first = await signedInBrowser();
    const second = await signedInBrowser();
    await first.page.goto(`${server.issuer}/account/sessions`);
    expect(await first.page.getByRole("listitem").filter({ hasText: "Last seen" }).count()).toBe(2);
    expect(await visibleText(first.page.getByText("This browser"))).toBe("This browser");
    expect(await first.page.locator("main").innerText()).toContain("127.0.0.1");
    await first.page.getByRole("button", { name: /Sign out all other browsers/ }).click();
    expect(await visibleText(first.page.getByRole("status"))).toContain("Every other browser is signed out");
    expect(await isSignedIn(second.page)).toBe(false);
    expect(await isSignedIn(first.page)).toBe(true);
    expect(first.csp).toEqual([]);
    await Promise.all([first.context.close(), second.context.close()]);
  });

  it("changes the password: errors belong to their fields; success signs out other browsers", async () => {
    const { context, page } = await signedInBrowser();
    const other = await signedInBrowser();
    await page.goto(`${server.issuer}/account/password`);

    await page.getByLabel("Current password").fill("wrong current");
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await visibleText(page.locator("#current_password-error"))).toContain("not right");
    expect(await page.getByLabel("Current password").getAttribute("aria-invalid")).toBe("true");

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(`${NEW_PASSWORD}!`);
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await visibleText(page.locator("#confirm_password-error"))).toContain("does not match");
    expect(await page.getByLabel("New password, again").getAttribute("aria-describedby")).toContain("confirm_password-error");

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Password changed");
    expect(await isSignedIn(other.page)).toBe(false);
    expect(await isSignedIn(page)).toBe(true);

    // The new password signs in.
    const again = await signedInBrowser(NEW_PASSWORD);
    await Promise.all([context.close(), other.context.close(), again.context.close()]);
  });

  it("a form with a forged CSRF token is refused with a 403 page", async () => {
    const { context, page } = await signedInBrowser(NEW_PASSWORD);
    await page.goto(`${server.issuer}/account/sessions`);
    // Forged after hydration: React sets a rendered input's value when it hydrates, which would undo an earlier forgery.
    await hydrated(page);
    await page.locator('input[name="csrf_token"]').evaluateAll((inputs) => inputs.forEach((input) => ((input as HTMLInputElement).value = "forged")));
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === "POST"), page.getByRole("button", { name: "Sign out" }).last().click()]);
    expect(response.status()).toBe(403);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("This form could not be accepted");
    expect(await isSignedIn(page)).toBe(true);
    await context.close();
  });

  it("a signed-out visit to an account page asks to sign in and comes back", async () => {
    const context = await browser.newContext(contextOptions());
    const page = await context.newPage();
    await page.goto(`${server.issuer}/account/apps`);
    expect(new URL(page.url()).searchParams.get("next")).toBe("/account/apps");
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(/\/account\/apps$/);
    expect(await visibleText(page.getByText("No app has access to your account."))).toBeTruthy();
    await context.close();
  });
});
