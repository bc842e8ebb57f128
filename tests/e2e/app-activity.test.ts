import { AtpAgent } from "@atproto/api";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DpopClient, TokenSet } from "../../scripts/lib/dpop-client.ts";
import { translatorFor } from "../../app/.server/i18n/translate.ts";
import { LANGUAGES, LANGUAGE_NAMES } from "../../app/i18n/languages.ts";
import { ALICE, createAlice, obtainTokens } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { loopbackClient, SAMPLES, uploadBlob } from "../helpers/xrpc-extra.ts";
import { E2E_TIMEOUT, expectAccessible, hydrated, printFindings, releaseBrowser, seriousAxeViolations, sharedBrowser, signedInToAccountArea, visibleText, type Findings } from "./support.ts";

/**
 * An app's page in the account area (docs/decisions/0053) in a real browser, phone-sized: reached from Connected apps,
 * it shows what the app did with the permission beside each line; "Take this back" on the likes line narrows the app at
 * once (a form post, no JavaScript needed), a broad permission asks to confirm first; axe-core light and dark, before
 * and after; the page in every language. The protocol side (the 403, the refresh, the consent screen asked again) is
 * tests/integration/app-activity.test.ts, on both engines. The same for an app password's page, reached from the App
 * passwords list and from Connected apps, with Take back chat access (tests/integration/app-password-activity.test.ts).
 */

const POST = "repo:app.bsky.feed.post?action=create";
const LIKE = "repo:app.bsky.feed.like?action=create";
const SCOPE = `atproto ${POST} ${LIKE} blob:image/*`;

let server: TestServer;
let browser: Browser;
let alice: { did: string };
/** Apps signed in with privileged app passwords: one narrowed with JavaScript, one without. */
const bots: Record<"withScript" | "withoutScript", AtpAgent> = {} as Record<"withScript" | "withoutScript", AtpAgent>;
let client: DpopClient;
let tokens: TokenSet;
const findings: Findings = {};

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), sharedBrowser()]);
  alice = await createAlice(server);
  client = await loopbackClient(server, SCOPE);
  tokens = (await obtainTokens(server, client, { scope: SCOPE })).tokens;
  const createdAt = "2026-11-28T12:00:00.000Z";
  for (const text of ["one", "two", "three"]) await write("app.bsky.feed.post", { $type: "app.bsky.feed.post", text, createdAt }, 200);
  await write("app.bsky.feed.like", like(createdAt), 200);
  expect((await uploadBlob({ client, tokens, accessToken: tokens.access_token }, SAMPLES.png, "image/png")).status).toBe(200);
  const owner = new AtpAgent({ service: server.issuer });
  await owner.login({ identifier: ALICE.handle, password: ALICE.password });
  for (const [key, name] of [["withScript", "script bot"], ["withoutScript", "plain bot"]] as const) {
    const created = await owner.com.atproto.server.createAppPassword({ name, privileged: true });
    const bot = new AtpAgent({ service: server.issuer });
    await bot.login({ identifier: ALICE.handle, password: created.data.password });
    bots[key] = bot;
  }
  const posts = [];
  for (const text of ["one", "two", "three"]) posts.push(await bots.withScript.post({ text, createdAt }));
  await bots.withScript.like(posts[0]!.uri, posts[0]!.cid);
  await bots.withScript.uploadBlob(SAMPLES.png, { encoding: "image/png" });
}, E2E_TIMEOUT);

afterAll(async () => {
  printFindings(findings);
  await releaseBrowser(browser);
  await server?.stop();
});

