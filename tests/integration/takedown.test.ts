/**
 * An account taken down by the operator (com.atproto.admin.updateSubjectStatus, as pdsadmin sends it), against a
 * started server, on SQLite and, in the postgresql project, on PostgreSQL (docs/decisions/0051): every surface at once
 * (the app's OAuth token and refresh token, every browser's session and chooser, the sign-in form, a consent screen
 * already open, sync, listRepos and getRepoStatus, the firehose's #account), the operator's export still served, and
 * the untakedown that restores the account but not its old tokens. Password sessions (createSession) end with it, and
 * the person can still open the reference's takedown-only session (allowTakendown, with the account's own password)
 * that takes the data away, appeals to the report service (a stand-in on loopback) and gets a service token to move to
 * another server, and nothing else. Then records and blobs taken down one by one.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { adminCall, basicAuthorization, takedownAccount, ADMIN_PASSWORD } from "../helpers/admin.ts";
import { newBrowser, openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { approveWithPassword, CookieJar, openConsentPage, pushedLoopbackRequest, submitConsent, visibleText } from "../helpers/consent.ts";
import { countOf } from "../helpers/store-fixtures.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectXrpcError } from "../helpers/xrpc.ts";
import { SAMPLES, scopedSession, uploadBlob, type ScopedSession } from "../helpers/xrpc-extra.ts";
import { listedRepo, messagesOf, repoStatusOf, syncReads, type FirehoseMessage } from "../helpers/repo-availability.ts";
import { startServiceStandIn, type ServiceStandIn } from "../helpers/service-stand-in.ts";

/** A collection without a lexicon here: the record keys name the writes (docs/decisions/0049). */
const NOTE = "com.example.note";
const SCOPE = "atproto transition:generic";
const BOB = { handle: "bob.test", email: "bob@example.com", password: "another good password" };

let server: TestServer;
let alice: { did: string; handle: string };
let bob: { did: string; handle: string };
let session: ScopedSession;
let blobCid: string;
let recordCid: string;
let firehose: FirehoseConsumer;
/** The report service an appeal goes to (com.atproto.moderation.createReport, proxied). */
let reports: ServiceStandIn;
/** Alice's password session (createSession) from before the takedown, and an app password of hers. */
let passwordSession: { accessJwt: string; refreshJwt: string };
let appPassword: string;
/** A browser signed in to Alice and Bob both (the chooser lists them). */
let both: Browser & { csrfToken: string };

beforeAll(async () => {
  reports = await startServiceStandIn({ plcDirectoryUrl: inject("plcDirectoryUrl"), identity: "did:plc", services: { atproto_labeler: "AtprotoLabeler" } });
  server = await startTestServer({ ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_REPORT_SERVICE: `${reports.did}#atproto_labeler` });
  alice = await createAlice(server);
  bob = await createAccount(server, BOB);
  session = await scopedSession(server, SCOPE);
  const upload = await uploadBlob<{ blob: { ref: { $link: string } } }>(session, SAMPLES.png, "image/png");
  blobCid = upload.body.blob.ref.$link;
  const image = { $type: "blob", ref: { $link: blobCid }, mimeType: "image/png", size: SAMPLES.png.byteLength };
  recordCid = (await post("kept", { embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image }] } })).body.cid;
  await post("other");
  both = await signedIn(server, ALICE.handle, ALICE.password);
  const added = await postForm(both, "/account", { csrf_token: both.csrfToken, identifier: BOB.handle, password: BOB.password, next: "/account" });
  expect(added.status).toBe(303);
  passwordSession = (await createSession({ identifier: ALICE.handle, password: ALICE.password })).body as typeof passwordSession;
  const created = await bearer(passwordSession.accessJwt, "com.atproto.server.createAppPassword", { name: "a bot" });
  expect(created.status).toBe(200);
  appPassword = ((await created.json()) as { password: string }).password;
  firehose = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`);
  await firehose.opened;
});
afterAll(async () => {
  firehose?.close();
  await server?.stop();
  await reports?.close();
});

async function createSession(input: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.issuer}/xrpc/com.atproto.server.createSession`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(input) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A call with a password session's token: a query with `params`, or a procedure with `json`. */
function bearer(token: string, nsid: string, json?: unknown, params: Record<string, string> = {}): Promise<Response> {
  const url = `${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params)}`;
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (json === undefined) return fetch(url, { headers });
  return fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(json) });
}

