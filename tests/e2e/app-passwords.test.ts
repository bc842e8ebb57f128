import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MINUTE } from "../../app/.server/util/time.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { E2E_TIMEOUT, expectAccessible, hydrated, PASSWORD, printFindings, releaseBrowser, sharedBrowser, signedInToAccountArea, visibleText, type Findings } from "./support.ts";

/**
 * /account/app-passwords and the password sessions under Connected apps (docs/decisions/0047) in a real browser, on
 * a phone-sized window: create an app password (its name's errors beside the field, the password shown once),
 * "Confirm it's you" first when the last proof is old, revoke with a confirmation, sign an app out; with JavaScript
 * and without; axe-core on every state, light and dark, narrow and wide.
 */

let server: TestServer;
let browser: Browser;
let clock: TestClock;
let smtp: TestSmtp;
const findings: Findings = {};
let accounts = 0;

beforeAll(async () => {
  clock = testClock();
  smtp = await startSmtpServer();
  [server, browser] = await Promise.all([
    startTestServer({ ...clock.env, ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>" }),
    sharedBrowser(),
  ]);
}, E2E_TIMEOUT);

afterAll(async () => {
  printFindings(findings);
  await releaseBrowser(browser);
  await server?.stop();
  await smtp?.stop();
  clock?.remove();
});

/** A new account, signed in in a new phone-sized browser (with or without JavaScript); axe needs the CSP bypassed. */
async function signedIn(javaScriptEnabled: boolean): Promise<{ context: BrowserContext; page: Page; handle: string }> {
  const handle = `person${++accounts}.test`;
  await createAccount(server, { handle, email: `${handle}@example.com`, password: PASSWORD });
  const { context, page } = await signedInToAccountArea(browser, server.issuer, handle, { javaScriptEnabled, bypassCSP: true });
  return { context, page, handle };
}

/** What an app gets from createSession with `password` (the app password's sign-in). */
async function createSession(handle: string, password: string): Promise<{ status: number; accessJwt?: string }> {
  const answer = await fetch(`${server.issuer}/xrpc/com.atproto.server.createSession`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "User-Agent": "ExampleBot/2.1 (+https://bot.example)" },
    body: JSON.stringify({ identifier: handle, password }),
  });
  return { status: answer.status, ...((await answer.json()) as { accessJwt?: string }) };
}

async function getSession(accessJwt: string): Promise<{ status: number; body: { error?: string } }> {
  const answer = await fetch(`${server.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${accessJwt}` } });
  return { status: answer.status, body: (await answer.json()) as { error?: string } };
}

async function createAppPassword(page: Page, name: string, privileged = false): Promise<void> {
  await page.getByLabel("Name", { exact: true }).fill(name);
  if (privileged) await page.getByLabel("Allow access to your direct messages").check();
  await page.getByRole("button", { name: "Create app password" }).click();
}

