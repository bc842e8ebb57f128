/**
 * WebAuthn challenges as an attacker sees them: anonymous clients asking for
 * passkey options as fast as they can (from many addresses), one assertion
 * raced across two server processes, a cloned key's answers with one counter
 * raced the same way, and challenges replayed where they were
 * not issued, altered, forged or too old.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, statementOf, type Statement } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { CookieJar } from "../helpers/consent.ts";
import { embeddedChallenge, getJson, newBrowser, openPage, postJson, signedIn, type Browser } from "../helpers/account.ts";
import { mintChallenge } from "../helpers/challenges.ts";
import { rowOf } from "../helpers/databases.ts";
import { ALICE, CLIENT_ID, SCOPE, tableNames } from "../helpers/flow.ts";
import { SoftAuthenticator } from "../helpers/soft-authenticator.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const RP_ID = "localhost";
const REDIRECT = "http://127.0.0.1:47123/callback";

let server: TestServer;
let alice: { did: string; handle: string };
let client: DpopClient;

beforeAll(async () => {
  // 400 requests at once on a loaded machine may take longer than the default 30 s response timeout, whose 503 is
  // not what this file is about: what matters is that nothing is written, however long the answers take.
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_REQUEST_TIMEOUT_SECONDS: "600" });
  alice = await createAccount(server, ALICE);
  client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
});
afterAll(() => server?.stop());

let lastAddress = 0;
/** A client address of its own, sent as X-Forwarded-For: attackers have many. */
function newAddress(): string {
  lastAddress += 1;
  return `10.${(lastAddress >> 16) & 255}.${(lastAddress >> 8) & 255}.${lastAddress & 255}`;
}

async function alicePasskey(): Promise<SoftAuthenticator> {
  const authenticator = new SoftAuthenticator({ userHandle: Buffer.from(alice.did).toString("base64url") });
  await authenticator.insertInto(server.database(), alice.did);
  return authenticator;
}

/**
 * Rows per table. RateLimit is left out: per-address request counters are
 * the request limiter's own bounded bookkeeping (one row per address and
 * window), not something issuing a challenge writes.
 */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = (await tableNames(server)).filter((name) => !name.startsWith("_") && name !== "RateLimit");
  const counts: Record<string, number> = {};
  for (const name of tables) counts[name] = (await rowOf<{ n: number }>(server.database(), countRows(name)))!.n;
  return counts;
}

/** One statement per table (names from the database's catalogue, never from input), made once so each engine prepares it once. */
const countStatements = new Map<string, () => Statement>();
function countRows(table: string): Statement {
  let statement = countStatements.get(table);
  if (!statement) countStatements.set(table, (statement = statementOf(`SELECT COUNT(*) AS "n" FROM "${table}"`)));
  return statement();
}

async function pushedRequest(): Promise<{ requestUri: string; authorizeUrl: string }> {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({ redirect_uri: REDIRECT, scope: SCOPE, state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256" });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { requestUri: par.body.request_uri, authorizeUrl: client.authorizeUrl(par.body.request_uri) };
}

/** A new browser with no cookies, from an address of its own. */
function anonymous(address = newAddress()): Browser {
  return { server, jar: new CookieJar(), address };
}

describe("issuing passkey options", () => {
  it("400 parallel anonymous requests for options, each from its own address, add no rows to any table", async () => {
    await alicePasskey();
    const pending = await pushedRequest();
    const passkeyAuth = new URL("/oauth/passkey-auth", server.issuer);
    passkeyAuth.searchParams.set("client_id", CLIENT_ID);
    passkeyAuth.searchParams.set("request_uri", pending.requestUri);
    const before = await rowCounts();

    const requests = [
      ...Array.from({ length: 250 }, () => getJson(anonymous(), "/account/passkey-auth").then((answer) => ({ status: answer.status, challenge: answer.body.challenge }))),
      ...Array.from({ length: 50 }, () => getJson(anonymous(), passkeyAuth.pathname + passkeyAuth.search).then((answer) => ({ status: answer.status, challenge: answer.body.challenge }))),
      // The pages that embed options: the account sign-in page and the consent screen.
      ...Array.from({ length: 50 }, () => openPage(anonymous(), "/account").then((page) => ({ status: page.status, challenge: embeddedChallenge(page.html) }))),
      ...Array.from({ length: 50 }, () => openPage(anonymous(), pending.authorizeUrl).then((page) => ({ status: page.status, challenge: embeddedChallenge(page.html) }))),
    ];
    const answers = await Promise.all(requests);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.challenge).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    }
    // Every answer carried its own challenge...
    expect(new Set(answers.map((answer) => answer.challenge)).size).toBe(answers.length);
    // ...and none of them was written down.
    expect(await rowCounts()).toEqual(before);
  });
});

