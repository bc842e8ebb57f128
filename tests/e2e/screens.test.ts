import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { ClientHost } from "../helpers/client-host.ts";
import { permissionSetLexicon } from "../helpers/lexicon-car.ts";
import { execute } from "../helpers/databases.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  expectAccessible,
  printFindings,
  callbackParams,
  contextOptions,
  E2E_TIMEOUT,
  hydrated,
  releaseBrowser,
  sharedBrowser,
  loopbackClientId,
  measureScripts,
  PASSWORD,
  pushRequest,
  startAppCallback,
  visibleText,
  type AppCallback,
  type Findings,
} from "./support.ts";

/**
 * Every screen a person can reach, audited: axe-core finds no serious or
 * critical violation in light or dark mode, and each is photographed
 * narrow and wide, light and dark (test-results/screenshots/). Also: the
 * consent route stays within its JavaScript budget.
 */

const HANDLE = "alice.test";
const LOOPBACK_SCOPE = "atproto transition:generic";
const SET_NSID = "com.example.calendar.authFull";
const INCLUDE = `include:${SET_NSID}?aud=did:web:calendar.test%23cal`;
const RICH_SCOPE = [
  "atproto",
  "repo:app.bsky.feed.post",
  "repo:app.bsky.feed.like?action=create&action=delete",
  "repo:app.bsky.graph.follow?action=create",
  "blob:image/*",
  "blob:video/mp4",
  "rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview",
  "rpc:app.bsky.actor.getProfile?aud=did:web:api.bsky.app%23bsky_appview",
  "account:email",
  "identity:*",
  INCLUDE,
].join(" ");
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#0f766e"/><circle cx="22" cy="24" r="7" fill="#fde68a"/><path d="M8 50 26 32l10 10 8-8 12 16z" fill="#ccfbf1"/></svg>`;
/** 120 kB of compressed JavaScript at most on the consent route. */
const JS_BUDGET = 120 * 1024;

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let host: ClientHost;
let lexiconDir: string;
let loopback: DpopClient;
let rich: DpopClient;
let context: BrowserContext;
let page: Page;
const findings: Findings = {};

