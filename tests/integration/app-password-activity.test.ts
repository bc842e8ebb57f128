import { AtpAgent } from "@atproto/api";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { countOf } from "../helpers/store-fixtures.ts";
import { startServiceStandIn, type ServiceStandIn } from "../helpers/service-stand-in.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { agentRefusal } from "../helpers/xrpc.ts";
import { SAMPLES } from "../helpers/xrpc-extra.ts";

/**
 * An app password's activity and reach (docs/decisions/0053), end to end with the official client, `@atproto/api`'s
 * AtpAgent, signed in with an app password: its 3 posts, 1 like, 1 image and a chat call through the proxy show on the
 * app password's page (reached from the App passwords list and from Connected apps), and nothing of them on another
 * app password's; Take back chat access there refuses the same session's next chat.bsky.* call as the reference
 * refuses a non-privileged app password, while its posts still work; revoking the app password deletes its history.
 */

const PLC_DIRECTORY = inject("plcDirectoryUrl");
/** Pinned to the chat stand-in by ATRIUM_PROXY_SERVICES. */
const CHAT_SERVICE = "did:web:api.bsky.chat#bsky_chat";
const DANA = { handle: "dana.test", email: "dana@example.com", password: "dana's long password" };

let server: TestServer;
let chat: ServiceStandIn;
let dana: { did: string };
let owner: AtpAgent;
let bot: AtpAgent;
let browser: Browser & { csrfToken: string };
/** The bot's app password's page, as the App passwords list links to it. */
let botPage: string;

beforeAll(async () => {
  chat = await startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: {}, audience: "did:web:api.bsky.chat" });
  // The answer AtpAgent checks chat.bsky.convo.listConvos's output against.
  chat.route("chat.bsky.convo.listConvos", (_call, response) => {
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(JSON.stringify({ convos: [] }));
  });
  server = await startTestServer({ ATRIUM_PROXY_SERVICES: JSON.stringify({ [CHAT_SERVICE]: chat.url }) });
  dana = await createAccount(server, DANA);
  owner = new AtpAgent({ service: server.issuer });
  await owner.login({ identifier: DANA.handle, password: DANA.password });
  const created = await owner.com.atproto.server.createAppPassword({ name: "chat bot", privileged: true });
  await owner.com.atproto.server.createAppPassword({ name: "idle" });
  bot = new AtpAgent({ service: server.issuer });
  await bot.login({ identifier: DANA.handle, password: created.data.password });
  browser = await signedIn(server, DANA.handle, DANA.password);
  botPage = linkTo((await openPage(browser, "/account/app-passwords")).html, "chat bot");
});
afterAll(async () => {
  await server?.stop();
  await chat?.close();
});

/** The href of the list card named `name`'s page link (/account/app-passwords/<id>). */
function linkTo(html: string, name: string): string {
  const card = html.split("<article").find((part) => part.includes(`>${name}</h3>`));
  const href = card && /href="(\/account\/app-passwords\/[^"?]+)"/.exec(card)?.[1];
  if (!href) throw new Error(`no page link for ${name}`);
  return href;
}

/** The page's "What it did" lines, in words ("Created 3 records · app.bsky.feed.post"), each a card's heading. */
function activityLines(html: string): string[] {
  const list = /data-testid="activity"[^>]*>([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? "";
  return [...list.matchAll(/<p id="activity-\d+"[^>]*>([\s\S]*?)<\/p>/g)].map((match) => pageText(match[1]!).replace(/\s+/g, " ").trim());
}

function listConvos() {
  return bot.chat.bsky.convo.listConvos({}, { headers: { "atproto-proxy": CHAT_SERVICE } });
}

async function post(text: string) {
  return bot.post({ text, createdAt: "2026-11-28T12:00:00.000Z" });
}

describe("an app password's page shows what its apps did, and takes its chat back without revoking it", () => {
  it("counts 3 posts, 1 like and an image made with it, reached from App passwords and from Connected apps; another app password shows none", async () => {
    const posts = [await post("one"), await post("two"), await post("three")];
    await bot.like(posts[0]!.uri, posts[0]!.cid);
    await bot.uploadBlob(SAMPLES.png, { encoding: "image/png" });

    const page = await openPage(browser, botPage);
    expect(page.status).toBe(200);
    expect(activityLines(page.html).sort()).toEqual(["Created 3 records · app.bsky.feed.post", "Created 1 record · app.bsky.feed.like", "Uploaded 1 file · image/png"].sort());
    expect(pageText(page.html)).toContain(`${server.issuer}${botPage}`);

    const apps = await openPage(browser, "/account/apps");
    expect(apps.html).toContain(`href="${botPage}"`);
    const list = (await openPage(browser, "/account/app-passwords")).html;
    const idle = await openPage(browser, linkTo(list, "idle"));
    expect(idle.status).toBe(200);
    expect(activityLines(idle.html)).toEqual([]);
    expect(pageText(idle.html)).toContain("It has not used its access in the last 90 days.");
  });

  it("counts a chat call through the proxy; Take back chat access refuses the same session's next one at once, its posts still work", async () => {
    expect((await listConvos()).success).toBe(true);
    const before = await openPage(browser, botPage);
    expect(activityLines(before.html)).toContain(`Made 1 call to a service · chat.bsky.convo.listConvos → ${CHAT_SERVICE}`);
    expect(pageText(before.html)).toContain("Take back chat access");

    // Without the CSRF token, or from another origin: refused, nothing changes.
    expect((await postForm(browser, botPage, { intent: "drop-privilege" })).status).toBe(403);
    expect((await postForm(browser, botPage, { csrf_token: before.csrfToken!, intent: "drop-privilege" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await listConvos()).success).toBe(true);

    const taken = await postForm(browser, botPage, { csrf_token: before.csrfToken!, intent: "drop-privilege" });
    expect(taken.status).toBe(303);
    expect(taken.location).toBe(`${botPage}?notice=app-password-chat-taken-back`);
    // The same access token, unchanged in the app: the reference's answer to a non-privileged app password.
    expect(await agentRefusal(listConvos())).toMatchObject({ status: 400, error: "InvalidToken", message: expect.stringContaining("Bad token method") });
    expect((await post("still posting")).uri).toMatch(/^at:\/\//);

    const after = await openPage(browser, taken.location!);
    const text = pageText(after.html);
    expect(text).toContain("Access to your direct messages taken back.");
    expect(text).toContain("Apps signed in with it cannot read your direct messages.");
    expect(text).not.toContain("Take back chat access");
    expect(activityLines(after.html)).toContain("Created 4 records · app.bsky.feed.post");
  });

  it("revoking the app password deletes its history, and its page is gone", async () => {
    const appRows = () => countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AppActivity" WHERE "accountDid" = ${dana.did}`);
    expect(await appRows()).toBeGreaterThan(0);
    await owner.com.atproto.server.revokeAppPassword({ name: "chat bot" });
    expect(await appRows()).toBe(0);
    expect((await openPage(browser, botPage)).status).toBe(404);
    const list = await openPage(browser, "/account/app-passwords");
    expect((await postForm(browser, botPage, { csrf_token: list.csrfToken!, intent: "drop-privilege" })).status).toBe(404);
  });
});
