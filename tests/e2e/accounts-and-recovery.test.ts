import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { execute } from "../helpers/databases.ts";
import { resetLinkIn, startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  callbackParams,
  E2E_TIMEOUT,
  expectAccessible,
  holdsFocus,
  loopbackClientId,
  PASSWORD,
  pushRequest,
  releaseBrowser,
  sharedBrowser,
  startAppCallback,
  visibleText,
  watchedPage,
  type AppCallback,
} from "./support.ts";

/**
 * Issue 11 in Chromium (docs/decisions/0020): expired and used request links return to the app; two accounts in
 * one browser with the choosers; prompt=select_account, none and login; "Stay signed in on this device" off and on
 * (a cookie without and with an expiry); password recovery by email through a real SMTP server. Every new screen
 * passes axe-core in light and dark and is photographed under test-results/screenshots/.
 */

const SCOPE = "atproto transition:generic";
const NEW_PASSWORD = "a freshly chosen password";

let server: TestServer;
let smtp: TestSmtp;
let browser: Browser;
let app: AppCallback;
let client: DpopClient;
const dids: Record<string, string> = {};

beforeAll(async () => {
  smtp = await startSmtpServer();
  [server, browser, app] = await Promise.all([
    startTestServer({ ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>" }),
    sharedBrowser(),
    startAppCallback(),
  ]);
  for (const name of ["alice", "bob", "carol", "dora"]) dids[name] = (await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD })).did;
  client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(SCOPE));
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await server?.stop();
  await smtp?.stop();
});

const audit = (page: Page, name: string) => expectAccessible(page, name);

async function signInOnAccountPage(page: Page, name: string, staySignedIn: boolean) {
  await page.getByLabel("Handle or email").fill(`${name}.test`);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  if (staySignedIn) await page.getByLabel("Stay signed in on this device").check();
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/account" && !url.search.includes("add"));
}

async function codeFor(page: Page, pushed: { redirectUri: string; state: string; verifier: string }): Promise<string> {
  const params = await callbackParams(page, pushed.redirectUri);
  expect(params.get("state")).toBe(pushed.state);
  const code = params.get("code");
  expect(code, params.toString()).toBeTruthy();
  const tokens = await client.exchangeCode(code!, pushed.verifier, pushed.redirectUri);
  expect(tokens.status).toBe(200);
  return tokens.body.sub;
}