beforeAll(async () => {
  lexiconDir = mkdtempSync(path.join(os.tmpdir(), "atrium-e2e-lexicons-"));
  writeFileSync(
    path.join(lexiconDir, `${SET_NSID}.json`),
    JSON.stringify(
      permissionSetLexicon(
        SET_NSID,
        [
          { resource: "repo", collection: ["com.example.calendar.event", "com.example.calendar.rsvp"] },
          { resource: "rpc", lxm: ["com.example.calendar.getEvents"], inheritAud: true },
        ],
        { title: "Calendar", detail: "Create, change and delete your calendar events and answers to invitations." },
      ),
    ),
  );
  [server, browser, app, host] = await Promise.all([
    startTestServer({ ATRIUM_PERMISSION_SETS_DIR: lexiconDir }),
    sharedBrowser(),
    startAppCallback(),
    ClientHost.start(),
  ]);
  const { did } = await createAccount(server, { handle: HANDLE, email: "alice@example.com", password: PASSWORD });
  // A stored passkey (never used to sign in here): the sign-in screens then offer passkeys, and the passkeys page lists one.
  const now = Date.now();
  await execute(
    server.database(),
    sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "transports", "deviceType", "backedUp", "createdAt", "lastUsedAt")
      VALUES ('e2e-screens-credential', ${did}, 'Phone', ${Buffer.from([1, 2, 3])}, 0, ${JSON.stringify(["internal"])}, 'multiDevice', ${true}, ${at(now - 3 * 86_400_000)}, ${at(now - 3_600_000)})`,
  );
  host.serveMetadata(
    host.metadata({
      authMethod: "none",
      clientName: "Skyline Photos",
      overrides: {
        scope: RICH_SCOPE,
        logo_uri: "https://skyline.example/logo.svg",
        client_uri: "https://skyline.example/",
        tos_uri: "https://skyline.example/terms",
        policy_uri: "https://skyline.example/privacy",
      },
    }),
  );
  loopback = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(LOOPBACK_SCOPE));
  rich = new DpopClient(server.issuer, await generateDpopKey(), host.clientId);
  // axe-core is injected as a script: only a context that bypasses the CSP allows that.
  context = await browser.newContext(contextOptions({ bypassCSP: true }));
  await context.route("https://skyline.example/**", (route) => route.fulfill({ status: 200, contentType: "image/svg+xml", body: LOGO }));
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await host?.stop();
  await server?.stop();
  if (lexiconDir) rmSync(lexiconDir, { recursive: true, force: true });
  printFindings(findings);
});

/** Audits the current page under `name` and fails on serious or critical axe violations. */
const audit = (name: string) => expectAccessible(page, name, findings);

describe("every screen passes axe-core and is photographed", { timeout: E2E_TIMEOUT }, () => {
  it("start page", async () => {
    await page.goto(server.issuer);
    // No ATRIUM_SERVICE_NAME: the service is named by the issuer's host.
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("localhost");
    await audit("start");
  });

  it("not found page", async () => {
    const response = await page.goto(`${server.issuer}/no/such/page`);
    expect(response?.status()).toBe(404);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Page not found");
    await audit("not-found");
  });

  it("invalid authorization link", async () => {
    const response = await page.goto(`${server.issuer}/oauth/authorize?client_id=x&request_uri=urn:ietf:params:oauth:request_uri:req-unknown`);
    expect(response?.status()).toBe(400);
    await audit("authorize-invalid");
  });

  it("consent screen, signed out, loopback app; its JavaScript stays within budget", async () => {
    const pushed = await pushRequest(loopback, app.redirectUri);
    const scripts = measureScripts(page);
    await page.goto(pushed.authorizeUrl);
    await hydrated(page);
    await visibleText(page.getByRole("button", { name: "Use a passkey" }));
    const { total, files } = await scripts();
    console.log(`consent route JavaScript: ${(total / 1024).toFixed(1)} kB gzip in ${Object.keys(files).length} files`);
    expect(total, JSON.stringify(files)).toBeLessThan(JS_BUDGET);
    await audit("consent-signed-out");
    // A wrong password: the alert and the field it belongs to.
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill("wrong password");
    await page.getByRole("button", { name: "Allow" }).click();
    await visibleText(page.getByRole("alert").filter({ hasText: "not right" }));
    await audit("consent-wrong-password");
  });

  it("consent screen, rich client: logo, links, every permission family, a permission set", async () => {
    const pushed = await pushRequest(rich, host.redirectUri, { scope: RICH_SCOPE, login_hint: HANDLE });
    await page.goto(pushed.authorizeUrl);
    const main = await visibleText(page.locator("main"));
    expect(main).toContain("Skyline Photos");
    expect(main).toContain(new URL(host.clientId).host);
    expect(main).toMatch(/take over your account/);
    expect(main).toContain("Calendar");
    await page.getByText("What this includes").click();
    await page.getByText("See all permissions in detail").click();
    await page.getByText("Technical details").click();
    await audit("consent-rich");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Allow" }).click();
    expect((await callbackParams(page, pushed.redirectUri)).get("code")).toBeTruthy();
  });

  it("consent screen, signed in and remembered", async () => {
    const first = await pushRequest(loopback, app.redirectUri, { prompt: "consent" });
    await page.goto(first.authorizeUrl);
    await visibleText(page.getByText(`Signed in as @${HANDLE}`));
    await audit("consent-signed-in");
    await page.getByRole("button", { name: "Allow" }).click();
    await callbackParams(page, first.redirectUri);

    const again = await pushRequest(loopback, app.redirectUri);
    await page.goto(again.authorizeUrl);
    await visibleText(page.getByText("You have already allowed"));
    await audit("consent-remembered");
  });

  it("account pages", async () => {
    await page.goto(`${server.issuer}/account/apps`);
    await visibleText(page.getByRole("heading", { name: "Connected apps" }));
    await page.getByText("What it can do").first().click();
    await audit("account-apps");

    await page.goto(`${server.issuer}/account`);
    await visibleText(page.getByRole("heading", { name: "Your account" }));
    await audit("account-overview");

    await page.goto(`${server.issuer}/account/sessions`);
    await visibleText(page.getByText("This browser"));
    await audit("account-sessions");

    await page.goto(`${server.issuer}/account/passkeys`);
    await visibleText(page.getByRole("heading", { name: "Phone" }));
    await page.getByText("Rename").click();
    await audit("account-passkeys");

    await page.goto(`${server.issuer}/account/password`);
    await page.getByLabel("Current password").fill("wrong");
    await page.getByLabel("New password", { exact: true }).fill("short");
    await page.getByRole("button", { name: "Change password" }).click();
    expect(await visibleText(page.locator("#new_password-error"))).toMatch(/at least 8/);
    expect(await page.getByLabel("New password", { exact: true }).getAttribute("aria-describedby")).toContain("new_password-error");
    await audit("account-password-errors");
  });

  it("account sign-in, with and without an error", async () => {
    await context.clearCookies();
    await page.goto(`${server.issuer}/account`);
    await visibleText(page.getByRole("heading", { name: "Sign in to your account" }));
    await visibleText(page.getByRole("button", { name: "Sign in with a passkey" }));
    await audit("account-sign-in");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    expect(await visibleText(page.locator("#identifier-error"))).toMatch(/handle or email/i);
    await audit("account-sign-in-errors");
  });
});