async function xrpcError(response: Response): Promise<{ status: number; error: string }> {
  return { status: response.status, error: ((await response.json()) as { error: string }).error };
}

function post(rkey: string, extra: Record<string, unknown> = {}) {
  return call<{ cid: string; commit: { cid: string; rev: string } }>(session, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection: NOTE, rkey, record: { text: rkey, createdAt: "2026-11-28T00:00:00.000Z", ...extra } },
  });
}

type Message = FirehoseMessage;
const aliceMessages = () => messagesOf(firehose, alice.did);
const isTakedown = (frame: Message) => frame.type === "#account" && frame.body.status === "takendown";

const SYNC_READS = syncReads(() => ({ did: alice.did, collection: NOTE, recordCid, blobCid }));

const repoStatus = () => repoStatusOf(server, alice.did);

const listed = () => listedRepo(server, alice.did);

/** A new sign-in request of the app, with its consent screen's address. */
const newRequest = (extra: Record<string, string> = {}) => pushedLoopbackRequest(server.issuer, SCOPE, extra);

/** The handles the browser's account chooser offers. */
async function chooserHandles(browser: Browser): Promise<string[]> {
  const page = await openPage(browser, "/account?choose=1");
  return [...pageText(page.html).matchAll(/@([a-z0-9.-]+\.test)/g)].map((match) => match[1]!).filter((handle, index, all) => all.indexOf(handle) === index).sort();
}

