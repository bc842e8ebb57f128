import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { openPage, postForm, signedIn } from "../helpers/account.ts";
import { rowsOf } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";

/**
 * Deleting an account while its app writes, refreshes, and another browser uses its session (docs/decisions/0030).
 * Nothing may answer 5xx, no credential of the deleted account may work afterwards, and nothing of the account may be
 * left. Found in review: on PostgreSQL a commit in flight left its #commit event in the firehose log, until the
 * deletion took the account's data lock first (stores/sql-account-deletion-store.ts).
 */

let smtp: TestSmtp;
let server: TestServer;
let alice: { did: string; handle: string };
let token: ScopedToken;

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  alice = await createAlice(server);
  token = await tokenWithScope(server, "atproto transition:generic");
}, 180_000);
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

const post = (i: number) =>
  call(token, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection: "app.bsky.feed.post", record: { $type: "app.bsky.feed.post", text: `racing ${i}`, createdAt: new Date().toISOString() } },
  });

describe("deletion racing writes, a refresh and another session", () => {
  it("no 5xx, no working credential afterwards, nothing of the account left", async () => {
    expect((await post(-1)).status).toBe(200);
    const deleter = await signedIn(server, ALICE.handle, ALICE.password, "198.51.100.21");
    const other = await signedIn(server, ALICE.handle, ALICE.password, "198.51.100.22");
    const page = await openPage(deleter, "/account/delete");
    const asked = await postForm(deleter, "/account/delete", { csrf_token: page.csrfToken!, intent: "request" });
    expect(asked.status).toBe(303);
    const code = typedCodeIn(await smtp.next());

    const writes = Array.from({ length: 8 }, (_, i) => post(i));
    const refresh = token.client.refresh(token.tokens.refresh_token!);
    const deletion = postForm(deleter, "/account/delete", { csrf_token: page.csrfToken!, intent: "delete", code, password: ALICE.password });
    const otherPage = openPage(other, "/account");
    const [deleted, refreshed, seen, ...written] = await Promise.all([deletion, refresh, otherPage, ...writes]);
    const statuses = { deletion: deleted.status, refresh: refreshed.status, otherSession: seen.status, writes: written.map((answer) => answer.status) };
    expect(deleted.status).toBe(303);
    expect([statuses.refresh, statuses.otherSession, ...statuses.writes].filter((status) => status >= 500)).toEqual([]);

    const afterToken = await call(token, "com.atproto.server.getSession");
    const afterRefresh = await token.client.refresh((refreshed.body as { refresh_token?: string }).refresh_token ?? token.tokens.refresh_token!);
    const afterSession = await openPage(other, "/account/delete");
    expect(afterToken.status).toBe(401);
    expect(afterRefresh.status).toBe(400);
    expect(afterSession.status).not.toBe(200);

    const events = await rowsOf<{ type: string }>(server.database(), sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${alice.did} ORDER BY "seq"`);
    expect(events).toEqual([{ type: "account" }]);
  });
});
