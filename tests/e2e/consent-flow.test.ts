import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  callbackParams,
  contextOptions,
  E2E_TIMEOUT,
  hydrated,
  releaseBrowser,
  sharedBrowser,
  loopbackClientId,
  PASSWORD,
  pushRequest,
  startAppCallback,
  watchCsp,
  visibleText,
  type AppCallback,
} from "./support.ts";

/**
 * The consent screen in a real browser: password sign-in and Allow, Deny,
 * remembered consent, prompt and login_hint, the same without JavaScript,
 * and revoking an app from /account/apps.
 */

const HANDLE = "alice.test";
const SCOPE = "atproto transition:generic";

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let client: DpopClient;
let did: string;

beforeAll(async () => {
  [server, browser, app] = await Promise.all([startTestServer(), sharedBrowser(), startAppCallback()]);
  ({ did } = await createAccount(server, { handle: HANDLE, email: "alice@example.com", password: PASSWORD }));
  client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(SCOPE));
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await server?.stop();
});

async function newPage(options: Parameters<Browser["newContext"]>[0] = {}): Promise<{ context: BrowserContext; page: Page; csp: string[] }> {
  const context = await browser.newContext(contextOptions(options));
  const page = await context.newPage();
  return { context, page, csp: watchCsp(page) };
}

async function signInAndAllow(page: Page) {
  await page.getByLabel("Handle or email").fill(HANDLE);
  await page.getByLabel("Password").fill(PASSWORD);
  // prompt=none answers only a session that chose to stay signed in (docs/decisions/0020).
  await page.getByLabel("Stay signed in on this device").check();
  await page.getByRole("button", { name: "Allow" }).click();
}

async function expectCode(page: Page, pushed: { redirectUri: string; state: string; verifier: string }) {
  const params = await callbackParams(page, pushed.redirectUri);
  expect(params.get("state")).toBe(pushed.state);
  expect(params.get("iss")).toBe(server.issuer);
  const code = params.get("code");
  expect(code, params.toString()).toBeTruthy();
  const tokens = await client.exchangeCode(code!, pushed.verifier, pushed.redirectUri);
  expect(tokens.status).toBe(200);
  expect(tokens.body.sub).toBe(did);
  return tokens.body;
}

describe("with JavaScript", { timeout: E2E_TIMEOUT }, () => {
  let context: BrowserContext;
  let page: Page;
  let csp: string[];

  beforeAll(async () => {
    ({ context, page, csp } = await newPage());
  });
  afterAll(() => context?.close());

  it("signs in with a password and allows: the app gets a code for Alice", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await hydrated(page);
    // A loopback app: the heading names what was verified, "an app on this device".
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Sign in to give an app on this device access to your account");
    const body = page.locator("main");
    expect(await body.innerText()).toContain("Know who you are");
    expect(await body.innerText()).toContain(pushed.redirectUri);
    // No passkey is registered on this server yet: no passkey button.
    expect(await page.getByRole("button", { name: "Use a passkey" }).count()).toBe(0);
    await signInAndAllow(page);
    await expectCode(page, pushed);
    expect(csp).toEqual([]);
  });

  it("Deny sends access_denied back to the app", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("button", { name: "Deny" }).click();
    const params = await callbackParams(page, pushed.redirectUri);
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe(pushed.state);
    expect(params.get("code")).toBeNull();
  });

  it("remembered consent: the second time says 'already allowed' and one click allows", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await visibleText(page.getByText("You have already allowed"));
    await visibleText(page.getByText(`Signed in as @${HANDLE}`));
    expect(await page.getByLabel("Password").count()).toBe(0);
    await page.getByRole("button", { name: "Allow" }).click();
    await expectCode(page, pushed);
  });

  it("prompt=consent shows the full screen even when consent is remembered", async () => {
    const pushed = await pushRequest(client, app.redirectUri, { prompt: "consent" });
    await page.goto(pushed.authorizeUrl);
    await visibleText(page.getByRole("heading", { name: "What it will be able to do" }));
    expect(await page.getByText("You have already allowed").count()).toBe(0);
    await page.getByRole("button", { name: "Allow" }).click();
    await expectCode(page, pushed);
  });

  it("prompt=none with a session and remembered consent answers at once, without a screen", async () => {
    const pushed = await pushRequest(client, app.redirectUri, { prompt: "none" });
    await page.goto(pushed.authorizeUrl);
    await expectCode(page, pushed);
  });

  it("prompt=login asks for the password again, then allows", async () => {
    const pushed = await pushRequest(client, app.redirectUri, { prompt: "login" });
    await page.goto(pushed.authorizeUrl);
    await visibleText(page.getByLabel("Password"));
    expect(await page.getByText(`Signed in as @${HANDLE}`).count()).toBe(0);
    await signInAndAllow(page);
    await expectCode(page, pushed);
  });

  it("'Not you? Use another account' shows the sign-in form, which adds an account (docs/decisions/0020)", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("button", { name: "Not you? Use another account" }).click();
    await visibleText(page.getByLabel("Password"));
    await signInAndAllow(page);
    await expectCode(page, pushed);
  });

  it("revoking the app on /account/apps ends its tokens: userinfo answers 401", async () => {
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("button", { name: "Allow" }).click();
    const tokens = await expectCode(page, pushed);
    expect((await client.userinfo(tokens.access_token)).status).toBe(200);

    await page.goto(`${server.issuer}/account/apps`);
    const appCard = page.getByRole("article").filter({ hasText: "An app on this device" });
    await visibleText(appCard);
    await appCard.getByText("What it can do").click();
    await visibleText(appCard.getByText("Know who you are"));
    await appCard.getByRole("button", { name: "Revoke" }).click();
    // A confirmation names the app first (issue 19 item 9); tests/e2e/account-status.test.ts covers it.
    await page.getByRole("button", { name: "Revoke access" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Access revoked");
    await visibleText(page.getByText("No app has access to your account."));

    const after = await client.userinfo(tokens.access_token);
    expect(after.status).toBe(401);
    expect((await client.refresh(tokens.refresh_token)).status).toBe(400);
    expect(csp).toEqual([]);
  });
});

