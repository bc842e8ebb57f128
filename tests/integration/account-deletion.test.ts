/**
 * Deleting an account (issue 19, item 9; docs/decisions/0030, 0050), end to end against a started server, a real SMTP
 * server and the test run's real PLC directory: the code by email, the code AND the password, everything removed,
 * the #account event, RepoNotFound from the sync endpoints, the DID left as it is at the directory unless the person
 * asks to end it (offered only while this server's key is its only one), this browser signed out of that account only.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { decode } from "@atproto/lex-cbor";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql, statementOf } from "../../app/.server/db/sql.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { newBrowser, openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, callRaw, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";
import { SAMPLES } from "../helpers/xrpc-extra.ts";

const run = promisify(execFile);
const directoryUrl = inject("plcDirectoryUrl");

/** Where Alice's data lived (the store's contract test checks every table of the schema; here, a real account's). */
const ALICE_ROWS: Record<string, ReturnType<typeof statementOf>> = Object.fromEntries(
  [["Account", "did"], ["Record", "did"], ["RepoRoot", "did"], ["RepoBlock", "did"], ["Blob", "did"], ["BrowserSession", "accountDid"], ["Grant", "accountDid"], ["AuthorizedClient", "accountDid"], ["TypedCode", "accountDid"]].map(
    ([table, column]) => [table, statementOf(`SELECT 1 AS "one" FROM "${table}" WHERE "${column}" = ?`)],
  ),
);
const BOB = { handle: "bob.test", email: "bob@example.com", password: "bob's long password" };

