/**
 * Deactivating and reactivating an account from /account, against a started server (docs/decisions/0031): what the
 * network sees (the firehose's #account, #identity and #sync events, each frame checked against the subscribeRepos
 * lexicon; com.atproto.sync.* answering RepoDeactivated; listRepos and getRepoStatus), what the account's apps see
 * (AccountDeactivated, getSession's status, no write landing), what the consent screen does (no code, said plainly),
 * and that reactivation restores all of it. Runs on SQLite and, in the postgresql project, on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DpopClient, sha256Base64url } from "../../scripts/lib/dpop-client.ts";
import { at, sql } from "../../app/.server/db/sql.ts";
import { openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { CookieJar, openConsentPage, pushedLoopbackRequest, submitConsent, visibleText } from "../helpers/consent.ts";
import { execute } from "../helpers/databases.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { ALICE, createAlice, createPkce, generateDpopKey } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectXrpcError } from "../helpers/xrpc.ts";
import { loopbackClientId, SAMPLES, scopedSession, uploadBlob, type ScopedSession } from "../helpers/xrpc-extra.ts";
import { listedRepo, messagesOf, repoStatusOf, syncReads, type FirehoseMessage } from "../helpers/repo-availability.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
const SCOPE = "atproto transition:generic";

let server: TestServer;
let alice: { did: string; handle: string };
let session: ScopedSession;
let browser: Browser & { csrfToken: string };
let blobCid: string;
let recordCid: string;
let firehose: FirehoseConsumer;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  session = await scopedSession(server, SCOPE);
  const upload = await uploadBlob<{ blob: { ref: { $link: string } } }>(session, SAMPLES.png, "image/png");
  blobCid = upload.body.blob.ref.$link;
  const image = { $type: "blob", ref: { $link: blobCid }, mimeType: "image/png", size: SAMPLES.png.byteLength };
  const written = await post("kept", { embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image }] } });
  recordCid = written.body.cid;
  browser = await signedIn(server, ALICE.handle, ALICE.password);
  firehose = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`);
  await firehose.opened;
});
afterAll(async () => {
  firehose?.close();
  await server?.stop();
});

function post(rkey: string, extra: Record<string, unknown> = {}) {
  return call<{ cid: string; commit: { cid: string; rev: string } }>(session, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection: NOTE, rkey, record: { text: rkey, createdAt: "2026-11-26T00:00:00.000Z", ...extra } },
  });
}

type Message = FirehoseMessage;
const aliceMessages = () => messagesOf(firehose, alice.did);
const isDeactivation = (frame: Message) => frame.type === "#account" && frame.body.active === false;

const SYNC_READS = syncReads(() => ({ did: alice.did, collection: NOTE, recordCid, blobCid }));

const repoStatus = () => repoStatusOf(server, alice.did);

const listed = () => listedRepo(server, alice.did);

/** A new sign-in request of the app, with its consent screen's address. */
const newRequest = (extra: Record<string, string> = {}) => pushedLoopbackRequest(server.issuer, SCOPE, extra);