describe("signed out", { timeout: E2E_TIMEOUT }, () => {
  it("prompt=none without a session sends login_required", async () => {
    const { context, page } = await newPage();
    const pushed = await pushRequest(client, app.redirectUri, { prompt: "none" });
    await page.goto(pushed.authorizeUrl);
    const params = await callbackParams(page, pushed.redirectUri);
    expect(params.get("error")).toBe("login_required");
    await context.close();
  });

  it("login_hint fills and locks the identifier", async () => {
    const { context, page } = await newPage();
    const pushed = await pushRequest(client, app.redirectUri, { login_hint: HANDLE });
    await page.goto(pushed.authorizeUrl);
    const identifier = page.getByLabel("Handle or email");
    expect(await identifier.inputValue()).toBe(HANDLE);
    expect(await identifier.getAttribute("readonly")).not.toBeNull();
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Allow" }).click();
    await expectCode(page, pushed);
    await context.close();
  });
});

describe("without JavaScript", { timeout: E2E_TIMEOUT }, () => {
  it("a wrong password shows an alert; the right one and Allow return a code", async () => {
    const { context, page } = await newPage({ javaScriptEnabled: false });
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Allow" }).click();
    expect(await visibleText(page.getByRole("alert").filter({ hasText: /\w/ }))).toContain("not right");
    expect(await page.getByLabel("Password").getAttribute("aria-describedby")).toMatch(/form-error/);
    await signInAndAllow(page);
    await expectCode(page, pushed);

    // Signed in now: Deny is one click too.
    const denied = await pushRequest(client, app.redirectUri, { prompt: "consent" });
    await page.goto(denied.authorizeUrl);
    await page.getByRole("button", { name: "Deny" }).click();
    expect((await callbackParams(page, denied.redirectUri)).get("error")).toBe("access_denied");
    await context.close();
  });

  it("the account pages work with plain form posts", async () => {
    const { context, page } = await newPage({ javaScriptEnabled: false });
    await page.goto(`${server.issuer}/account/sessions`);
    // Sent to sign in first, and back afterwards.
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(/\/account\/sessions$/);
    await visibleText(page.getByText("This browser"));
    await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
    await page.waitForURL(/\/account\?notice=signed-out$/);
    expect(await visibleText(page.getByRole("status"))).toContain("You are signed out");
    await context.close();
  });
});