describe("ways back to the app", { timeout: E2E_TIMEOUT }, () => {
  it("an expired request link and a used one return the browser they were shown in to the app with access_denied and the state", async () => {
    const { context, page } = await watchedPage(browser);
    const expired = await pushRequest(client, app.redirectUri);
    // Only the browser the screen was shown to goes back unasked (docs/decisions/0022).
    await page.goto(expired.authorizeUrl);
    await execute(server.database(), sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(Date.now() - 60_000)}
      WHERE "idHash" = ${sha256Base64url(new URL(expired.authorizeUrl).searchParams.get("request_uri")!)}`);
    await page.goto(expired.authorizeUrl);
    const back = await callbackParams(page, expired.redirectUri);
    expect(back.get("error")).toBe("access_denied");
    expect(back.get("state")).toBe(expired.state);
    expect(back.get("iss")).toBe(server.issuer);

    const used = await pushRequest(client, app.redirectUri);
    await page.goto(used.authorizeUrl);
    await page.getByLabel("Handle or email").fill("alice.test");
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await codeFor(page, used)).toBe(dids.alice);
    await page.goto(used.authorizeUrl);
    const again = await callbackParams(page, used.redirectUri);
    expect(again.get("error")).toBe("access_denied");
    expect(again.get("state")).toBe(used.state);
    expect(again.get("code")).toBeNull();

    // Another browser opening the used link is not sent anywhere: a page names the app's host, and only its button
    // goes there (docs/decisions/0022).
    const other = await watchedPage(browser);
    const response = await other.page.goto(used.authorizeUrl);
    expect(response?.status()).toBe(400);
    const host = new URL(used.redirectUri).host;
    expect(await other.page.getByRole("heading", { level: 1 }).textContent()).toBe("This sign-in request is no longer open");
    const button = other.page.getByRole("link", { name: `Go back to ${host}` });
    await audit(other.page, "way-back-other-browser");
    await button.click();
    const followed = await callbackParams(other.page, used.redirectUri);
    expect(followed.get("error")).toBe("access_denied");
    expect(followed.get("state")).toBe(used.state);
    expect(other.csp).toEqual([]);
    await other.context.close();
    await context.close();
  });
});

describe("Stay signed in on this device", { timeout: E2E_TIMEOUT }, () => {
  it("off: a cookie that ends with the browser session; on: a cookie with an expiry a month away", async () => {
    const { context, page, csp } = await watchedPage(browser);
    await page.goto(`${server.issuer}/account`);
    expect(await page.getByLabel("Stay signed in on this device").isChecked()).toBe(false);
    await audit(page, "account-sign-in-stay-signed-in");
    await signInOnAccountPage(page, "alice", false);
    const session = (await context.cookies()).find((cookie) => cookie.name === "atrium_session")!;
    expect(session.expires).toBe(-1);
    expect(session.httpOnly).toBe(true);

    await page.goto(`${server.issuer}/account?add=1`);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Add another account");
    await audit(page, "account-add-account");
    await signInOnAccountPage(page, "bob", true);
    const cookies = await context.cookies();
    const kept = cookies.find((cookie) => cookie.name === "atrium_session_kept")!;
    expect(kept.expires * 1000 - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
    // Adding Bob kept Alice.
    expect(cookies.find((cookie) => cookie.name === "atrium_session")).toBeTruthy();
    expect(csp).toEqual([]);
    await context.close();
  });
});

describe("two accounts in one browser", { timeout: E2E_TIMEOUT }, () => {
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    ({ context, page } = await watchedPage(browser));
    await page.goto(`${server.issuer}/account`);
    await signInOnAccountPage(page, "alice", true);
    await page.goto(`${server.issuer}/account?add=1`);
    await signInOnAccountPage(page, "bob", true);
  });
  afterAll(() => context?.close());

  it("the account pages say which account they act on, switch, and choose", async () => {
    await page.goto(`${server.issuer}/account`);
    await visibleText(page.getByText("Managing @bob.test"));
    await page.getByText("Managing @bob.test").click();
    await audit(page, "account-menu-open");
    await page.getByRole("button", { name: "Switch to @alice.test" }).click();
    await visibleText(page.getByText("Managing @alice.test"));

    await page.goto(`${server.issuer}/account?choose=1`);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Choose an account");
    await audit(page, "account-chooser");
    await page.getByRole("button", { name: /Continue as @bob\.test/ }).click();
    await visibleText(page.getByText("Managing @bob.test"));
  });

  it("the consent screen offers both; choosing Bob and Allow gives the app Bob's code", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Choose an account to give an app on this device access");
    await audit(page, "consent-chooser");
    await page.getByRole("button", { name: "Continue as @bob.test" }).click();
    await visibleText(page.getByText("Signed in as @bob.test"));
    await audit(page, "consent-chosen-account");
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await codeFor(page, pushed)).toBe(dids.bob);
  });

  it("prompt=none: several accounts need a choice, a hinted one that stays signed in and allowed before answers silently", async () => {
    const several = await pushRequest(client, app.redirectUri, { prompt: "none" });
    await page.goto(several.authorizeUrl);
    expect((await callbackParams(page, several.redirectUri)).get("error")).toBe("account_selection_required");
    const bob = await pushRequest(client, app.redirectUri, { prompt: "none", login_hint: "bob.test" });
    await page.goto(bob.authorizeUrl);
    expect(await codeFor(page, bob)).toBe(dids.bob);
  });

  it("prompt=select_account shows the chooser; prompt=login asks for a password", async () => {
    const select = await pushRequest(client, app.redirectUri, { prompt: "select_account", login_hint: "alice.test" });
    await page.goto(select.authorizeUrl);
    await visibleText(page.getByRole("button", { name: "Continue as @alice.test" }));
    const login = await pushRequest(client, app.redirectUri, { prompt: "login" });
    await page.goto(login.authorizeUrl);
    await visibleText(page.getByLabel("Password", { exact: true }));
    expect(await page.getByRole("button", { name: /Continue as/ }).count()).toBe(0);
  });

  it("'Use another account' adds Carol; the others stay signed in", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("link", { name: "Use another account" }).click();
    await page.getByLabel("Handle or email").fill("carol.test");
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await audit(page, "consent-add-account");
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await codeFor(page, pushed)).toBe(dids.carol);
    await page.goto(`${server.issuer}/account?choose=1`);
    for (const name of ["alice", "bob", "carol"]) await visibleText(page.getByRole("button", { name: new RegExp(`Continue as @${name}\\.test`) }));
    await page.getByRole("button", { name: "Sign out of all accounts" }).click();
    await visibleText(page.getByText("Every account is signed out of this browser."));
  });
});

describe("password recovery by email", { timeout: E2E_TIMEOUT }, () => {
  it("Forgot password? → email → new password: every session ends, the new password signs in", async () => {
    const { context, page, csp } = await watchedPage(browser);
    await page.goto(`${server.issuer}/account`);
    await page.getByRole("link", { name: "Forgot password?" }).click();
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Reset your password");
    await audit(page, "recover-request");
    await page.getByLabel("Handle or email").fill("carol@example.com");
    await page.getByRole("button", { name: "Send the link" }).click();
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Check your email");
    await audit(page, "recover-sent");

    const mail = await smtp.next();
    expect(mail.subject).toBe("Reset your password for localhost");
    await page.goto(resetLinkIn(mail));
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Choose a new password");
    await audit(page, "recover-new-password");
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByLabel("Also remove every passkey of this account").check();
    await page.getByRole("button", { name: "Set the new password" }).click();
    await visibleText(page.getByText("Your password was reset"));

    await page.getByLabel("Handle or email").fill("carol.test");
    await page.getByLabel("Password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await visibleText(page.getByText("Managing @carol.test"));

    // The link works once.
    await page.goto(resetLinkIn(mail));
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("This link does not work any more");
    await audit(page, "recover-link-used");
    expect(csp).toEqual([]);
    await context.close();
  });

  it("Forgot password? on a consent screen (issue 19): the reset page names the account, and the reset leads back to that request", async () => {
    const { context, page, csp } = await watchedPage(browser);
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("link", { name: "Forgot password?" }).click();
    await page.waitForURL((url) => url.pathname === "/account/recover");
    await page.getByLabel("Handle or email").fill("bob.test");
    await page.getByRole("button", { name: "Send the link" }).click();
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Check your email");
    // For a link opened on another device: the way back to the request, from this tab.
    const back = await page.getByRole("link", { name: "Back to signing in to the app" }).getAttribute("href");
    expect(new URL(back!, server.issuer).searchParams.get("request_uri")).toBe(new URL(pushed.authorizeUrl).searchParams.get("request_uri"));
    await audit(page, "issue19-recover-sent-with-way-back");

    await page.goto(resetLinkIn(await smtp.next()));
    await visibleText(page.getByText("For the account @bob.test."));
    await audit(page, "issue19-reset-names-account");
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Set the new password" }).click();
    // Back on the request, signed out by the reset, told so (issue 28, item 21: the notice has the focus, so it is
    // read first): the new password signs in and Allow answers the app.
    await page.waitForURL((url) => url.pathname === "/oauth/authorize");
    const notice = page.getByRole("status").filter({ hasText: "Your password was reset" });
    expect(await visibleText(notice)).toContain("Sign in with your new password.");
    expect(await holdsFocus(notice)).toBe(true);
    await audit(page, "consent-after-reset");
    await page.getByLabel("Handle or email").fill("bob.test");
    await page.getByLabel("Password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    expect(await codeFor(page, pushed)).toBe(dids.bob);
    expect(csp).toEqual([]);
    await context.close();
  });

  it("the code from the email, typed where the request was made (docs/decisions/0030): a wrong one is said at the field, the right one leads to the new password and back to the app", async () => {
    const { context, page, csp } = await watchedPage(browser);
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("link", { name: "Forgot password?" }).click();
    await page.waitForURL((url) => url.pathname === "/account/recover");
    await page.getByLabel("Handle or email").fill("dora.test");
    await page.getByRole("button", { name: "Send the link" }).click();
    await visibleText(page.getByRole("heading", { name: "Enter the code from the email" }));
    await audit(page, "recover-sent-with-code");
    const code = typedCodeIn(await smtp.next());

    await page.getByLabel("Code from the email", { exact: true }).fill("ZZZZZ-ZZZZZ");
    await page.getByRole("button", { name: "Continue", exact: true }).click();
    const field = page.getByLabel("Code from the email", { exact: true });
    await expect.poll(() => field.evaluate((element) => element === document.activeElement)).toBe(true);
    expect(await field.getAttribute("aria-describedby")).toContain("code-error");
    await visibleText(page.getByText("This code does not work"));
    await audit(page, "recover-code-wrong");

    await field.fill(code.toLowerCase());
    await page.getByRole("button", { name: "Continue", exact: true }).click();
    await visibleText(page.getByText("For the account @dora.test."));
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.waitForURL((url) => url.pathname === "/oauth/authorize");
    await page.getByLabel("Handle or email").fill("dora.test");
    await page.getByLabel("Password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    expect(await codeFor(page, pushed)).toBe(dids.dora);
    expect(csp).toEqual([]);
    await context.close();
  });
});