describe("an account taken down by the operator", () => {
  /** A browser with a consent screen open for the app, signed in as Alice, from before the takedown. */
  let openScreen: { jar: CookieJar; authorizeUrl: string; csrfToken: string };

  it("before: served, active, in the chooser; the consent screen offers Allow", async () => {
    for (const [nsid, params] of SYNC_READS) expect((await fetch(`${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params())}`)).status, nsid).toBe(200);
    expect(await repoStatus()).toMatchObject({ active: true });
    expect(await chooserHandles(both)).toEqual([ALICE.handle, BOB.handle]);
    const jar = new CookieJar();
    const first = await newRequest();
    await approveWithPassword(first, jar, ALICE.handle, ALICE.password);
    const authorizeUrl = await newRequest({ prompt: "consent" });
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.html).toContain('value="allow"');
    openScreen = { jar, authorizeUrl, csrfToken: page.csrfToken! };
  });

  it("the takedown: one #account {active: false, status: takendown} after every commit of the account", async () => {
    const answer = await takedownAccount(server, alice.did, true, "spam, report 42");
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ subject: { $type: "com.atproto.admin.defs#repoRef", did: alice.did }, takedown: { applied: true, ref: "spam, report 42" } });
    await firehose.until(() => aliceMessages().some(isTakedown));
    const own = aliceMessages();
    const event = own.find(isTakedown)!;
    expect(event.body).toMatchObject({ did: alice.did, active: false, status: "takendown" });
    expect(own.filter((frame) => frame.type === "#commit").every((commit) => (commit.body.seq as number) < (event.body.seq as number))).toBe(true);
  });

  it("every OAuth token stops at once: the access token, and the refresh token", async () => {
    const me = await call(session, "com.atproto.server.getSession");
    expect(me.status).toBe(401);
    expect((await post("refused")).status).toBe(401);
    const refreshed = await session.client.refresh(session.tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body).toMatchObject({ error: "invalid_grant" });
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "accountDid" = ${alice.did}`)).toBe(0);
  });

  it("every password session stops at once, an app password's too: access and refresh tokens", async () => {
    expect(await xrpcError(await bearer(passwordSession.accessJwt, "com.atproto.server.getSession"))).toEqual({ status: 400, error: "ExpiredToken" });
    expect(await xrpcError(await bearer(passwordSession.refreshJwt, "com.atproto.server.refreshSession", {}))).toEqual({ status: 400, error: "ExpiredToken" });
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "PasswordSession" WHERE "accountDid" = ${alice.did}`)).toBe(0);
  });

  it("createSession: AccountTakedown once the password is right; with allowTakendown, a takedown-only session, never with an app password", async () => {
    expect(await createSession({ identifier: ALICE.handle, password: ALICE.password })).toMatchObject({ status: 401, body: { error: "AccountTakedown" } });
    expect(await createSession({ identifier: ALICE.email, password: "not her password", allowTakendown: true })).toMatchObject({ status: 401, body: { error: "AuthenticationRequired" } });
    expect(await createSession({ identifier: ALICE.handle, password: appPassword, allowTakendown: true })).toMatchObject({ status: 401, body: { error: "AccountTakedown" } });
    const opened = await createSession({ identifier: ALICE.handle.toUpperCase(), password: ALICE.password, allowTakendown: true });
    expect(opened).toMatchObject({ status: 200, body: { did: alice.did, handle: ALICE.handle, active: false, status: "takendown" } });
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "PasswordSession" WHERE "accountDid" = ${alice.did} AND "scope" = 'com.atproto.takendown'`)).toBe(1);
    passwordSession = opened.body as typeof passwordSession;
  });

  it("the takedown-only session exports the data, appeals and moves away; nothing else", async () => {
    const token = passwordSession.accessJwt;
    expect(await (await bearer(token, "com.atproto.server.getSession")).json()).toMatchObject({ did: alice.did, active: false, status: "takendown" });
    // The export: the repository and its blobs, never kept by a shared cache.
    const car = await bearer(token, "com.atproto.sync.getRepo", undefined, { did: alice.did });
    expect(car.status).toBe(200);
    expect(car.headers.get("cache-control")).toBe("private, no-store");
    expect((await car.arrayBuffer()).byteLength).toBeGreaterThan(100);
    expect(await (await bearer(token, "com.atproto.sync.listBlobs", undefined, { did: alice.did })).json()).toEqual({ cids: [blobCid] });
    const blob = await bearer(token, "com.atproto.sync.getBlob", undefined, { did: alice.did, cid: blobCid });
    expect(blob.status).toBe(200);
    expect(blob.headers.get("cache-control")).toBe("private, no-store");
    expect(Buffer.from(await blob.arrayBuffer()).equals(Buffer.from(SAMPLES.png))).toBe(true);
    // The appeal, to the report service, signed by the account.
    const appeal = { reasonType: "com.atproto.moderation.defs#reasonAppeal", subject: { $type: "com.atproto.admin.defs#repoRef", did: alice.did }, reason: "not spam" };
    expect((await bearer(token, "com.atproto.moderation.createReport", appeal)).status).toBe(200);
    expect(reports.calls.at(-1)!.token!.payload).toMatchObject({ iss: alice.did, aud: reports.did, lxm: "com.atproto.moderation.createReport" });
    expect(JSON.parse(reports.calls.at(-1)!.body)).toEqual(appeal);
    // Moving away: a service token for createAccount at the new server, and for nothing else.
    const moving = await bearer(token, "com.atproto.server.getServiceAuth", undefined, { aud: "did:web:new-pds.example", lxm: "com.atproto.server.createAccount" });
    expect(moving.status).toBe(200);
    expect(await xrpcError(await bearer(token, "com.atproto.server.getServiceAuth", undefined, { aud: "did:web:api.example", lxm: "app.bsky.feed.getTimeline" }))).toEqual({ status: 400, error: "InvalidToken" });
    // Nothing else: no write, no read of the account's other data, no app password.
    expect(await xrpcError(await bearer(token, "com.atproto.repo.createRecord", { repo: alice.did, collection: NOTE, record: { text: "x", createdAt: "2026-11-28T00:00:00.000Z" } }))).toEqual({ status: 400, error: "InvalidToken" });
    expect(await xrpcError(await bearer(token, "com.atproto.server.listAppPasswords"))).toEqual({ status: 400, error: "InvalidToken" });
    expect(await xrpcError(await bearer(token, "com.atproto.server.createAppPassword", { name: "another" }))).toEqual({ status: 400, error: "InvalidToken" });
    // The preferences, which the new server imports when the account moves (the reference allows this one too).
    expect((await bearer(token, "app.bsky.actor.getPreferences")).status).toBe(200);
    // The DID operation that points the DID at the new server: its emailed code is asked for as the account's own (this
    // server has no SMTP here, so the method itself answers that it cannot send it).
    const plcCode = await bearer(token, "com.atproto.identity.requestPlcOperationSignature", {});
    expect(await plcCode.json()).toMatchObject({ error: "InvalidRequest", message: expect.stringContaining("sends no email") });
    // It refreshes as any password session does, and stays what it is.
    const refreshed = (await (await bearer(passwordSession.refreshJwt, "com.atproto.server.refreshSession", {})).json()) as typeof passwordSession & { status: string };
    expect(refreshed.status).toBe("takendown");
    expect(await xrpcError(await bearer(refreshed.accessJwt, "com.atproto.repo.createRecord", { repo: alice.did, collection: NOTE, record: { text: "x", createdAt: "2026-11-28T00:00:00.000Z" } }))).toEqual({
      status: 400,
      error: "InvalidToken",
    });
    passwordSession = refreshed;
  });

  it("the account leaves every browser's chooser; the other account stays", async () => {
    expect(await chooserHandles(both)).toEqual([BOB.handle]);
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "BrowserSession" WHERE "accountDid" = ${alice.did}`)).toBe(0);
  });

  it("signing in says the account is taken down, once the password is right; a wrong one says only that it is wrong", async () => {
    const browser = await newBrowser(server);
    const refused = await postForm(browser, "/account", { csrf_token: browser.csrfToken, identifier: ALICE.handle, password: ALICE.password, next: "/account" });
    expect(refused.location).toBeNull();
    expect(pageText(refused.html)).toContain("taken down by the operator");
    expect(browser.jar.get("atrium_session")).toBeUndefined();
    const wrong = await postForm(browser, "/account", { csrf_token: browser.csrfToken, identifier: ALICE.handle, password: "not her password", next: "/account" });
    expect(pageText(wrong.html)).not.toContain("taken down");
    // On a consent screen too.
    const authorizeUrl = await newRequest();
    const jar = new CookieJar();
    const shown = await openConsentPage(authorizeUrl, jar);
    const consent = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.email, password: ALICE.password, csrfToken: shown.csrfToken });
    expect(consent.headers.get("location")).toBeNull();
    expect(visibleText(await consent.text())).toContain("taken down");
  });

  it("a consent screen already open cannot complete: no code", async () => {
    const { jar, authorizeUrl, csrfToken } = openScreen;
    const answer = await submitConsent(authorizeUrl, jar, { decision: "allow", account: alice.did, csrfToken });
    const location = answer.headers.get("location");
    expect(location === null || !new URL(location, server.issuer).searchParams.has("code")).toBe(true);
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${alice.did}`)).toBe(0);
  });

  it("sync answers RepoTakendown; listRepos and getRepoStatus say takendown; repo reads serve nothing", async () => {
    for (const [nsid, params] of SYNC_READS) expectXrpcError(await callAnonymous(server, nsid, { params: params() }), 400, "RepoTakendown");
    expect(await repoStatus()).toEqual({ did: alice.did, active: false, status: "takendown" });
    expect(await listed()).toMatchObject({ did: alice.did, active: false, status: "takendown" });
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.handle, collection: NOTE, rkey: "kept" } }), 400, "RecordNotFound");
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.listRecords", { params: { repo: alice.did, collection: NOTE } }), 400, "InvalidRequest");
  });

  it("the operator is still served the export, not cached; a wrong admin password is refused", async () => {
    const car = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${alice.did}`, { headers: { Authorization: basicAuthorization() } });
    expect(car.status).toBe(200);
    expect(car.headers.get("content-type")).toBe("application/vnd.ipld.car");
    expect(car.headers.get("cache-control")).toBe("private, no-store");
    expect((await car.arrayBuffer()).byteLength).toBeGreaterThan(100);
    const wrong = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${alice.did}`, { headers: { Authorization: basicAuthorization("a wrong admin password") } });
    expect(wrong.status).toBe(401);
  });

  it("the operator sees the takedown with its reference", async () => {
    const status = await adminCall(server, "com.atproto.admin.getSubjectStatus", { params: { did: alice.did } });
    expect(status.body).toEqual({ subject: { $type: "com.atproto.admin.defs#repoRef", did: alice.did }, takedown: { applied: true, ref: "spam, report 42" }, deactivated: { applied: false } });
  });

  it("the untakedown: #account active; served again; signing in works; the old tokens stay dead", async () => {
    const answer = await takedownAccount(server, alice.did, false);
    expect(answer.status).toBe(200);
    const takedown = aliceMessages().find(isTakedown)!.body.seq as number;
    await firehose.until(() => aliceMessages().some((frame) => (frame.body.seq as number) > takedown && frame.type === "#account"));
    const restored = aliceMessages().find((frame) => (frame.body.seq as number) > takedown && frame.type === "#account")!;
    expect(restored.body).toMatchObject({ did: alice.did, active: true });
    expect(restored.body.status).toBeUndefined();
    for (const [nsid, params] of SYNC_READS) expect((await fetch(`${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params())}`)).status, nsid).toBe(200);
    expect(await repoStatus()).toMatchObject({ active: true });
    expect((await call(session, "com.atproto.server.getSession")).status).toBe(401);
    expect((await session.client.refresh(session.tokens.refresh_token)).status).toBe(400);
    // The takedown-only session stays takedown-only: a session that may write is a new sign-in's.
    expect(await xrpcError(await bearer(passwordSession.accessJwt, "com.atproto.repo.createRecord", { repo: alice.did, collection: NOTE, record: { text: "x", createdAt: "2026-11-28T00:00:00.000Z" } }))).toEqual({
      status: 400,
      error: "InvalidToken",
    });
    expect(await createSession({ identifier: ALICE.handle, password: ALICE.password })).toMatchObject({ status: 200, body: { active: true } });
    const browser = await signedIn(server, ALICE.handle, ALICE.password);
    expect(browser.jar.get("atrium_session")).toBeDefined();
    expect(await adminCall(server, "com.atproto.admin.getSubjectStatus", { params: { did: alice.did } })).toMatchObject({ body: { takedown: { applied: false } } });
  });
});

describe("a record or a blob taken down by the operator", () => {
  const uri = () => `at://${alice.did}/${NOTE}/kept`;
  const strongRef = () => ({ $type: "com.atproto.repo.strongRef", uri: uri(), cid: recordCid });
  const blobRef = () => ({ $type: "com.atproto.admin.defs#repoBlobRef", did: alice.did, cid: blobCid });

  it("a record: not served by getRecord, listRecords or sync.getRecord, and back once restored", async () => {
    const answer = await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: strongRef(), takedown: { applied: true, ref: "illegal" } } });
    expect(answer.status).toBe(200);
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.did, collection: NOTE, rkey: "kept" } }), 400, "RecordNotFound");
    const records = await callAnonymous<{ records: Array<{ uri: string }> }>(server, "com.atproto.repo.listRecords", { params: { repo: alice.did, collection: NOTE } });
    expect(records.body.records.map((record) => record.uri)).toEqual([`at://${alice.did}/${NOTE}/other`]);
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getRecord", { params: { did: alice.did, collection: NOTE, rkey: "kept" } }), 400, "RecordNotFound");
    // The repository stays whole and verifiable: getRepo still carries it, as the reference's does.
    expect((await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${alice.did}`)).status).toBe(200);
    const status = await adminCall(server, "com.atproto.admin.getSubjectStatus", { params: { uri: uri() } });
    expect(status.body).toEqual({ subject: strongRef(), takedown: { applied: true, ref: "illegal" } });

    await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: strongRef(), takedown: { applied: false } } });
    expect((await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.did, collection: NOTE, rkey: "kept" } })).status).toBe(200);
    expect((await callAnonymous(server, "com.atproto.sync.getRecord", { params: { did: alice.did, collection: NOTE, rkey: "kept" } })).status).toBe(200);
  });

  it("a blob: served to nobody, the operator included, and back once restored", async () => {
    const answer = await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: blobRef(), takedown: { applied: true } } });
    expect(answer.status).toBe(200);
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getBlob", { params: { did: alice.did, cid: blobCid } }), 400, "BlobNotFound");
    const asOperator = await adminCall(server, "com.atproto.sync.getBlob", { params: { did: alice.did, cid: blobCid } });
    expect(asOperator.status).toBe(400);
    const status = await adminCall<{ takedown: { applied: boolean; ref: string } }>(server, "com.atproto.admin.getSubjectStatus", { params: { did: alice.did, blob: blobCid } });
    expect(status.body.takedown.applied).toBe(true);
    // Without a reference the time of the takedown stands for it, as the reference PDS writes it.
    expect(Number.isNaN(Date.parse(status.body.takedown.ref))).toBe(false);
    await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: blobRef(), takedown: { applied: false } } });
    const served = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getBlob?did=${alice.did}&cid=${blobCid}`);
    expect(served.status).toBe(200);
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(SAMPLES.png);
  });

  it("an unknown subject is NotFound, and a subject of no known kind is refused", async () => {
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: { ...strongRef(), uri: `at://${alice.did}/${NOTE}/missing` }, takedown: { applied: true } } }), 400, "NotFound");
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateSubjectStatus", { json: { subject: { $type: "com.example.thing", did: alice.did }, takedown: { applied: true } } }), 400, "InvalidRequest");
    expectXrpcError(await adminCall(server, "com.atproto.admin.getSubjectStatus", { params: { uri: `at://${bob.did}/${NOTE}/none` } }), 400, "NotFound");
  });
});
