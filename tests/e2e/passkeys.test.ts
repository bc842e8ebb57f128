import type { Browser, BrowserContext, CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { rowsOf } from "../helpers/databases.ts";
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
  visibleText,
  watchCsp,
  type AppCallback,
} from "./support.ts";

/**
 * Passkeys in a real browser with the Chrome DevTools Protocol's virtual
 * authenticator: register on /account/passkeys, sign in with it on the
 * consent screen (consent stays a click) and on /account, recover from a
 * failed assertion, rename and delete.
 */

const HANDLE = "alice.test";
const SCOPE = "atproto transition:generic";

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let client: DpopClient;
let did: string;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;
let authenticatorId: string;
let csp: string[];

beforeAll(async () => {
  [server, browser, app] = await Promise.all([startTestServer(), sharedBrowser(), startAppCallback()]);
  ({ did } = await createAccount(server, { handle: HANDLE, email: "alice@example.com", password: PASSWORD }));
  client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(SCOPE));
  context = await browser.newContext(contextOptions());
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  csp = watchCsp(page);
  // The authenticator belongs to this tab: every test uses the same page.
  cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  ({ authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  }));
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await server?.stop();
});

/** A signed-out browser (the sign-out button is tested elsewhere; here it would race the autofill sign-in on /account). */
/** The consent screen of the same request (a passkey sign-in returns to it naming the account: docs/decisions/0020). */
function sameScreen(url: string, authorizeUrl: string): boolean {
  const [at, pushed] = [new URL(url), new URL(authorizeUrl)];
  return at.pathname === pushed.pathname && at.searchParams.get("request_uri") === pushed.searchParams.get("request_uri") && at.searchParams.get("client_id") === pushed.searchParams.get("client_id");
}

async function signOut() {
  await context.clearCookies();
}

function passkeyRows(): Promise<{ name: string; lastUsedAt: number | null }[]> {
  return rowsOf(server.database(), sql`SELECT "name", "lastUsedAt" FROM "Passkey" WHERE "accountDid" = ${did}`);
}

describe("passkeys", { timeout: E2E_TIMEOUT }, () => {
  it("registers a passkey on /account/passkeys", async () => {
    await page.goto(`${server.issuer}/account/passkeys`);
    // Signed out: the page sends us to sign in first, then back.
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(/\/account\/passkeys$/);
    await visibleText(page.getByText("You have no passkeys yet."));
    await hydrated(page);

    // No name: the field says so, nothing is created.
    await page.getByRole("button", { name: "Add a passkey" }).click();
    expect(await visibleText(page.locator("#passkey-name-error"))).toMatch(/name/i);

    await page.getByLabel("Passkey name").fill("Test laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.waitForURL(/notice=passkey-added/);
    expect(await visibleText(page.getByRole("status"))).toContain("Passkey added");
    expect(await visibleText(page.getByRole("heading", { name: "Test laptop" }))).toBe("Test laptop");
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    expect(credentials).toHaveLength(1);
    expect(await passkeyRows()).toEqual([{ name: "Test laptop", lastUsedAt: null }]);
  });

  it("signs in from the username field's autofill (conditional mediation); Allow is still a separate click", async () => {
    await signOut();
    const pushed = await pushRequest(client, app.redirectUri);
    // The virtual authenticator answers the autofill request as a person picking the passkey would.
    await page.goto(pushed.authorizeUrl);
    expect(await visibleText(page.getByText(`Signed in as @${HANDLE}`))).toContain(HANDLE);
    expect(sameScreen(page.url(), pushed.authorizeUrl)).toBe(true);
    await page.getByRole("button", { name: "Allow" }).click();
    const params = await callbackParams(page, pushed.redirectUri);
    const tokens = await client.exchangeCode(params.get("code")!, pushed.verifier, pushed.redirectUri);
    expect(tokens.status).toBe(200);
    expect(tokens.body.sub).toBe(did);
    expect((await passkeyRows())[0]?.lastUsedAt).not.toBeNull();
  });

  it("signs in with the consent screen's 'Use a passkey' button", async () => {
    // From here on the browser offers no autofill for passkeys, so only the button starts a sign-in.
    await page.addInitScript(() => {
      Object.defineProperty(PublicKeyCredential, "isConditionalMediationAvailable", { value: async () => false });
    });
    await signOut();
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    await hydrated(page);
    expect(await page.getByLabel("Handle or email").getAttribute("autocomplete")).toBe("username webauthn");
    await page.getByRole("button", { name: "Use a passkey" }).click();
    // Back on the same screen, now signed in, waiting for the decision.
    expect(await visibleText(page.getByText(`Signed in as @${HANDLE}`))).toContain(HANDLE);
    expect(sameScreen(page.url(), pushed.authorizeUrl)).toBe(true);
    await page.getByRole("button", { name: "Allow" }).click();
    const params = await callbackParams(page, pushed.redirectUri);
    expect((await client.exchangeCode(params.get("code")!, pushed.verifier, pushed.redirectUri)).status).toBe(200);
  });

  it("a failed passkey sign-in is explained, the password stays usable, and a retry works", async () => {
    await signOut();
    const pushed = await pushRequest(client, app.redirectUri, { prompt: "consent" });
    await page.goto(pushed.authorizeUrl);
    await hydrated(page);
    // The authenticator now signs with a bad signature: the server refuses the assertion.
    await cdp.send("WebAuthn.setResponseOverrideBits", { authenticatorId, isBogusSignature: true });
    await page.getByRole("button", { name: "Use a passkey" }).click();
    expect(await visibleText(page.getByRole("alert").filter({ hasText: /\w/ }))).toMatch(/could not be verified/i);
    await visibleText(page.getByLabel("Password"));
    expect(sameScreen(page.url(), pushed.authorizeUrl)).toBe(true);

    // Fresh options were fetched: a second attempt with a good signature signs in.
    await cdp.send("WebAuthn.setResponseOverrideBits", { authenticatorId, isBogusSignature: false });
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await visibleText(page.getByText(`Signed in as @${HANDLE}`));
    await page.getByRole("button", { name: "Allow" }).click();
    expect((await callbackParams(page, pushed.redirectUri)).get("code")).toBeTruthy();
  });

  it("signs in to /account with the passkey", async () => {
    await signOut();
    await page.goto(`${server.issuer}/account`);
    await hydrated(page);
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await page.waitForURL(/\/account\?notice=signed-in$/);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Your account");
    expect(await page.locator("header").innerText()).toContain(`@${HANDLE}`);
  });

  it("renames and deletes a passkey", async () => {
    await page.goto(`${server.issuer}/account/passkeys`);
    await page.getByText("Rename").click();
    await page.getByLabel("New name").fill("");
    await page.getByRole("button", { name: "Save name" }).click();
    expect(await visibleText(page.locator("#rename-0-error"))).toMatch(/name/i);
    await page.getByLabel("New name").fill("Work laptop");
    await page.getByRole("button", { name: "Save name" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Passkey renamed");
    await visibleText(page.getByRole("heading", { name: "Work laptop" }));

    await page.getByRole("button", { name: "Delete" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Passkey deleted");
    await visibleText(page.getByText("You have no passkeys yet."));
    expect(await passkeyRows()).toEqual([]);
    expect(csp).toEqual([]);
  });
});