describe("app passwords in the account area", { timeout: E2E_TIMEOUT }, () => {
  for (const javaScriptEnabled of [true, false]) {
    const how = javaScriptEnabled ? "with JavaScript" : "without JavaScript";

    it(`creates one, shown once, that signs an app in; revokes it after a confirmation, which signs the app out (${how})`, async () => {
      const { context, page, handle } = await signedIn(javaScriptEnabled);
      await page.goto(`${server.issuer}/account/app-passwords`);
      if (javaScriptEnabled) await hydrated(page);
      expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("App passwords");
      await visibleText(page.getByText("You have no app passwords."));
      if (javaScriptEnabled) await expectAccessible(page, "account-app-passwords", findings);

      // The name's errors sit under the field, tied to it.
      await createAppPassword(page, "   ");
      const nameError = page.locator("#app-password-name-error");
      expect(await visibleText(nameError)).toContain("at most 32 characters");
      expect(await page.getByLabel("Name", { exact: true }).getAttribute("aria-describedby")).toContain("app-password-name-error");

      await createAppPassword(page, "Example bot");
      await visibleText(page.getByRole("heading", { name: "Your new app password" }));
      const password = await page.getByLabel("App password for “Example bot”").inputValue();
      expect(password).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);
      if (javaScriptEnabled) await expectAccessible(page, "account-app-password-created", findings);

      // A second of the same name: refused, beside the field.
      await createAppPassword(page, "Example bot");
      expect(await visibleText(nameError)).toContain("already have an app password named “Example bot”");

      // Shown once: the list names it, never its password.
      await page.goto(`${server.issuer}/account/app-passwords`);
      await visibleText(page.getByRole("heading", { name: "Example bot" }));
      expect(await page.content()).not.toContain(password);

      const app = await createSession(handle, password);
      expect(app.status).toBe(200);
      expect((await getSession(app.accessJwt!)).status).toBe(200);

      // Revoke asks first; Cancel keeps it.
      await page.getByRole("button", { name: "Revoke" }).click();
      await visibleText(page.getByRole("heading", { name: "Revoke this app password?" }));
      if (javaScriptEnabled) await expectAccessible(page, "account-app-password-revoke", findings);
      await page.getByRole("link", { name: "Cancel" }).click();
      await visibleText(page.getByRole("heading", { name: "Example bot" }));
      expect((await getSession(app.accessJwt!)).status).toBe(200);

      await page.getByRole("button", { name: "Revoke" }).click();
      await page.getByRole("button", { name: "Revoke app password" }).click();
      expect(await visibleText(page.getByRole("status"))).toContain("App password revoked");
      await visibleText(page.getByText("You have no app passwords."));
      expect((await getSession(app.accessJwt!)).body.error).toBe("ExpiredToken");
      expect((await createSession(handle, password)).status).toBe(401);
      await context.close();
    });

    it(`Connected apps lists an app signed in with a password, and signs it out after a confirmation (${how})`, async () => {
      const { context, page, handle } = await signedIn(javaScriptEnabled);
      const app = await createSession(handle, PASSWORD);
      await page.goto(`${server.issuer}/account/apps`);
      if (javaScriptEnabled) await hydrated(page);
      await visibleText(page.getByRole("heading", { name: "Apps signed in with a password" }));
      await visibleText(page.getByText("Signed in with your account's password"));
      await visibleText(page.getByText("ExampleBot/2.1 (+https://bot.example)"));
      if (javaScriptEnabled) await expectAccessible(page, "account-apps-password-sessions", findings);

      await page.getByRole("button", { name: "Sign out" }).click();
      await visibleText(page.getByRole("heading", { name: "Sign this app out?" }));
      if (javaScriptEnabled) await expectAccessible(page, "account-apps-sign-out", findings);
      await page.getByRole("button", { name: "Sign out" }).click();
      expect(await visibleText(page.getByRole("status"))).toContain("That app is signed out");
      expect((await getSession(app.accessJwt!)).body.error).toBe("ExpiredToken");
      await context.close();
    });
  }

  it("creating one and the sign-in code need a recent proof: 'Confirm it's you' stands in for them, then they are offered", async () => {
    const { context, page } = await signedIn(true);
    clock.advance(6 * MINUTE);
    await page.goto(`${server.issuer}/account/app-passwords`);
    await visibleText(page.getByRole("heading", { name: "Confirm it's you" }));
    expect(await page.getByRole("button", { name: "Create app password" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: "Ask for a code" }).count()).toBe(0);
    await expectAccessible(page, "account-app-passwords-confirm", findings);
    await page.getByLabel("Your password").fill(PASSWORD);
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await visibleText(page.getByRole("button", { name: "Create app password" }));

    // The sign-in code: on, said so, and off again.
    await page.getByRole("button", { name: "Ask for a code" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("also needs a code sent by email");
    await visibleText(page.getByText(/^On: an app that signs in/));
    await expectAccessible(page, "account-app-passwords-code-on", findings);
    await page.getByRole("button", { name: "Stop asking for a code" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("no longer needs a code");
    await context.close();
  });
});
