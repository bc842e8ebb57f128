import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DpopClient, TokenSet } from "../../scripts/lib/dpop-client.ts";
import { openPage, postForm, type Browser } from "../helpers/account.ts";
import { openConsentPage, visibleText } from "../helpers/consent.ts";
import { rowsOf } from "../helpers/databases.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { MAX_TARGETS_PER_KIND } from "../../app/.server/activity/activity-lines.ts";
import { createAlice, obtainTokens } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { loopbackClient, missingPermission, pushScope, SAMPLES, uploadBlob } from "../helpers/xrpc-extra.ts";

/**
 * What an app did, and narrowing it afterwards (docs/decisions/0053), end to end on a started server with a real
 * OAuth token: the app writes 3 posts and 1 like and uploads an image; its page in the account area (reached at the
 * address the metadata names) shows exactly those; taking "likes" back there refuses its next like with
 * insufficient_scope naming it while its posts still succeed, its next refresh's scope lacks it, and asking for it
 * again shows the consent screen with just that permission. An app that made no call shows none.
 */

const POST = "repo:app.bsky.feed.post?action=create";
const LIKE = "repo:app.bsky.feed.like?action=create";
const SCOPE = `atproto ${POST} ${LIKE} blob:image/*`;

let server: TestServer;
let alice: { did: string };
let client: DpopClient;
let tokens: TokenSet;
let browser: Browser;
let idleClient: DpopClient;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  client = await loopbackClient(server, SCOPE);
  const authorized = await obtainTokens(server, client, { scope: SCOPE });
  tokens = authorized.tokens;
  // The approval signed this cookie jar in: the account area, as the person's browser.
  browser = { server, jar: authorized.jar };
  // A second app, allowed but never used: its page shows no activity.
  idleClient = await loopbackClient(server, "atproto repo:app.bsky.feed.post?action=create");
  await obtainTokens(server, idleClient, { scope: "atproto repo:app.bsky.feed.post?action=create" });
});
afterAll(async () => {
  await server?.stop();
});

function record(collection: string, index: number) {
  const createdAt = new Date(Date.UTC(2026, 10, 28, 12, index)).toISOString();
  return collection === "app.bsky.feed.post"
    ? { $type: collection, text: `post ${index}`, createdAt }
    : { $type: collection, subject: { uri: `at://${alice.did}/app.bsky.feed.post/3kabc${index}`, cid: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" }, createdAt };
}

function create(collection: string, index: number, accessToken = tokens.access_token) {
  return client.xrpc<{ error?: string; message?: string }>(accessToken, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection, record: record(collection, index) },
  });
}

/** The app's page, by the address the metadata gives: the management URI, a slash and the encoded client_id. */
async function appPagePath(clientId: string): Promise<string> {
  const metadata = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as { user_authorization_management_uri: string };
  return new URL(`${metadata.user_authorization_management_uri}/${encodeURIComponent(clientId)}`).pathname;
}

/** The page's "What it did" lines, in words ("Created 3 records · app.bsky.feed.post"), each a card's heading. */
function activityLines(html: string): string[] {
  const list = /data-testid="activity"[^>]*>([\s\S]*?)<\/ul>/.exec(html)?.[1] ?? "";
  return [...list.matchAll(/<p id="activity-\d+"[^>]*>([\s\S]*?)<\/p>/g)].map((match) => visibleText(match[1]!).trim());
}

