import { createHash } from "node:crypto";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  auditScreen,
  contextOptions,
  E2E_TIMEOUT,
  hydrated,
  launchBrowser,
  PASSWORD,
  visibleText,
  type AxeViolation,
} from "./support.ts";

/**
 * "Confirm it's you" in a real browser (docs/decisions/0007): with
 * JavaScript off (the password form) and on (the password, or a passkey of
 * the CDP virtual authenticator) and adding a passkey afterwards. The new
 * screens are audited with axe-core and photographed like every other screen.
 */

const STALE_MS = 6 * 60_000;

let server: TestServer;
let browser: Browser;
let accounts = 0;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
}, E2E_TIMEOUT);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function newAccount(): Promise<{ did: string; handle: string }> {
  accounts += 1;
  return createAccount(server, { handle: `carol${accounts}.test`, email: `carol${accounts}@example.com`, password: PASSWORD });
}

/** A browser signed in to the account area with the password. */
async function signedIn(handle: string, options: { javaScriptEnabled?: boolean; bypassCSP?: boolean } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(contextOptions(options));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(`${server.issuer}/account`);
  await page.getByLabel("Handle or email").fill(handle);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/notice=signed-in/);
  return { context, page };
}

/** Moves this browser's last sign-in six minutes into the past, as if it had been signed in for a while. */
async function ageSession(context: BrowserContext): Promise<void> {
  const cookie = (await context.cookies()).find((candidate) => candidate.name === "atrium_session");
  if (!cookie) throw new Error("not signed in");
  const idHash = createHash("sha256").update(decodeURIComponent(cookie.value)).digest("base64url");
  const then = Date.now() - STALE_MS;
  server.db().prepare(`UPDATE "BrowserSession" SET createdAt = ?, authenticatedAt = ? WHERE idHash = ?`).run(then, then, idHash);
}

function passkeyCount(did: string): number {
  return (server.db().prepare(`SELECT count(*) AS n FROM "Passkey" WHERE accountDid = ?`).get(did) as { n: number }).n;
}

async function audit(page: Page, name: string): Promise<void> {
  const found: Record<string, AxeViolation[]> = await auditScreen(page, name);
  expect(found, `${name}: ${JSON.stringify(found, null, 2)}`).toEqual({});
}

async function addVirtualAuthenticator(context: BrowserContext, page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return { cdp, authenticatorId };
}

describe("Confirm it's you", { timeout: E2E_TIMEOUT }, () => {
  it("with JavaScript off: the password form confirms, the page then offers adding a passkey; a wrong password is tied to its field", async () => {
    const { handle } = await newAccount();
    const { context, page } = await signedIn(handle, { javaScriptEnabled: false });
    await ageSession(context);
    await page.goto(`${server.issuer}/account/passkeys`);
    await visibleText(page.getByRole("heading", { name: "Confirm it's you" }));
    expect(await page.getByRole("button", { name: "Add a passkey" }).count()).toBe(0);
    // No JavaScript, no passkey button: the password is the way.
    expect(await page.getByRole("button", { name: "Use a passkey" }).count()).toBe(0);

    await page.getByLabel("Your password").fill("not my password");
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    expect(await visibleText(page.locator("#confirm-password-error"))).toContain("not right");
    expect(await page.getByLabel("Your password").getAttribute("aria-describedby")).toContain("confirm-password-error");

    await page.getByLabel("Your password").fill(PASSWORD);
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await page.waitForURL(/notice=identity-confirmed/);
    expect(await visibleText(page.getByRole("status"))).toContain("You can add a passkey now");
    await visibleText(page.getByRole("button", { name: "Add a passkey" }));
    expect(await page.getByRole("heading", { name: "Confirm it's you" }).count()).toBe(0);
    await context.close();
  });

  it("with JavaScript on: a passkey (bound to this session) confirms, and adding a passkey works after it; screens audited", async () => {
    const { did, handle } = await newAccount();
    const { context, page } = await signedIn(handle, { bypassCSP: true });
    const { cdp, authenticatorId } = await addVirtualAuthenticator(context, page);

    // Freshly signed in: adding is offered straight away.
    await page.goto(`${server.issuer}/account/passkeys`);
    await hydrated(page);
    await page.getByLabel("Passkey name").fill("Laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.waitForURL(/notice=passkey-added/);

    // Later: the same page asks to confirm first.
    await ageSession(context);
    await page.goto(`${server.issuer}/account/passkeys`);
    await hydrated(page);
    await visibleText(page.getByRole("heading", { name: "Confirm it's you" }));
    await visibleText(page.getByRole("button", { name: "Use a passkey" }));
    expect(await page.getByLabel("Passkey name").count()).toBe(0);
    await audit(page, "account-passkeys-confirm");

    await page.getByRole("button", { name: "Use a passkey" }).click();
    await page.waitForURL(/notice=identity-confirmed/);
    expect(await visibleText(page.getByRole("status"))).toContain("You can add a passkey now");

    // A second passkey: this authenticator already holds the first, so it forgets it (the server still lists it).
    await cdp.send("WebAuthn.clearCredentials", { authenticatorId });
    await hydrated(page);
    await page.getByLabel("Passkey name").fill("Phone");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.waitForURL(/notice=passkey-added/);
    expect(passkeyCount(did)).toBe(2);

    // The password works with JavaScript on too; its error is shown next to the field.
    await ageSession(context);
    await page.goto(`${server.issuer}/account/passkeys`);
    await page.getByLabel("Your password").fill("wrong");
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await visibleText(page.locator("#confirm-password-error"));
    await audit(page, "account-passkeys-confirm-error");
    await page.getByLabel("Your password").fill(PASSWORD);
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await page.waitForURL(/notice=identity-confirmed/);
    await context.close();
  });
});