const BOB = { handle: "bob.test", email: "bob@example.com", password: "bob's long passphrase" };

function assertion(authenticator: SoftAuthenticator, challenge: string, counter?: number) {
  return authenticator.assert({ challenge, origin: server.issuer, rpId: RP_ID, userVerified: true, counter });
}

async function replayRecords(): Promise<number> {
  return (await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord"`))!.n;
}

/** Flips one bit of byte `index` of a challenge. */
function altered(challenge: string, index: number): string {
  const bytes = Buffer.from(challenge, "base64url");
  bytes[index] = (bytes[index] ?? 0) ^ 0x01;
  return bytes.toString("base64url");
}

describe("spending a challenge", () => {
  it("one assertion posted 10 times in parallel, split across two server processes on one database, signs in exactly once", async () => {
    // A second process on the same database and issuer, as behind a load balancer.
    const second = await startTestServer({ DATABASE_URL: server.databaseUrl, ATRIUM_TRUST_PROXY: "1", PUBLIC_URL: server.issuer });
    try {
      const authenticator = await alicePasskey();
      const browser = await newBrowser(server, newAddress());
      const options = await getJson(browser, "/account/passkey-auth");
      const signed = assertion(authenticator, options.body.challenge!);
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          postJson({ ...browser, address: newAddress(), via: index % 2 ? `http://localhost:${second.port}` : undefined }, "/account/passkey-auth", {
            csrf_token: browser.csrfToken,
            response: signed,
          }),
        ),
      );
      expect(results.filter((result) => result.status === 200)).toHaveLength(1);
      // Losers: the spent challenge (400), or the sign-in throttle once the credential's failures add up (429).
      for (const result of results.filter((candidate) => candidate.status !== 200)) expect([400, 429], JSON.stringify(result.body)).toContain(result.status);
      expect(results.filter((result) => result.headers.getSetCookie().some((cookie) => cookie.startsWith("atrium_session=")))).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });

  it("a cloned passkey: 6 answers with one signature counter, each to a challenge of its own, posted at once across two server processes, sign in once", async () => {
    const second = await startTestServer({ DATABASE_URL: server.databaseUrl, ATRIUM_TRUST_PROXY: "1", PUBLIC_URL: server.issuer });
    try {
      // An account of its own, so that no other test's failures count on its sign-in throttle.
      const carol = await createAccount(server, { handle: "carol.test", email: "carol@example.com", password: "carol's long passphrase" });
      const authenticator = new SoftAuthenticator({ userHandle: Buffer.from(carol.did).toString("base64url") });
      await authenticator.insertInto(server.database(), carol.did);
      // Copies of one key answer with the same count: each from a browser and an address of its own, its challenge its own.
      const browsers = await Promise.all(Array.from({ length: 6 }, () => newBrowser(server, newAddress())));
      const answers = await Promise.all(browsers.map(async (browser) => assertion(authenticator, (await getJson(browser, "/account/passkey-auth")).body.challenge!, 7)));
      const results = await Promise.all(
        browsers.map((browser, index) =>
          postJson({ ...browser, via: index % 2 ? `http://localhost:${second.port}` : undefined }, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: answers[index] }),
        ),
      );
      expect(results.filter((result) => result.status === 200)).toHaveLength(1);
      // Losers: the counter that did not advance (400), or the sign-in throttle once the credential's failures add up (429).
      for (const result of results.filter((candidate) => candidate.status !== 200)) expect([400, 429], JSON.stringify(result.body)).toContain(result.status);
      expect(results.filter((result) => result.headers.getSetCookie().some((cookie) => cookie.startsWith("atrium_session=")))).toHaveLength(1);
      const stored = await rowOf<{ counter: number }>(server.database(), sql`SELECT "counter" FROM "Passkey" WHERE "accountDid" = ${carol.did}`);
      expect(Number(stored!.counter)).toBe(7);
    } finally {
      await second.stop();
    }
  });

  it("a challenge is refused where it was not issued (another request, the account pages, another account), and the refusal does not spend it", async () => {
    const authenticator = await alicePasskey();
    const bob = await createAccount(server, BOB);
    const browser = await newBrowser(server, newAddress());
    const forAccountPages = (await getJson(browser, "/account/passkey-auth")).body.challenge!;
    const request = await pushedRequest();
    const consent = await openPage(browser, request.authorizeUrl);
    const forRequest = embeddedChallenge(consent.html)!;
    expect(forRequest).toBeTruthy();

    // The account pages' challenge on the consent screen, and the consent screen's at the account pages.
    const onConsent = await postJson(browser, "/oauth/passkey-auth", { request_uri: request.requestUri, client_id: CLIENT_ID, csrf_token: consent.csrfToken, response: assertion(authenticator, forAccountPages) });
    expect(onConsent.status, JSON.stringify(onConsent.body)).toBe(400);
    expect(onConsent.body.error).toBe("passkey_failed");
    const onAccount = await postJson(browser, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: assertion(authenticator, forRequest) });
    expect(onAccount.status, JSON.stringify(onAccount.body)).toBe(400);
    expect(onAccount.body.error).toBe("passkey_failed");

    // Alice's registration challenge: not a sign-in, and not Bob's registration.
    const aliceBrowser = await newBrowser(server, newAddress());
    const signIn = await postJson(aliceBrowser, "/account/passkey-auth", { csrf_token: aliceBrowser.csrfToken, response: assertion(authenticator, (await getJson(aliceBrowser, "/account/passkey-auth")).body.challenge!) });
    expect(signIn.status, JSON.stringify(signIn.body)).toBe(200);
    const forAlice = (await getJson(aliceBrowser, "/account/passkey-register")).body.challenge!;
    expect(forAlice).toBeTruthy();
    const asSignIn = await postJson(browser, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: assertion(authenticator, forAlice) });
    expect(asSignIn.status).toBe(400);
    const bobBrowser = await signedIn(server, bob.handle, BOB.password, newAddress());
    const newKey = new SoftAuthenticator();
    const asBob = await postJson(bobBrowser, "/account/passkey-register", {
      csrf_token: bobBrowser.csrfToken,
      name: "Planted",
      response: newKey.attest({ challenge: forAlice, origin: server.issuer, rpId: RP_ID, userVerified: true }),
    });
    expect(asBob.status, JSON.stringify(asBob.body)).toBe(400);
    expect(asBob.body.error).toBe("passkey_failed");
    expect(await rowOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Passkey" WHERE "credentialId" = ${newKey.id}`)).toEqual({ n: 0 });

    // None of the refusals spent anything: each challenge still works where it belongs.
    const own = await postJson(browser, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: assertion(authenticator, forAccountPages) });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    const registered = await postJson(aliceBrowser, "/account/passkey-register", {
      csrf_token: aliceBrowser.csrfToken,
      name: "Alice's new key",
      response: newKey.attest({ challenge: forAlice, origin: server.issuer, rpId: RP_ID, userVerified: true }),
    });
    expect(registered.status, JSON.stringify(registered.body)).toBe(200);
  });

  it("altered, forged and expired challenges are refused before anything is written", async () => {
    const authenticator = await alicePasskey();
    const browser = await newBrowser(server, newAddress());
    const challenge = (await getJson(browser, "/account/passkey-auth")).body.challenge!;
    const bytes = Buffer.from(challenge, "base64url");
    const candidates: [string, string][] = [
      ["purpose byte changed", altered(challenge, 1)],
      ["expiry changed", altered(challenge, 7)],
      ["random part changed", altered(challenge, 12)],
      ["MAC changed", altered(challenge, bytes.length - 1)],
      ["random bytes of the same length", Buffer.from(Array.from({ length: bytes.length }, () => Math.floor(Math.random() * 256))).toString("base64url")],
      ["truncated", bytes.subarray(0, bytes.length - 4).toString("base64url")],
      ["issued for registration with the server's key", await mintChallenge(server, "register", {})],
      ["bound to an authorization request", await mintChallenge(server, "authenticate", { requestIdHash: "some-request" })],
      ["expired a second ago", await mintChallenge(server, "authenticate", {}, { issuedAt: Date.now() - 301_000 })],
    ];
    const before = await replayRecords();
    for (const [label, candidate] of candidates) {
      // Each from its own address with its own unknown credential: only the challenge decides.
      const result = await postJson({ ...browser, address: newAddress() }, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: assertion(new SoftAuthenticator(), candidate) });
      expect(result.status, `${label}: ${JSON.stringify(result.body)}`).toBe(400);
      expect(result.body.error_description, label).toMatch(/expired|already used|another sign-in/);
    }
    expect(await replayRecords()).toBe(before);
    // Control: the untouched challenge signs in, once.
    const good = await postJson(browser, "/account/passkey-auth", { csrf_token: browser.csrfToken, response: assertion(authenticator, challenge) });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(await replayRecords()).toBe(before + 1);
  });
});
