import type { Browser, Page } from "playwright-core";
import { readFileSync } from "node:fs";
import { P256Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { LANGUAGES } from "../../app/i18n/languages.ts";
import type { TestServer } from "../helpers/test-server.ts";
import { E2E_TIMEOUT, expectAccessible, focusedId, hydrated, mailingServer, PASSWORD, visibleText, watchedPage, type MailingServer } from "./support.ts";

/**
 * "Keep a key of your own" (/account/identity; issue 30, item 2; docs/decisions/0050) in Chromium on a phone
 * (390×844). With JavaScript, the key pair is made in the browser and its private key downloaded; the file is then
 * all the person needs to rewrite their DID document at the test run's PLC directory without this server. Without
 * JavaScript, a did:key made elsewhere is pasted. Every screen passes axe-core light and dark, in every language, and
 * nothing is wider than the phone.
 */

const directoryUrl = inject("plcDirectoryUrl");

let setup: MailingServer;
let server: TestServer;
let browser: Browser;
let accounts: MailingServer["accounts"];

beforeAll(async () => {
  setup = await mailingServer(["ivy", "jon", "kim"]);
  ({ server, browser, accounts } = setup);
}, E2E_TIMEOUT);

afterAll(async () => {
  await setup?.close();
});

async function signIn(page: Page, handle: string): Promise<void> {
  await page.goto(`${server.issuer}/account`);
  await page.getByLabel("Handle or email").fill(handle);
  await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((url) => url.pathname === "/account");
}

async function rotationKeys(did: string): Promise<string[]> {
  return ((await (await fetch(`${directoryUrl}/${did}/data`)).json()) as { rotationKeys: string[] }).rotationKeys;
}

/** Nothing on the page is wider than the window (a did:key is one long word). */
async function fitsTheWindow(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
}

describe("keeping a key of one's own, on a phone", { timeout: E2E_TIMEOUT }, () => {
  it("with JavaScript: the key is made here, its private half downloaded, its public half added; with the file alone the person then moves their DID", async () => {
    const { context, page, csp } = await watchedPage(browser, true);
    await signIn(page, "ivy.test");
    await page.getByRole("link", { name: "Keep a key of your own" }).click();
    await page.waitForURL((url) => url.pathname === "/account/identity");
    await hydrated(page);
    await visibleText(page.getByText("Only this server's key can change it."));
    expect(await fitsTheWindow(page)).toBe(true);
    await expectAccessible(page, "account-identity");

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Make a key in this browser" }).click()]);
    expect(download.suggestedFilename()).toBe("rotation-key-ivy.test.json");
    const file = JSON.parse(readFileSync((await download.path())!, "utf8")) as { did: string; rotationKey: string; privateKeyHex: string; note: string };
    expect(file.did).toBe(accounts.ivy!.did);
    expect(file.note).toContain("Keep this file private and safe");
    await visibleText(page.getByText("Your key is made"));
    // The public half is filled in; the private half is only in the file.
    expect(await page.getByLabel("Your public key (did:key)").inputValue()).toBe(file.rotationKey);
    expect(await page.content()).not.toContain(file.privateKeyHex);
    await expectAccessible(page, "account-identity-made");
    await page.getByRole("button", { name: "Add my key above this server's" }).click();
    await page.waitForURL((url) => url.search.includes("notice=own-key-added"));
    await visibleText(page.getByText("Your key is added"));
    await expectAccessible(page, "account-identity-added");
    expect(csp).toEqual([]);
    const [serverKey] = (await rotationKeys(accounts.ivy!.did)).slice(1);
    expect(await rotationKeys(accounts.ivy!.did)).toEqual([file.rotationKey, serverKey]);

    // The downloaded file is all it takes: its key alone signs the DID's next operation, without this server.
    const own = await P256Keypair.import(file.privateKeyHex);
    expect(own.did()).toBe(file.rotationKey);
    const last = (await (await fetch(`${directoryUrl}/${file.did}/log/last`)).json()) as plc.Operation;
    const moved = await plc.createUpdateOp(last, own, (normalized) => ({ ...normalized, rotationKeys: [own.did()], services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://newpds.example.com" } } }));
    const response = await fetch(`${directoryUrl}/${file.did}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(moved) });
    expect(response.status).toBe(200);
    await page.reload();
    await visibleText(page.getByText("This server's key is no longer in your record"));
    await expectAccessible(page, "account-identity-elsewhere");
    await context.close();
  });

  it("without JavaScript: no button that would do nothing; a did:key made elsewhere is pasted, a wrong one said at its field", async () => {
    const { context, page } = await watchedPage(browser, false);
    await signIn(page, "jon.test");
    await page.goto(`${server.issuer}/account/identity`);
    expect(await page.getByRole("button", { name: "Make a key in this browser" }).count()).toBe(0);
    await page.getByLabel("Your public key (did:key)").fill("did:key:zNotAKey");
    await page.getByRole("button", { name: "Add my key above this server's" }).click();
    await visibleText(page.getByText("This is not a key the directory accepts"));
    expect(await focusedId(page, "didKey")).toBe("didKey");
    expect(await page.getByLabel("Your public key (did:key)").getAttribute("aria-describedby")).toContain("didKey-error");
    const own = await P256Keypair.create();
    await page.getByLabel("Your public key (did:key)").fill(own.did());
    await page.getByRole("button", { name: "Add my key above this server's" }).click();
    await page.waitForURL((url) => url.search.includes("notice=own-key-added"));
    expect((await rotationKeys(accounts.jon!.did))[0]).toBe(own.did());
    // Listed, with a way to take it out again.
    await page.getByRole("button", { name: `Remove the key ${own.did()}` }).click();
    await page.waitForURL((url) => url.search.includes("notice=own-key-removed"));
    expect(await rotationKeys(accounts.jon!.did)).not.toContain(own.did());
    expect(await fitsTheWindow(page)).toBe(true);
    await context.close();
  });

  it("speaks every shipped language: the title and the button from each catalogue, axe-clean light and dark", async () => {
    const { context, page } = await watchedPage(browser, true);
    await signIn(page, "kim.test");
    for (const language of LANGUAGES) {
      const words = JSON.parse(readFileSync(new URL(`../../app/i18n/locales/${language}/account.json`, import.meta.url), "utf8")) as {
        titles: { identity: string };
        identity: { submit: string; make: string };
      };
      await page.goto(`${server.issuer}/account/identity?lng=${language}`);
      await hydrated(page);
      expect(await page.locator("html").getAttribute("lang")).toBe(language);
      await visibleText(page.getByRole("heading", { level: 1, name: words.titles.identity }));
      await visibleText(page.getByRole("button", { name: words.identity.make }));
      await visibleText(page.getByRole("button", { name: words.identity.submit }));
      expect(await fitsTheWindow(page)).toBe(true);
      await expectAccessible(page, `i18n/${language}/account-identity`);
    }
    await context.close();
  });
});
