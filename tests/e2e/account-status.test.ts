import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { signedIn } from "../helpers/account.ts";
import { execute } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call } from "../helpers/xrpc.ts";
import { scopedSession, type ScopedSession } from "../helpers/xrpc-extra.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { callbackParams, contextOptions, E2E_TIMEOUT, expectAccessible, focusedId, holdsFocus, loopbackClientId, printFindings, pushRequest, releaseBrowser, sharedBrowser, startAppCallback, visibleText, watchCsp, type Findings } from "./support.ts";

/**
 * Confirming before revoking an app, and deactivating and reactivating the account (docs/decisions/0031), in
 * Chromium at 390×844, light and dark, axe-checked: with JavaScript off, Revoke leads to a confirmation that names
 * the app and what it loses, whose Cancel goes back and whose "Revoke access" ends the app's tokens; the deactivate
 * page's button is in the first screen, and the deactivated account's overview offers Reactivate first.
 */

let server: TestServer;
let browser: Browser;
const findings: Findings = {};
const PHONE = { width: 390, height: 844 };

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), sharedBrowser()]);
  await createAlice(server);
}, E2E_TIMEOUT);

afterAll(async () => {
  printFindings(findings);
  await releaseBrowser(browser);
  await server?.stop();
});

/** A signed-in phone browser; with `audit`, one axe-core can be injected into (its CSP bypassed, as elsewhere). */
async function signedInPage(options: { javaScriptEnabled?: boolean; audit?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; csp: string[] }> {
  const context = await browser.newContext(contextOptions({ javaScriptEnabled: options.javaScriptEnabled, bypassCSP: options.audit }));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const csp = watchCsp(page);
  await page.goto(`${server.issuer}/account`);
  await page.getByLabel("Handle or email").fill(ALICE.handle);
  await page.getByLabel("Password").fill(ALICE.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/notice=signed-in/);
  return { context, page, csp };
}

/** The element lies entirely within the first screen of a phone (nothing to scroll to reach it). */
async function expectInFirstScreen(locator: Locator): Promise<void> {
  const box = await locator.boundingBox();
  expect(box).not.toBeNull();
  expect(box!.y).toBeGreaterThanOrEqual(0);
  expect(box!.y + box!.height).toBeLessThanOrEqual(PHONE.height);
}

describe("confirm before revoking an app", { timeout: E2E_TIMEOUT }, () => {
  let app: ScopedSession;

  beforeAll(async () => {
    app = await scopedSession(server, "atproto transition:generic");
  }, E2E_TIMEOUT);

  it("without JavaScript: Revoke asks first, naming the app and what it loses; Cancel goes back; Revoke access ends its tokens", async () => {
    const { context, page, csp } = await signedInPage({ javaScriptEnabled: false });
    await page.goto(`${server.issuer}/account/apps`);
    const card = page.getByRole("article").filter({ hasText: "An app on this device" });
    await card.getByRole("button", { name: "Revoke" }).click();

    await page.waitForURL(/\/account\/apps\?revoke=/);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Revoke this app's access?");
    expect(await visibleText(page.getByRole("heading", { level: 2, name: "An app on this device" }))).toBe("An app on this device");
    const loses = await visibleText(page.locator("#revoke-loses"));
    expect(loses).toContain("tokens stop working");
    expect(loses).toContain("loses everything you allowed it");
    // The permissions are folded below: the text says where, by the fold's name (issue 28, item 21).
    expect(loses).toContain("open “What it can do” below");
    const confirm = page.getByRole("button", { name: "Revoke access" });
    await expectInFirstScreen(confirm);
    await expectInFirstScreen(page.getByRole("link", { name: "Cancel" }));
    // axe needs JavaScript: the same confirmation, in a browser that runs it.
    const audited = await signedInPage({ audit: true });
    await audited.page.goto(page.url());
    await expectAccessible(audited.page, "account-apps-revoke-confirm", findings);
    await audited.context.close();

    // Cancel: back to the list, nothing revoked.
    await page.getByRole("link", { name: "Cancel" }).click();
    await page.waitForURL(/\/account\/apps$/);
    await visibleText(card);
    expect((await call(app, "com.atproto.server.getSession")).status).toBe(200);

    await card.getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("button", { name: "Revoke access" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Access revoked");
    await visibleText(page.getByText("No app has access to your account."));
    expect((await call(app, "com.atproto.server.getSession")).status).toBe(401);
    expect(csp).toEqual([]);
    await context.close();
  });
});

describe("deactivate and reactivate", { timeout: E2E_TIMEOUT }, () => {
  it("the deactivate page explains first and its button is in the first screen; the deactivated overview offers Reactivate first", async () => {
    const { context, page } = await signedInPage({ audit: true });
    await page.goto(`${server.issuer}/account`);
    await page.getByRole("link", { name: /Deactivate your account/ }).click();
    await page.waitForURL(/\/account\/deactivate$/);
    const main = await page.locator("main").innerText();
    expect(main).toContain("Nothing is deleted");
    expect(main).toContain("The network stops seeing your data");
    expect(main).toContain("lose access");
    const deactivate = page.getByRole("button", { name: "Deactivate account" });
    await expectInFirstScreen(deactivate);
    await expectAccessible(page, "account-deactivate", findings);

    await deactivate.click();
    expect(await visibleText(page.getByRole("status"))).toContain("Done. Sign in here whenever you want to reactivate it.");
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Your account is deactivated");
    // Said once (issue 28, item 21): the title, then since when and what reactivating brings back.
    expect((await page.locator("main").innerText()).match(/deactivated/gi)).toHaveLength(1);
    await expectAccessible(page, "account-deactivated", findings);

    // An app asking meanwhile: the consent screen says why there is no Allow and reactivates in the flow (issue 28,
    // item 17): signed in a moment ago, one press; back on the same request, Allow gives the app its code.
    const app = await startAppCallback();
    const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId("atproto transition:generic"));
    const pushed = await pushRequest(client, app.redirectUri);
    await page.goto(pushed.authorizeUrl);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Reactivate your account to continue to an app on this device?");
    expect(await visibleText(page.locator("#account-deactivated"))).toContain("Your account is deactivated");
    expect(await page.getByRole("button", { name: "Allow" }).count()).toBe(0);
    const again = page.getByRole("button", { name: "Reactivate and continue" });
    await expectInFirstScreen(again);
    await expectAccessible(page, "consent-account-deactivated", findings);
    await again.click();
    await page.waitForURL(/notice=account-reactivated/);
    expect(new URL(page.url()).searchParams.get("request_uri")).toBe(new URL(pushed.authorizeUrl).searchParams.get("request_uri"));
    // The notice is announced: it has the focus on arrival.
    const notice = page.getByRole("status").filter({ hasText: "Your account is active again" });
    expect(await visibleText(notice)).toContain("Your account is active again");
    expect(await holdsFocus(notice)).toBe(true);
    await expectAccessible(page, "consent-account-reactivated", findings);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    expect((await callbackParams(page, pushed.redirectUri)).get("code")).toBeTruthy();

    // Deactivated again, and this browser's proof older than the window: the password in the same form, and Enter
    // presses Reactivate (the ways out above it are links).
    await page.goto(`${server.issuer}/account/deactivate`);
    await page.getByRole("button", { name: "Deactivate account" }).click();
    await visibleText(page.getByRole("status"));
    await execute(server.database(), sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${at(Date.now() - 10 * 60_000)}`);
    const later = await pushRequest(client, app.redirectUri);
    await page.goto(later.authorizeUrl);
    const password = page.getByLabel("Your password");
    await expectInFirstScreen(password);
    await expectAccessible(page, "consent-reactivate-confirm", findings);
    await password.fill(ALICE.password);
    await password.press("Enter");
    await page.waitForURL(/notice=account-reactivated/);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    expect((await callbackParams(page, later.redirectUri)).get("code")).toBeTruthy();
    await app.stop();

    // Deactivated again, the overview offers Reactivate first.
    await page.goto(`${server.issuer}/account/deactivate`);
    await page.getByRole("button", { name: "Deactivate account" }).click();
    await visibleText(page.getByRole("status"));
    await page.goto(`${server.issuer}/account`);
    const reactivate = page.getByRole("button", { name: "Reactivate account" });
    await expectInFirstScreen(reactivate);
    await expectAccessible(page, "account-overview-deactivated", findings);
    await reactivate.click();
    expect(await visibleText(page.getByRole("status"))).toContain("Your account is active again");
    expect(await page.getByRole("button", { name: "Reactivate account" }).count()).toBe(0);
    await context.close();
  });
});

describe("long lists get a filter", { timeout: E2E_TIMEOUT }, () => {
  it("apps and browsers: with JavaScript a filter by their words and how many it shows; without it, the whole list and no field", async () => {
    const kinds = ["post", "like", "repost", "follow", "block", "threadgate"];
    for (const kind of kinds) await scopedSession(server, `atproto repo:app.bsky.feed.${kind}`);
    for (let i = 0; i < 6; i++) await signedIn(server, ALICE.handle, ALICE.password);
    const { context, page } = await signedInPage({ audit: true });
    await page.goto(`${server.issuer}/account/apps`);
    const apps = page.getByRole("article");
    const total = await apps.count();
    expect(total).toBeGreaterThanOrEqual(6);
    const filter = page.getByRole("searchbox", { name: "Filter apps" });
    await filter.fill("FEED.LIKE");
    expect(await apps.count()).toBe(1);
    expect(await visibleText(page.locator("#apps-filter-count"))).toBe(`1 of ${total} shown`);
    await expectAccessible(page, "account-apps-filtered", findings);
    await filter.fill("no such app");
    expect(await apps.count()).toBe(0);
    expect(await visibleText(page.locator("#apps-filter-count"))).toBe("Nothing matches “no such app”.");

    await page.goto(`${server.issuer}/account/sessions`);
    const sessions = page.locator("main").getByRole("listitem");
    const all = await sessions.allInnerTexts();
    expect(all.length).toBeGreaterThanOrEqual(7);
    // This browser and the others this file signed in with Chromium, not the ones signed in over plain HTTP.
    const headless = all.filter((text) => /headless/i.test(text)).length;
    expect(headless).toBeLessThan(all.length);
    await page.getByRole("searchbox", { name: "Filter browsers" }).fill("headless");
    expect(await sessions.count()).toBe(headless);
    await context.close();

    const plain = await signedInPage({ javaScriptEnabled: false });
    await plain.page.goto(`${server.issuer}/account/apps`);
    expect(await plain.page.getByRole("article").count()).toBe(total);
    expect(await plain.page.getByRole("searchbox").isVisible()).toBe(false);
    await plain.context.close();
  });
});

describe("change the handle", { timeout: E2E_TIMEOUT }, () => {
  it("a taken handle is said under the field, which has the focus; a free one changes the handle", async () => {
    const { context, page } = await signedInPage({ audit: true });
    await page.goto(`${server.issuer}/account`);
    await page.getByRole("link", { name: "Change your handle" }).click();
    await page.waitForURL(/\/account\/handle$/);
    const field = page.getByLabel("New handle");
    await expectInFirstScreen(field);
    await expectAccessible(page, "account-handle", findings);

    await field.fill("alice");
    await page.getByRole("button", { name: "Change handle" }).click();
    expect(await visibleText(page.locator("#name-error"))).toContain("@alice.test is already your handle");
    expect(await focusedId(page, "name")).toBe("name");
    expect(await page.getByLabel("New handle").getAttribute("aria-describedby")).toContain("name-error");
    await expectInFirstScreen(page.locator("#name-error"));
    await expectAccessible(page, "account-handle-error", findings);

    // With JavaScript, the full handle shows as it is typed, as the server will read it.
    await page.getByLabel("New handle").fill("@Alice-New ");
    expect(await visibleText(page.locator("#handle-preview"))).toBe("Your new handle: @alice-new.test");
    await page.getByLabel("New handle").fill("alice-new");
    await page.getByRole("button", { name: "Change handle" }).click();
    expect(await visibleText(page.getByRole("status"))).toContain("Handle changed");
    // Announced: the notice takes the focus on arrival (issue 28, item 21).
    expect(await holdsFocus(page.getByRole("status"))).toBe(true);
    expect(await page.locator("header").innerText()).toContain("@alice-new.test");
    await context.close();
  });
});