describe("an app's page shows what it did, and narrows it without a new sign-in", () => {
  it("counts 3 posts, 1 like and an image, each with the permission it used; an app that made no call shows none", async () => {
    for (const index of [1, 2, 3]) expect((await create("app.bsky.feed.post", index)).status).toBe(200);
    expect((await create("app.bsky.feed.like", 4)).status).toBe(200);
    const session = { client, tokens, accessToken: tokens.access_token };
    expect((await uploadBlob(session, SAMPLES.png, "image/png")).status).toBe(200);

    const page = await openPage(browser, await appPagePath(client.clientId));
    expect(page.status).toBe(200);
    expect(activityLines(page.html).sort()).toEqual(
      ["Created 3 records · app.bsky.feed.post", "Created 1 record · app.bsky.feed.like", "Uploaded 1 file · image/png"].sort(),
    );
    const text = visibleText(page.html);
    expect(text).toContain("Last time");
    expect(text).toContain("Permission used");

    const idle = await openPage(browser, await appPagePath(idleClient.clientId));
    expect(idle.status).toBe(200);
    expect(activityLines(idle.html)).toEqual([]);
    expect(visibleText(idle.html)).toContain("It has not used its access in the last 90 days.");
  });

  it("refuses a take-back form without the CSRF token or from another origin, and changes nothing", async () => {
    const path = await appPagePath(client.clientId);
    const page = await openPage(browser, path);
    const noToken = await postForm(browser, path, { intent: "take-back", permission: LIKE });
    expect(noToken.status).toBe(403);
    const otherOrigin = await postForm(browser, path, { csrf_token: page.csrfToken!, intent: "take-back", permission: LIKE }, { origin: "https://evil.example" });
    expect(otherOrigin.status).toBe(403);
    expect((await create("app.bsky.feed.like", 5)).status).toBe(200);
  });

  it("takes likes back: the next like is 403 insufficient_scope naming it, posts still succeed, the refresh's scope lacks it", async () => {
    const path = await appPagePath(client.clientId);
    const page = await openPage(browser, path);
    const taken = await postForm(browser, path, { csrf_token: page.csrfToken!, intent: "take-back", permission: LIKE });
    expect(taken.status).toBe(303);
    expect(taken.location).toBe(`${path}?notice=permission-taken-back`);

    const like = await create("app.bsky.feed.like", 6);
    expect(like.status).toBe(403);
    expect(like.body.error).toBe("InsufficientScope");
    expect(like.body.message).toContain(missingPermission(LIKE));
    expect(like.headers.get("www-authenticate")).toMatch(/^DPoP error="insufficient_scope"/);
    expect((await create("app.bsky.feed.post", 7)).status).toBe(200);

    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.scope.split(" ").sort()).toEqual(["atproto", POST, "blob:image/*"].sort());
    tokens = refreshed.body;
    expect((await create("app.bsky.feed.post", 8)).status).toBe(200);
    expect((await create("app.bsky.feed.like", 9)).status).toBe(403);

    const after = await openPage(browser, taken.location!);
    const text = visibleText(after.html);
    expect(text).toContain("Permission taken back.");
    expect(text).toContain("Taken back");
  });

  it("asking for likes again shows the consent screen with just that permission", async () => {
    const pushed = await pushScope(client, SCOPE);
    expect(pushed.status).toBe(201);
    const consent = await openConsentPage(client.authorizeUrl(pushed.body.request_uri!), browser.jar);
    expect(consent.status).toBe(200);
    // What the screen asks, before its technical details (which name the request's whole scope).
    const asked = visibleText(consent.html).split("Technical details")[0]!;
    expect(asked).toContain("What it asks for now");
    expect(asked).toContain("app.bsky.feed.like");
    expect(asked).not.toContain("app.bsky.feed.post");
    expect(asked).not.toMatch(/image/i);
  });

  it("refuses to take back what the app was never allowed, and answers 404 for an app with no access", async () => {
    const path = await appPagePath(client.clientId);
    const page = await openPage(browser, path);
    const notGranted = await postForm(browser, path, { csrf_token: page.csrfToken!, intent: "take-back", permission: "repo:app.bsky.graph.follow?action=create" });
    expect(notGranted.status).toBe(400);
    expect(visibleText(notGranted.html)).toContain("This app was not allowed that permission.");
    const unknown = await openPage(browser, await appPagePath("https://unknown.example/client-metadata.json"));
    expect(unknown.status).toBe(404);
  });

  it("1,000 writes of one app in a day, over 50 collections, keep 21 rows for that day: 20 collections and the overflow", async () => {
    const scope = "atproto transition:generic";
    const busy = await loopbackClient(server, scope);
    const busyTokens = (await obtainTokens(server, busy, { scope })).tokens;
    for (let batch = 0; batch < 5; batch++) {
      const writes = Array.from({ length: 200 }, (_, index) => {
        const collection = `com.example.activity.c${index % 50}`;
        return { $type: "com.atproto.repo.applyWrites#create", collection, value: { $type: collection, n: batch * 200 + index } };
      });
      const applied = await busy.xrpc(busyTokens.access_token, "com.atproto.repo.applyWrites", { json: { repo: alice.did, writes } });
      expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    }
    const rows = await rowsOf<{ target: string; count: number | string }>(
      server.database(),
      sql`SELECT "target", "count" FROM "AppActivity" WHERE "accountDid" = ${alice.did} AND "app" = ${`oauth:${busy.clientId}`}`,
    );
    expect(rows).toHaveLength(MAX_TARGETS_PER_KIND + 1);
    expect(rows.reduce((sum, row) => sum + Number(row.count), 0)).toBe(1000);
    expect(Number(rows.find((row) => row.target === "")?.count)).toBe(1000 - MAX_TARGETS_PER_KIND * 20);
  });
});