/** Makes this browser's last proof of identity older than the recent-authentication window (docs/decisions/0007). */
async function ageSession(target: Browser): Promise<void> {
  const then = at(Date.now() - 10 * 60_000);
  await execute(server.database(), sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${then} WHERE "idHash" = ${sha256Base64url(target.jar.get("atrium_session")!)}`);
}

describe("deactivating and reactivating an account", () => {
  it("before: the repository is served and active", async () => {
    for (const [nsid, params] of SYNC_READS) expect((await fetch(`${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params())}`)).status, nsid).toBe(200);
    expect(await repoStatus()).toMatchObject({ did: alice.did, active: true });
    expect(await listed()).toMatchObject({ active: true });
  });

  it("the page says what deactivating means and asks a browser whose sign-in is old to confirm it's you first", async () => {
    const stale = await signedIn(server, ALICE.handle, ALICE.password);
    await ageSession(stale);
    const page = await openPage(stale, "/account/deactivate");
    const text = pageText(page.html);
    expect(text).toContain("Nothing is deleted");
    expect(text).toContain("apps you allowed lose access");
    expect(text).toContain("Confirm it's you");
    expect(page.html).not.toContain('value="deactivate"');
    const refused = await postForm(stale, "/account/deactivate", { csrf_token: stale.csrfToken, intent: "deactivate" });
    expect(refused.status).toBe(403);
    expect(pageText(refused.html)).toContain("confirm it's you first");
    expect(await repoStatus()).toMatchObject({ active: true });
  });

  it("deactivating: one #account event (active=false, deactivated) after every commit; sync answers RepoDeactivated", async () => {
    const page = await openPage(browser, "/account/deactivate");
    expect(page.html).toContain('value="deactivate"');
    const answer = await postForm(browser, "/account/deactivate", { csrf_token: browser.csrfToken, intent: "deactivate" });
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/account/deactivate?notice=account-deactivated");

    await firehose.until(() => aliceMessages().some(isDeactivation));
    const own = aliceMessages();
    const event = own.find(isDeactivation)!;
    expect(event.body).toMatchObject({ did: alice.did, active: false, status: "deactivated" });
    expect(own.filter((frame) => frame.type === "#commit").every((commit) => (commit.body.seq as number) < (event.body.seq as number))).toBe(true);

    for (const [nsid, params] of SYNC_READS) {
      const result = await callAnonymous(server, nsid, { params: params() });
      expectXrpcError(result, 400, "RepoDeactivated");
    }
    // The lexicon: rev only "if active=true".
    expect(await repoStatus()).toEqual({ did: alice.did, active: false, status: "deactivated" });
    expect(await listed()).toMatchObject({ did: alice.did, active: false, status: "deactivated" });
  });

  it("the account's app gets AccountDeactivated for everything but getSession, and nothing it writes lands", async () => {
    expectXrpcError(await post("refused"), 401, "AccountDeactivated");
    expectXrpcError(await uploadBlob(session, SAMPLES.gif, "image/gif"), 401, "AccountDeactivated");
    expectXrpcError(await call(session, "com.atproto.server.getServiceAuth", { params: { aud: "did:web:example.com" } }), 401, "AccountDeactivated");
    const me = await call<Record<string, unknown>>(session, "com.atproto.server.getSession");
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ did: alice.did, active: false, status: "deactivated" });
    // Its records are not served to anyone meanwhile, as the reference does not serve them.
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.listRecords", { params: { repo: alice.did, collection: NOTE } }), 400, "InvalidRequest");
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.handle, collection: NOTE, rkey: "kept" } }), 400, "RecordNotFound");
  });

  it("the consent screen gives no app access to it: no Allow, the reason in plain words, no code on a password Allow", async () => {
    // The signed-in browser (it just signed in): the screen names the account, says why, offers "Reactivate and
    // continue" in one press, and has no Allow.
    const authorizeUrl = await newRequest();
    const page = await openConsentPage(authorizeUrl, browser.jar);
    expect(page.status).toBe(200);
    expect(visibleText(page.html)).toContain("Your account is deactivated");
    expect(page.html).not.toContain('value="allow"');
    expect(page.html).toContain('value="reactivate"');
    expect(page.html).not.toContain('name="password"');
    // A password sign-in on a fresh browser signs in (that is how a person reactivates) but issues no code: it goes
    // back to the same request's screen for that account, which offers reactivation (issue 28, item 17).
    const fresh = new CookieJar();
    const shown = await openConsentPage(authorizeUrl, fresh);
    const answer = await submitConsent(authorizeUrl, fresh, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: shown.csrfToken });
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get("location")!, server.issuer);
    expect(location.pathname).toBe("/oauth/authorize");
    expect(Object.fromEntries(location.searchParams)).toEqual({ ...Object.fromEntries(new URL(authorizeUrl).searchParams), account: alice.did });
    const after = await openConsentPage(location.href, fresh);
    expect(after.html).toContain('value="reactivate"');
    expect(after.html).not.toContain('value="allow"');
    expect(await repoStatus()).toMatchObject({ active: false });
  });

  it("reactivating inside the flow needs what the account page's button needs: a recent proof, a trusted form, a browser signed in to the account", async () => {
    const stale = await signedIn(server, ALICE.handle, ALICE.password);
    await ageSession(stale);
    const authorizeUrl = await newRequest();
    const page = await openConsentPage(authorizeUrl, stale.jar);
    // "Confirm it's you" in the same form: the password, beside "Reactivate and continue".
    expect(page.html).toContain('name="password"');
    expect(visibleText(page.html)).toContain("Reactivating puts your account back on the network, so it needs you to confirm it");
    const reactivate = (jar: CookieJar, extra: Partial<Parameters<typeof submitConsent>[2]> = {}) =>
      submitConsent(authorizeUrl, jar, { decision: "reactivate", account: alice.did, csrfToken: page.csrfToken, ...extra });

    // A stolen session cookie alone: refused, beside the password field.
    const bare = await reactivate(stale.jar);
    expect(bare.status).toBe(400);
    expect(bare.headers.get("location")).toBeNull();
    expect(visibleText(await bare.text())).toContain("Enter your password");
    const wrong = await reactivate(stale.jar, { password: "not the password" });
    expect(wrong.status).toBe(400);
    expect(visibleText(await wrong.text())).toContain("That password is not right");
    // Without our Origin, or without the CSRF token: the forbidden-form page.
    expect((await reactivate(stale.jar, { password: ALICE.password, origin: "https://attacker.example" })).status).toBe(403);
    expect((await reactivate(stale.jar, { password: ALICE.password, csrfToken: "forged" })).status).toBe(403);
    // A browser that holds the request's address but is signed in to nobody, naming the account: refused.
    const stranger = new CookieJar();
    const strangerPage = await openConsentPage(authorizeUrl, stranger);
    const refused = await submitConsent(authorizeUrl, stranger, { decision: "reactivate", account: alice.did, password: ALICE.password, csrfToken: strangerPage.csrfToken });
    expect(refused.status).toBe(400);
    expect(refused.headers.get("location")).toBeNull();
    // An account this browser is not signed in to, with the right password of the one it is.
    expect((await reactivate(stale.jar, { password: ALICE.password, account: "did:plc:someoneelse" })).status).toBe(400);
    expect(await repoStatus()).toMatchObject({ active: false });
  });

  it("prompt=none never answers a deactivated account silently: access_denied, as the reference answers", async () => {
    // A session that stays signed in, with remembered consent (the app was allowed in beforeAll).
    const jar = new CookieJar();
    const first = await newRequest();
    const shown = await openConsentPage(first, jar);
    await submitConsent(first, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, staySignedIn: true, csrfToken: shown.csrfToken });
    const silent = await fetch(await newRequest({ prompt: "none" }), { headers: { cookie: jar.header() }, redirect: "manual" });
    const location = new URL(silent.headers.get("location")!);
    expect(location.searchParams.get("code")).toBeNull();
    expect(location.searchParams.get("error")).toBe("access_denied");
  });

  it("reactivating from the overview: #account active, #identity, #sync with the head; everything is served again", async () => {
    const overview = await openPage(browser, "/account");
    expect(pageText(overview.html)).toContain("Your account is deactivated");
    const answer = await postForm(browser, "/account/deactivate", { csrf_token: browser.csrfToken, intent: "reactivate" });
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/account?notice=account-reactivated");

    const deactivation = aliceMessages().find(isDeactivation)!.body.seq as number;
    const after = () => aliceMessages().filter((frame) => (frame.body.seq as number) > deactivation);
    await firehose.until(() => after().some((frame) => frame.type === "#sync"));
    expect(after().map((frame) => frame.type)).toEqual(["#account", "#identity", "#sync"]);
    const [account, identity, sync] = after();
    expect(account!.body).toMatchObject({ did: alice.did, active: true });
    expect(account!.body.status).toBeUndefined();
    expect(identity!.body).toMatchObject({ did: alice.did, handle: alice.handle });
    const latest = await callAnonymous<{ cid: string; rev: string }>(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } });
    expect(latest.status).toBe(200);
    expect(sync!.body.rev).toBe(latest.body.rev);

    for (const [nsid, params] of SYNC_READS) expect((await fetch(`${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params())}`)).status, nsid).toBe(200);
    expect(await repoStatus()).toEqual({ did: alice.did, active: true, rev: latest.body.rev });
    expect(await listed()).toMatchObject({ active: true });
    expect((await listed())!.status).toBeUndefined();
    // The app's grant was kept: its token works again; nothing written while deactivated landed.
    const written = await post("after");
    expect(written.status).toBe(200);
    const records = await callAnonymous<{ records: Array<{ uri: string }> }>(server, "com.atproto.repo.listRecords", { params: { repo: alice.did, collection: NOTE } });
    expect(records.body.records.map((record) => record.uri.split("/").pop()).sort()).toEqual(["after", "kept"]);
    expect((await call<Record<string, unknown>>(session, "com.atproto.server.getSession")).body).toMatchObject({ active: true });
  });

  it("reactivating inside the flow, after a proof: the same request's screen comes back with Allow, whose code works; the network is told", async () => {
    // Deactivated again (the test before reactivated from the overview).
    expect((await postForm(browser, "/account/deactivate", { csrf_token: browser.csrfToken, intent: "deactivate" })).status).toBe(303);
    await firehose.until(() => aliceMessages().filter(isDeactivation).length === 2);
    const deactivation = aliceMessages().filter(isDeactivation)[1]!.body.seq as number;
    const stale = await signedIn(server, ALICE.handle, ALICE.password);
    await ageSession(stale);
    const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(SCOPE));
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest({ redirect_uri: "http://127.0.0.1/callback", scope: SCOPE, state: "s2", code_challenge: pkce.challenge, code_challenge_method: "S256" });
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const page = await openConsentPage(authorizeUrl, stale.jar);

    const answer = await submitConsent(authorizeUrl, stale.jar, { decision: "reactivate", account: alice.did, password: ALICE.password, csrfToken: page.csrfToken });
    expect(answer.status).toBe(303);
    // The same request (its client_id and request_uri), for this account, with the notice; never a code.
    const location = new URL(answer.headers.get("location")!, server.issuer);
    expect(location.pathname).toBe("/oauth/authorize");
    expect(location.searchParams.get("client_id")).toBe(client.clientId);
    expect(location.searchParams.get("request_uri")).toBe(par.body.request_uri);
    expect(location.searchParams.get("account")).toBe(alice.did);
    expect(location.searchParams.get("notice")).toBe("account-reactivated");
    expect(location.searchParams.get("code")).toBeNull();
    expect(await repoStatus()).toMatchObject({ active: true });
    await firehose.until(() => aliceMessages().some((frame) => frame.type === "#sync" && (frame.body.seq as number) > deactivation));
    expect(aliceMessages().filter((frame) => (frame.body.seq as number) > deactivation).map((frame) => frame.type)).toEqual(["#account", "#identity", "#sync"]);

    const screen = await openConsentPage(location.href, stale.jar);
    expect(visibleText(screen.html)).toContain("Your account is active again");
    expect(screen.html).toContain('value="allow"');
    const allowed = await submitConsent(authorizeUrl, stale.jar, { decision: "allow", account: alice.did, csrfToken: screen.csrfToken });
    const code = new URL(allowed.headers.get("location")!).searchParams.get("code")!;
    const tokens = await client.exchangeCode(code, pkce.verifier, "http://127.0.0.1/callback");
    expect(tokens.status).toBe(200);
    expect(tokens.body.sub).toBe(alice.did);
  });
});