function like(createdAt: string) {
  return { $type: "app.bsky.feed.like", subject: { uri: `at://${alice.did}/app.bsky.feed.post/3kabc`, cid: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" }, createdAt };
}

async function write(collection: string, record: unknown, status: number): Promise<void> {
  const result = await client.xrpc(tokens.access_token, "com.atproto.repo.createRecord", { json: { repo: alice.did, collection, record } });
  expect(result.status, JSON.stringify(result.body)).toBe(status);
}

/** From Connected apps to the app's page, by its link. */
async function openAppPage(page: Page): Promise<void> {
  await page.goto(`${server.issuer}/account/apps`);
  await page.getByRole("link", { name: /Activity and permissions/ }).click();
  await page.waitForURL(/\/account\/apps\/http%3A%2F%2Flocalhost/);
}

describe("an app's page", { timeout: E2E_TIMEOUT }, () => {
  it("shows what the app did; Take this back on its likes narrows it at once; a broad permission asks to confirm first (with JavaScript)", async () => {
    const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { bypassCSP: true });
    await openAppPage(page);
    await hydrated(page);
    const activity = page.getByTestId("activity");
    expect((await activity.getByRole("article").allInnerTexts()).map((text) => text.split("\n")[0])).toEqual(
      expect.arrayContaining(["Created 3 records · app.bsky.feed.post", "Created 1 record · app.bsky.feed.like", "Uploaded 1 file · image/png"]),
    );
    expect(await activity.getByRole("article").count()).toBe(3);
    await expectAccessible(page, "app-page-before", findings);

    await activity.getByRole("article").filter({ hasText: "app.bsky.feed.like" }).getByRole("button", { name: "Take this back" }).click();
    await page.waitForURL(/notice=permission-taken-back/);
    expect(await visibleText(page.getByText("Permission taken back."))).toContain("Permission taken back.");
    expect(await activity.getByRole("article").filter({ hasText: "app.bsky.feed.like" }).innerText()).toContain("Taken back");
    expect(await page.getByTestId("permissions").getByRole("article").filter({ hasText: LIKE }).innerText()).toContain("Taken back");
    await expectAccessible(page, "app-page-after", findings);
    await write("app.bsky.feed.like", like("2026-11-28T12:05:00.000Z"), 403);
    await write("app.bsky.feed.post", { $type: "app.bsky.feed.post", text: "still", createdAt: "2026-11-28T12:06:00.000Z" }, 200);

    await page.getByTestId("permissions").getByRole("article").filter({ hasText: "blob:image/*" }).getByRole("button", { name: "Take back" }).click();
    await page.waitForURL(/take-back=/);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Take this permission back?");
    await expectAccessible(page, "app-page-confirm-take-back", findings);
    await page.getByRole("button", { name: "Take back" }).click();
    await page.waitForURL(/notice=permission-taken-back/);
    expect(await page.getByTestId("permissions").getByRole("article").filter({ hasText: "blob:image/*" }).innerText()).toContain("Taken back");
    const upload = await uploadBlob({ client, tokens, accessToken: tokens.access_token }, SAMPLES.png, "image/png");
    expect(upload.status).toBe(403);
    await context.close();
  });

  it("takes a permission back without JavaScript: the form posts and the page comes back with it taken back", async () => {
    const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { javaScriptEnabled: false });
    await openAppPage(page);
    const posts = page.getByTestId("permissions").getByRole("article").filter({ hasText: POST });
    await posts.getByRole("button", { name: "Take back" }).click();
    await page.waitForURL(/notice=permission-taken-back/);
    expect(await page.getByTestId("permissions").getByRole("article").filter({ hasText: POST }).innerText()).toContain("Taken back");
    await write("app.bsky.feed.post", { $type: "app.bsky.feed.post", text: "refused", createdAt: "2026-11-28T12:07:00.000Z" }, 403);
    await context.close();
  });

  for (const language of LANGUAGES) {
    it(`reads in ${LANGUAGE_NAMES[language]} (${language}) at 390×844, axe-clean`, async () => {
      const t = translatorFor(language);
      const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { bypassCSP: true });
      await openAppPage(page);
      await page.goto(`${page.url().split("?")[0]}?lng=${language}`);
      const main = await page.locator("main").innerText();
      for (const key of ["account:app.activity.title", "account:app.permissions.title", "account:app.address", "account:app.takenBack"] as const) expect(main).toContain(t(key));
      expect(main).toContain(t("account:app.activity.kinds.create", { count: 4 }));
      expect(main).not.toMatch(/account:|app\.activity\./);
      expect(await seriousAxeViolations(page, "all")).toEqual([]);
      await context.close();
    });
  }
});

/** From App passwords to an app password's page, by its card's link. */
async function openAppPasswordPage(page: Page, name: string): Promise<void> {
  await page.goto(`${server.issuer}/account/app-passwords`);
  await page.getByRole("article").filter({ has: page.getByRole("heading", { name, exact: true }) }).getByRole("link", { name: "What it did, and its access" }).click();
  await page.waitForURL(/\/account\/app-passwords\/app-/);
}

describe("an app password's page", { timeout: E2E_TIMEOUT }, () => {
  it("shows what its apps did; Take back chat access narrows it at once (with JavaScript)", async () => {
    const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { bypassCSP: true });
    await openAppPasswordPage(page, "script bot");
    await hydrated(page);
    const activity = page.getByTestId("activity");
    expect((await activity.getByRole("article").allInnerTexts()).map((text) => text.split("\n")[0]).sort()).toEqual(
      ["Created 3 records · app.bsky.feed.post", "Created 1 record · app.bsky.feed.like", "Uploaded 1 file · image/png"].sort(),
    );
    await expectAccessible(page, "app-password-page-before", findings);
    await page.getByRole("button", { name: "Take back chat access" }).click();
    await page.waitForURL(/notice=app-password-chat-taken-back/);
    expect(await visibleText(page.getByText("Apps signed in with it cannot read your direct messages."))).toContain("cannot read");
    await expectAccessible(page, "app-password-page-after", findings);
    await bots.withScript.post({ text: "still posting", createdAt: "2026-11-28T12:10:00.000Z" });
    await context.close();
  });

  it("is reached from Connected apps and takes chat back without JavaScript", async () => {
    const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { javaScriptEnabled: false });
    await page.goto(`${server.issuer}/account/apps`);
    await page.getByRole("article").filter({ hasText: "plain bot" }).getByRole("link", { name: "What this app password did" }).click();
    await page.waitForURL(/\/account\/app-passwords\/app-/);
    expect(await page.getByTestId("activity").count()).toBe(0);
    await page.getByRole("button", { name: "Take back chat access" }).click();
    await page.waitForURL(/notice=app-password-chat-taken-back/);
    expect(await page.locator("main").innerText()).toContain("Apps signed in with it cannot read your direct messages.");
    await context.close();
  });

  for (const language of LANGUAGES) {
    it(`reads in ${LANGUAGE_NAMES[language]} (${language}) at 390×844, axe-clean`, async () => {
      const t = translatorFor(language);
      const { context, page } = await signedInToAccountArea(browser, server.issuer, ALICE.handle, { bypassCSP: true });
      await openAppPasswordPage(page, "script bot");
      await page.goto(`${page.url().split("?")[0]}?lng=${language}`);
      const main = await page.locator("main").innerText();
      for (const key of ["account:app.activity.title", "account:appPassword.chat.title", "account:app.address", "account:appPassword.addressHint", "account:appPassword.back"] as const) {
        expect(main).toContain(t(key));
      }
      expect(main).toContain(t("account:app.activity.kinds.create", { count: 4 }));
      expect(main).not.toMatch(/account:|appPassword\./);
      expect(await seriousAxeViolations(page, "all")).toEqual([]);
      await context.close();
    });
  }
});