let smtp: TestSmtp;
let server: TestServer;
let alice: { did: string; handle: string };
let bob: { did: string; handle: string };
let token: ScopedToken;
let counter = 0;
const newAddress = () => `198.51.100.${++counter}`;

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  alice = await createAlice(server);
  bob = await createAccount(server, BOB);
  token = await tokenWithScope(server, "atproto transition:generic");
  // Something in every part of Alice's data: a record, a blob it references, preferences.
  const blob = await callRaw(token, "POST", "com.atproto.repo.uploadBlob", { body: SAMPLES.png, headers: { "content-type": "image/png" } });
  expect(blob.status).toBe(200);
  const created = await call(token, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection: "app.bsky.feed.post", record: { $type: "app.bsky.feed.post", text: "hello", createdAt: new Date().toISOString(), embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image: (blob.body as { blob: unknown }).blob }] } } },
  });
  expect(created.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

/** Alice and Bob signed in to one browser, Alice chosen. */
async function bothSignedIn(): Promise<Browser & { csrfToken: string }> {
  const browser = await signedIn(server, BOB.handle, BOB.password, newAddress());
  const added = await postForm(browser, "/account", { csrf_token: browser.csrfToken, identifier: ALICE.handle, password: ALICE.password, next: "/account/delete" });
  expect(added.status).toBe(303);
  return browser;
}

async function deletePage(browser: Browser) {
  const page = await openPage(browser, "/account/delete");
  expect(page.status).toBe(200);
  return page;
}

async function askForCode(browser: Browser, account: string): Promise<string> {
  const page = await deletePage(browser);
  const asked = await postForm(browser, "/account/delete", { csrf_token: page.csrfToken!, account, intent: "request" });
  expect(asked.status).toBe(303);
  expect(asked.location).toBe("/account/delete?notice=deletion-code-sent");
  const mail = await smtp.next();
  return typedCodeIn(mail);
}

const confirmDeletion = async (browser: Browser, account: string, code: string, password: string, extra: Record<string, string> = {}) =>
  postForm(browser, "/account/delete", { csrf_token: (await deletePage(browser)).csrfToken!, account, intent: "delete", code, password, ...extra });

/** The type of the DID's last operation at the directory: its log as the directory keeps it. */
async function lastOperationType(did: string): Promise<string> {
  return ((await (await fetch(`${directoryUrl}/${did}/log/last`)).json()) as { type: string }).type;
}

describe("deleting an account", () => {
  it("a code of Alice's never deletes Bob, and neither a wrong code nor a wrong password deletes anything", async () => {
    const aliceBrowser = await signedIn(server, ALICE.handle, ALICE.password, newAddress());
    const aliceCode = await askForCode(aliceBrowser, alice.did);
    const bobBrowser = await signedIn(server, BOB.handle, BOB.password, newAddress());
    await askForCode(bobBrowser, bob.did);

    const crossed = await confirmDeletion(bobBrowser, bob.did, aliceCode, BOB.password);
    expect(crossed.status).toBe(400);
    expect(pageText(crossed.html)).toContain("This code does not work");
    // The refused field has the focus and its message tied to it.
    expect(crossed.html).toMatch(/<input[^>]*id="code"[^>]*aria-invalid="true"[^>]*aria-describedby="code-error[^"]*"[^>]*autofocus=""|<input[^>]*autofocus=""[^>]*id="code"/);

    const wrongPassword = await confirmDeletion(aliceBrowser, alice.did, aliceCode, "not alice's password");
    expect(wrongPassword.status).toBe(400);
    expect(pageText(wrongPassword.html)).toContain("That password is not right.");

    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${alice.did}`)).toBeDefined();
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${bob.did}`)).toBeDefined();
    expect((await fetch(`${directoryUrl}/${alice.did}`)).status).toBe(200);
  });

  it("with the code and the password: everything goes, the DID stays as it is, #account says deleted, Bob stays signed in", async () => {
    // Alice's blob's copy, and where its bytes are: a file beside the SQLite database, or chunks in PostgreSQL.
    const { key } = (await rowOf<{ key: string }>(server.database(), sql`SELECT c."key" FROM "BlobContent" c JOIN "Blob" b ON b."cid" = c."cid" WHERE b."did" = ${alice.did}`))!;
    const blobBytesLeft = async () =>
      server.databasePath === undefined
        ? (await rowsOf(server.database(), sql`SELECT "index" FROM "BlobChunk" WHERE "key" = ${key}`)).length > 0
        : existsSync(path.join(path.dirname(server.databasePath), "blobs", key.slice(0, 2), key));
    expect(await blobBytesLeft()).toBe(true);
    const browser = await bothSignedIn();
    // This server's key is the DID's only one: the form offers to end it too, unticked.
    const offered = await deletePage(browser);
    expect(offered.html).toMatch(/<input[^>]*id="endIdentity"[^>]*type="checkbox"/);
    expect(offered.html).not.toMatch(/<input[^>]*id="endIdentity"[^>]*checked/);
    const code = await askForCode(browser, alice.did);
    const logBefore = await (await fetch(`${directoryUrl}/${alice.did}/log`)).text();
    // A live subscriber of the firehose, there before the deletion: every frame is checked against the lexicon.
    const subscriber = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos`);
    await subscriber.opened;
    // Typed as a person may type it: lower case.
    const deleted = await confirmDeletion(browser, alice.did, code.toLowerCase(), ALICE.password);
    expect(deleted.status).toBe(303);
    expect(deleted.location).toBe("/account?notice=account-deleted");

    // The browser is signed out of Alice only: the account pages now manage Bob.
    const home = await openPage(browser, "/account");
    expect(home.status).toBe(200);
    expect(pageText(home.html)).toContain("@bob.test");
    expect(pageText(home.html)).not.toContain("@alice.test");

    const db = server.database();
    for (const [table, rows] of Object.entries(ALICE_ROWS)) expect(await rowsOf(db, rows(alice.did)), table).toHaveLength(0);
    // Her blob's bytes too, removed once the deletion committed (docs/decisions/0043).
    expect(await blobBytesLeft()).toBe(false);
    expect(await rowOf(db, sql`SELECT "key" FROM "BlobContent" WHERE "key" = ${key}`)).toBeUndefined();
    const events = await rowsOf<{ type: string; body: Uint8Array }>(db, sql`SELECT "type", "body" FROM "RepoEvent" WHERE "did" = ${alice.did}`);
    expect(events.map((event) => event.type)).toEqual(["account"]);
    expect(decode(new Uint8Array(events[0]!.body))).toMatchObject({ did: alice.did, active: false, status: "deleted" });
    await subscriber.until((frames) => frames.some((frame) => frame.kind === "message" && frame.type === "#account" && frame.body.did === alice.did));
    const live = subscriber.frames.find((frame) => frame.kind === "message" && frame.type === "#account" && frame.body.did === alice.did);
    expect(live).toMatchObject({ body: { did: alice.did, active: false, status: "deleted" } });
    subscriber.close();

    // The token no longer works; the sync endpoints answer RepoNotFound; the DID is the person's, left as it was (as
    // the reference PDS leaves it): its log at the directory has not changed.
    expect((await call(token, "com.atproto.server.getSession")).status).toBe(401);
    for (const nsid of ["com.atproto.sync.getLatestCommit", "com.atproto.sync.getRepoStatus", "com.atproto.sync.getRepo"]) {
      const answer = await callAnonymous<{ error: string }>(server, nsid, { params: { did: alice.did } });
      expect(answer.status, nsid).toBe(400);
      expect(answer.body.error, nsid).toBe("RepoNotFound");
    }
    expect((await fetch(`${directoryUrl}/${alice.did}`)).status).toBe(200);
    expect(await (await fetch(`${directoryUrl}/${alice.did}/log`)).text()).toBe(logBefore);

    // Signing in as Alice fails, in a fresh browser; the notice said what happened.
    const fresh = await newBrowser(server, newAddress());
    const again = await postForm(fresh, "/account", { csrf_token: fresh.csrfToken, identifier: ALICE.handle, password: ALICE.password, next: "/account" });
    expect(again.status).toBe(400);
    expect(fresh.jar.get("atrium_session")).toBeUndefined();
    expect(pageText((await openPage(browser, deleted.location!)).html)).toContain("Your account is deleted.");
  });

  it("the operator's npm run account -- delete does the same: rows and #account, the DID left as it is; with --tombstone, ended", async () => {
    const carol = await createAccount(server, { handle: "carol.test", email: "carol@example.com", password: "carol's long password" });
    const frank = await createAccount(server, { handle: "frank.test", email: "frank@example.com", password: "frank's long password" });
    const operator = (...args: string[]) => run(process.execPath, ["--import", "tsx", "scripts/account.ts", "delete", ...args], { cwd: PROJECT_ROOT, env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer } });
    expect(JSON.parse((await operator("--handle", "CAROL.test")).stdout)).toEqual({ did: carol.did, handle: "carol.test", deleted: true });
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${carol.did}`)).toBeUndefined();
    const events = await rowsOf<{ type: string }>(server.database(), sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${carol.did}`);
    expect(events).toEqual([{ type: "account" }]);
    expect(await lastOperationType(carol.did)).toBe("plc_operation");
    expect(JSON.parse((await operator("--handle", "frank.test", "--tombstone")).stdout)).toEqual({ did: frank.did, handle: "frank.test", deleted: true, tombstoned: true });
    expect(await lastOperationType(frank.did)).toBe("plc_tombstone");
  });

  it("asked to end the identity too: the DID is tombstoned first; when the directory cannot be reached, nothing is deleted, and the same code finishes once it can", async () => {
    const dave = await createAccount(server, { handle: "dave.test", email: "dave@example.com", password: "dave's long password" });
    // A second server process on the same database and issuer whose PLC directory does not answer.
    const cutOff = await startTestServer({ DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer, ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_PLC_DIRECTORY_URL: `http://127.0.0.1:${await freePort()}` });
    try {
      const browser = await signedIn(server, "dave.test", "dave's long password", newAddress());
      const code = await askForCode(browser, dave.did);
      const viaCutOff = { ...browser, via: `http://localhost:${cutOff.port}` };
      const refused = await postForm(viaCutOff, "/account/delete", { csrf_token: browser.csrfToken, account: dave.did, intent: "delete", code, password: "dave's long password", endIdentity: "1" });
      expect(refused.status).toBe(502);
      expect(pageText(refused.html)).toContain("the identity directory did not answer");
      expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${dave.did}`)).toBeDefined();
      expect((await fetch(`${directoryUrl}/${dave.did}`)).status).toBe(200);

      const done = await confirmDeletion(browser, dave.did, code, "dave's long password", { endIdentity: "1" });
      expect(done.status).toBe(303);
      expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${dave.did}`)).toBeUndefined();
      expect(await lastOperationType(dave.did)).toBe("plc_tombstone");
      expect((await fetch(`${directoryUrl}/${dave.did}`)).status).not.toBe(200);
    } finally {
      await cutOff.stop();
    }
  });

  it("requests for a code are capped per account, whatever address they come from: the fourth waits, and says so", async () => {
    await createAccount(server, { handle: "erin.test", email: "erin@example.com", password: "erin's long password" });
    const erin = await signedIn(server, "erin.test", "erin's long password", newAddress());
    const did = (await rowOf<{ did: string }>(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = 'erin.test'`))!.did;
    const statuses: number[] = [];
    let last = "";
    for (let i = 0; i < 4; i++) {
      // Each from another forged X-Forwarded-For: the account's counter holds anyway.
      const answer = await postForm({ ...erin, address: newAddress() }, "/account/delete", { csrf_token: erin.csrfToken, account: did, intent: "request" });
      statuses.push(answer.status);
      last = pageText(answer.html);
    }
    expect(statuses).toEqual([303, 303, 303, 429]);
    expect(last).toContain("Too many requests for a code. Wait");
    for (let i = 0; i < 3; i++) expect(typedCodeIn(await smtp.next())).toMatch(/^[0-9A-Z]{5}-[0-9A-Z]{5}$/);
  });

  it("bad input is refused in plain words, never a 500, and deletes nothing", async () => {
    const hank = await createAccount(server, { handle: "hank.test", email: "hank@example.com", password: "hank's long password" });
    const browser = await signedIn(server, "hank.test", "hank's long password", newAddress());
    const post = (fields: Record<string, string>, options: { origin?: string | null } = {}) => postForm(browser, "/account/delete", { account: hank.did, ...fields }, options);
    expect((await post({ intent: "delete", code: "AAAAA-AAAAA", password: "hank's long password" })).status).toBe(403); // no CSRF token
    expect((await post({ csrf_token: browser.csrfToken, intent: "delete", code: "AAAAA-AAAAA", password: "x" }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await post({ csrf_token: browser.csrfToken, intent: "explode" })).status).toBe(400);
    const empty = await post({ csrf_token: browser.csrfToken, intent: "delete", code: "", password: "" });
    expect(empty.status).toBe(400);
    expect(pageText(empty.html)).toContain("Enter the code from the email.");
    expect(pageText(empty.html)).toContain("Enter your password.");
    for (const code of ["x".repeat(20_000), "AAAAA-AAAA", "ÀÉÎÕÜ-ÀÉÎÕÜ", "' OR 1=1 --"]) {
      const answer = await post({ csrf_token: browser.csrfToken, intent: "delete", code, password: "hank's long password" });
      expect([400, 413], code.slice(0, 20)).toContain(answer.status);
    }
    // A form naming an account that is not signed in here acts for nobody.
    const bobsCode = sql`SELECT "codeHash" FROM "TypedCode" WHERE "accountDid" = ${bob.did} AND "purpose" = 'account-deletion'`;
    const before = await rowOf(server.database(), bobsCode);
    const other = await postForm(browser, "/account/delete", { csrf_token: browser.csrfToken, account: bob.did, intent: "request" });
    expect(other.status).toBe(303);
    expect(other.location).not.toContain("deletion-code-sent");
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${hank.did}`)).toBeDefined();
    expect(await rowOf(server.database(), bobsCode)).toEqual(before);
  });
});
