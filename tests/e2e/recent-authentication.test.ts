import { createHash } from "node:crypto";
import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  expectAccessible,
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
  visibleText,
  type AppCallback,
} from "./support.ts";

/**
 * "Confirm it's you" in a real browser (docs/decisions/0007): with
 * JavaScript off (the password form) and on (the password, or a passkey of
 * the CDP virtual authenticator), adding a passkey afterwards, and the offer
 * to secure the account after a password change. The new screens are
 * audited with axe-core and photographed like every other screen.
 */

const SCOPE = "atproto transition:generic";
const NEW_PASSWORD = "a brand new passphrase";
const STALE_MS = 6 * 60_000;

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let accounts = 0;

beforeAll(async () => {
  [server, browser, app] = await Promise.all([startTestServer(), sharedBrowser(), startAppCallback()]);
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
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
  const then = at(Date.now() - STALE_MS);
  await execute(server.database(), sql`UPDATE "BrowserSession" SET "createdAt" = ${then}, "authenticatedAt" = ${then} WHERE "idHash" = ${idHash}`);
}

async function passkeyCount(did: string): Promise<number> {
  return (await rowOf<{ n: number }>(server.database(), sql`SELECT count(*) AS "n" FROM "Passkey" WHERE "accountDid" = ${did}`))!.n;
}

/** A stored passkey row (never used here to sign in): the pages then count it. */
async function storePasskey(did: string, name: string): Promise<void> {
  await execute(
    server.database(),
    sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "transports", "deviceType", "backedUp", "createdAt")
      VALUES (${`stored-${name}-${did}`}, ${did}, ${name}, ${Buffer.from([1, 2, 3])}, 0, ${JSON.stringify(["internal"])}, 'multiDevice', ${true}, ${at(Date.now())})`,
  );
}

const audit = (page: Page, name: string) => expectAccessible(page, name);

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
    expect(await passkeyCount(did)).toBe(2);

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

describe("after a password change", { timeout: E2E_TIMEOUT }, () => {
  it("the page offers to remove the passkeys (counted) and sign out everywhere else, apps ticked; later it asks to confirm first; securing does it", async () => {
    const { did, handle } = await newAccount();
    await storePasskey(did, "Old phone");
    await storePasskey(did, "Unknown key");
    const { context, page } = await signedIn(handle, { bypassCSP: true });
    // An app allowed on the consent screen in this browser.
    const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(SCOPE));
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("button", { name: "Allow" }).click();
    const tokens = await client.exchangeCode((await callbackParams(page, pushed.redirectUri)).get("code")!, pushed.verifier, pushed.redirectUri);
    expect(tokens.status).toBe(200);

    await page.goto(`${server.issuer}/account/password`);
    expect(await page.getByRole("heading", { name: "Secure your account" }).count()).toBe(0);
    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.waitForURL(/notice=password-changed/);
    expect(await visibleText(page.getByRole("status"))).toContain("Password changed");
    const offer = page.getByRole("region", { name: "Secure your account" });
    expect(await visibleText(offer)).toContain("Removes your 2 passkeys.");
    expect(await offer.innerText()).toContain("Signs out every other browser again");
    expect(await page.getByLabel(/Also disconnect every app \(1 app connected\)/).isChecked()).toBe(true);
    await audit(page, "account-password-secure");

    // Left open for a while: securing now asks to confirm first, inside the offer.
    await ageSession(context);
    await page.getByRole("button", { name: "Secure my account" }).click();
    expect(await visibleText(page.getByRole("alert").filter({ hasText: /\w/ }))).toContain("confirm it's you first");
    await visibleText(offer.getByRole("heading", { name: "Confirm it's you" }));
    await audit(page, "account-password-secure-confirm");
    expect(await passkeyCount(did)).toBe(2);
    await page.getByLabel("Your password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await page.waitForURL(/notice=secure-confirmed/);
    expect(await page.getByLabel(/Also disconnect every app/).isChecked()).toBe(true);

    await page.getByRole("button", { name: "Secure my account" }).click();
    await page.waitForURL(/notice=account-secured-apps/);
    expect(await visibleText(page.getByRole("status"))).toContain("every app is disconnected");
    expect(await passkeyCount(did)).toBe(0);
    expect((await client.userinfo(tokens.body.access_token)).status).toBe(401);
    await page.goto(`${server.issuer}/account/apps`);
    await visibleText(page.getByText("No app has access to your account."));
    await context.close();
  });

  it("with JavaScript off: 'Confirm it's you' inside the offer when the change was a while ago, then securing (apps kept when unticked)", async () => {
    const { did, handle } = await newAccount();
    await storePasskey(did, "Old phone");
    const { context, page } = await signedIn(handle, { javaScriptEnabled: false });
    await page.goto(`${server.issuer}/account/password`);
    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("New password, again").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.waitForURL(/notice=password-changed/);
    await ageSession(context);

    await page.getByRole("checkbox", { name: /Also disconnect every app/ }).uncheck();
    await page.getByRole("button", { name: "Secure my account" }).click();
    expect(await visibleText(page.getByRole("alert").filter({ hasText: /\w/ }))).toContain("confirm it's you first");
    expect(await passkeyCount(did)).toBe(1);
    await page.getByLabel("Your password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Confirm", exact: true }).click();
    await page.waitForURL(/notice=secure-confirmed/);
    await page.getByRole("checkbox", { name: /Also disconnect every app/ }).uncheck();
    await page.getByRole("button", { name: "Secure my account" }).click();
    await page.waitForURL(/notice=account-secured$/);
    expect(await visibleText(page.getByRole("status"))).toContain("Connected apps keep their access");
    expect(await passkeyCount(did)).toBe(0);
    await context.close();
  });
});
