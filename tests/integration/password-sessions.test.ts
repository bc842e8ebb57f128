/**
 * Password sessions and app passwords (docs/decisions/0047) through the official client, `@atproto/api`'s AtpAgent,
 * unchanged: a third-party app signing in with the account's password and a bot with an app password sign in, write
 * posts, likes and a profile, read them back, refresh when the access token expires (the server's clock is moved, not
 * waited for), resume a stored session and sign out; the reference's answers to wrong passwords and spent tokens;
 * what an app password may not do; revocation and a password change ending sessions at once.
 */
import { AtpAgent, type AtpSessionData } from "@atproto/api";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { HOUR, MINUTE } from "../../app/.server/util/time.ts";
import { openPage, pageText, postForm, signedIn } from "../helpers/account.ts";
import { CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { createAlice, newClient } from "../helpers/flow.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { agentRefusal, tokenWithScope, call } from "../helpers/xrpc.ts";

let server: TestServer;
let clock: TestClock;
let smtp: TestSmtp;

const CAROL = { handle: "carol.test", email: "carol@example.com", password: "carol's long password" };
let carol: { did: string; handle: string };

beforeAll(async () => {
  clock = testClock();
  smtp = await startSmtpServer();
  server = await startTestServer({ ...clock.env, ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>" });
  carol = await createAccount(server, CAROL);
  await createAlice(server);
});
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
  clock?.remove();
});

const refusal = agentRefusal;
const agent = () => new AtpAgent({ service: server.issuer });

/** A post, a like of it and a profile, written with `app` and read back anonymously from the repository. */
async function writeAndReadBack(app: AtpAgent, text: string): Promise<void> {
  const post = await app.post({ text, createdAt: new Date().toISOString() });
  const like = await app.like(post.uri, post.cid);
  await app.upsertProfile((existing) => ({ ...existing, displayName: `${text} (profile)` }));
  const reader = agent();
  const did = app.session!.did;
  const rkeyOf = (uri: string) => uri.split("/").pop()!;
  const readPost = await reader.com.atproto.repo.getRecord({ repo: did, collection: "app.bsky.feed.post", rkey: rkeyOf(post.uri) });
  expect(readPost.data.value).toMatchObject({ text });
  const readLike = await reader.com.atproto.repo.getRecord({ repo: did, collection: "app.bsky.feed.like", rkey: rkeyOf(like.uri) });
  expect(readLike.data.value).toMatchObject({ subject: { uri: post.uri, cid: post.cid } });
  const profile = await reader.com.atproto.repo.getRecord({ repo: did, collection: "app.bsky.actor.profile", rkey: "self" });
  expect(profile.data.value).toMatchObject({ displayName: `${text} (profile)` });
}

/** First, while the server's clock is the real one: the OAuth client's DPoP proofs carry the real time. */
describe("OAuth and app passwords do not mix", () => {
  it("an app password is refused on the OAuth sign-in screen, as a wrong password", async () => {
    const owner = agent();
    await owner.login({ identifier: CAROL.handle, password: CAROL.password });
    const created = await owner.com.atproto.server.createAppPassword({ name: "screen test" });
    const client = await newClient(server);
    const par = await client.pushAuthorizationRequest({
      redirect_uri: "http://127.0.0.1:54321/callback",
      scope: "atproto transition:generic",
      state: "s",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
    });
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    const answer = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: CAROL.handle, password: created.data.password, csrfToken: page.csrfToken! });
    expect(answer.status).toBe(400);
    expect(answer.headers.get("location")).toBeNull();
    expect(jar.get("atrium_session")).toBeUndefined();
    await owner.com.atproto.server.revokeAppPassword({ name: "screen test" });
  });

  it("an OAuth token cannot list, create or revoke app passwords, whatever its scope", async () => {
    const token = await tokenWithScope(server, "atproto transition:generic");
    for (const [nsid, json] of [
      ["com.atproto.server.createAppPassword", { name: "x" }],
      ["com.atproto.server.revokeAppPassword", { name: "x" }],
    ] as const) {
      expect((await call(token, nsid, { json })).status).toBe(403);
    }
    expect((await call(token, "com.atproto.server.listAppPasswords")).status).toBe(403);
  });
});

describe("a third-party app signing in with the account's password (AtpAgent, unchanged)", () => {
  let app: AtpAgent;
  let stored: AtpSessionData | undefined;

  it("logs in with the handle and gets the reference's session: HS256 JWTs with its scopes, typ and lifetimes", async () => {
    app = new AtpAgent({ service: server.issuer, persistSession: (_event, session) => void (stored = session) });
    const answer = await app.login({ identifier: CAROL.handle, password: CAROL.password });
    expect(answer.data).toMatchObject({ did: carol.did, handle: CAROL.handle, email: CAROL.email, emailConfirmed: false, emailAuthFactor: false, active: true });
    const access = decodeJwt(answer.data.accessJwt);
    expect(decodeProtectedHeader(answer.data.accessJwt)).toEqual({ typ: "at+jwt", alg: "HS256" });
    expect(access).toMatchObject({ scope: "com.atproto.access", sub: carol.did, aud: `did:web:${new URL(server.issuer).hostname}` });
    expect(access.exp! - access.iat!).toBe(2 * 3600);
    const refresh = decodeJwt(answer.data.refreshJwt);
    expect(decodeProtectedHeader(answer.data.refreshJwt)).toEqual({ typ: "refresh+jwt", alg: "HS256" });
    expect(refresh).toMatchObject({ scope: "com.atproto.refresh", sub: carol.did });
    expect(refresh.exp! - refresh.iat!).toBe(90 * 24 * 3600);
    expect(stored?.did).toBe(carol.did);
  });

  it("writes a post, a like and a profile, and reads them back", async () => {
    await writeAndReadBack(app, "hello from a password session");
  });

  it("getSession answers the account with its email", async () => {
    const session = await app.com.atproto.server.getSession();
    expect(session.data).toEqual({ did: carol.did, handle: CAROL.handle, email: CAROL.email, emailConfirmed: false, emailAuthFactor: false, active: true });
  });

  it("refreshes by itself once the access token expired (the server's clock moved 2 hours), and goes on", async () => {
    const before = app.session!;
    clock.advance(2 * HOUR + MINUTE);
    const expired = await fetch(`${server.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${before.accessJwt}` } });
    expect(expired.status).toBe(400);
    expect(await expired.json()).toEqual({ error: "ExpiredToken", message: "Token has expired" });
    await writeAndReadBack(app, "after a refresh");
    expect(app.session!.accessJwt).not.toBe(before.accessJwt);
    expect(app.session!.refreshJwt).not.toBe(before.refreshJwt);
    expect(stored?.refreshJwt).toBe(app.session!.refreshJwt);
  });

  it("a stored session resumes in another agent (resumeSession refreshes it), and the old refresh token is then spent", async () => {
    const saved = { ...stored! };
    const resumed = agent();
    await resumed.resumeSession(saved);
    expect(resumed.session?.did).toBe(carol.did);
    expect((await resumed.com.atproto.server.getSession()).data.handle).toBe(CAROL.handle);
    // The first agent still holds the refresh token that was just spent: within the grace its retry gets the same
    // successor (the reference's behaviour for a refresh whose answer was lost).
    const retried = await app.com.atproto.server.refreshSession(undefined, { headers: { authorization: `Bearer ${saved.refreshJwt}` } });
    expect(decodeJwt(retried.data.refreshJwt).jti).toBe(decodeJwt(resumed.session!.refreshJwt).jti);
    app = resumed;
  });

  it("logout ends the session at once: its access and refresh tokens are refused", async () => {
    const session = app.session!;
    await app.logout();
    expect(app.session).toBeUndefined();
    const access = await fetch(`${server.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${session.accessJwt}` } });
    expect(await access.json()).toEqual({ error: "ExpiredToken", message: "Token has been revoked" });
    const again = agent();
    expect(await refusal(again.resumeSession(session))).toMatchObject({ status: 400, error: "ExpiredToken", message: "Token has been revoked" });
    expect(again.session).toBeUndefined();
  });

  it("logs in with the email in any case, and with the DID", async () => {
    for (const identifier of ["CAROL@Example.com", carol.did]) {
      const other = agent();
      await other.login({ identifier, password: CAROL.password });
      expect(other.session?.handle).toBe(CAROL.handle);
      await other.logout();
    }
  });
});

describe("the reference's answers to wrong credentials and spent tokens", () => {
  it("a wrong password and an unknown identifier get the same answer: 401 AuthenticationRequired", async () => {
    const dave = { handle: "dave.test", email: "dave@example.com", password: "dave's long password" };
    await createAccount(server, dave);
    const wrong = await refusal(agent().login({ identifier: dave.handle, password: "not dave's password" }));
    const unknown = await refusal(agent().login({ identifier: "nobody.test", password: "not dave's password" }));
    expect(wrong).toEqual({ status: 401, error: "AuthenticationRequired", message: "Invalid identifier or password" });
    expect(unknown).toEqual(wrong);
  });

  it("refresh with the access token, or a garbage token, is InvalidToken; deleteSession of an unknown token is no error", async () => {
    const app = agent();
    await app.login({ identifier: CAROL.handle, password: CAROL.password });
    const server_ = app.com.atproto.server;
    expect(await refusal(server_.refreshSession(undefined, { headers: { authorization: `Bearer ${app.session!.accessJwt}` } }))).toMatchObject({
      status: 400,
      error: "InvalidToken",
    });
    expect(await refusal(server_.refreshSession(undefined, { headers: { authorization: "Bearer a.b.c" } }))).toMatchObject({ status: 400, error: "InvalidToken" });
    await server_.deleteSession(undefined, { headers: { authorization: `Bearer ${app.session!.refreshJwt}` } });
    await server_.deleteSession(undefined, { headers: { authorization: `Bearer ${app.session!.refreshJwt}` } });
  });

  it("a refresh token spent twice within its grace yields the same successor; after the grace it is revoked", async () => {
    const app = agent();
    await app.login({ identifier: CAROL.handle, password: CAROL.password });
    const first = app.session!.refreshJwt;
    const refresh = (token: string) => app.com.atproto.server.refreshSession(undefined, { headers: { authorization: `Bearer ${token}` } });
    const [a, b] = [await refresh(first), await refresh(first)];
    expect(decodeJwt(a.data.refreshJwt).jti).toBe(decodeJwt(b.data.refreshJwt).jti);
    expect(decodeJwt(a.data.refreshJwt).jti).not.toBe(decodeJwt(first).jti);
    clock.advance(2 * HOUR + MINUTE);
    expect(await refusal(refresh(first))).toEqual({ status: 400, error: "ExpiredToken", message: "Token has been revoked" });
    // Its successor lives on.
    expect((await refresh(a.data.refreshJwt)).data.did).toBe(carol.did);
  });
});

describe("a bot with an app password", () => {
  let owner: AtpAgent;
  let bot: AtpAgent;
  let appPassword: string;

  beforeAll(async () => {
    owner = agent();
    await owner.login({ identifier: CAROL.handle, password: CAROL.password });
  });

  it("the owner creates one: the reference's xxxx-xxxx-xxxx-xxxx form, shown once; a second of the same name is refused", async () => {
    const created = await owner.com.atproto.server.createAppPassword({ name: "my bot" });
    expect(created.data).toMatchObject({ name: "my bot", privileged: false });
    expect(created.data.password).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);
    appPassword = created.data.password;
    expect(await refusal(owner.com.atproto.server.createAppPassword({ name: "my bot" }))).toMatchObject({ status: 400, error: "InvalidRequest" });
    const stored = await rowOf<{ passwordHash: string }>(server.database(), sql`SELECT "passwordHash" FROM "AppPassword" WHERE "name" = ${"my bot"}`);
    expect(stored?.passwordHash).toMatch(/^scrypt\$/);
    expect(stored?.passwordHash).not.toContain(appPassword);
  });

  it("signs in with it (in capitals too), writes and reads back; its session's scope is the reference's appPass", async () => {
    bot = agent();
    const answer = await bot.login({ identifier: CAROL.handle, password: appPassword.toUpperCase() });
    expect(decodeJwt(answer.data.accessJwt).scope).toBe("com.atproto.appPass");
    await writeAndReadBack(bot, "a bot's post");
    const listed = await bot.com.atproto.server.listAppPasswords();
    expect(listed.data.passwords.map((password) => [password.name, password.privileged])).toEqual([["my bot", false]]);
  });

  it("cannot do the account-management calls: create an app password, change the handle, deactivate, delete, change the email", async () => {
    expect(await refusal(bot.com.atproto.server.createAppPassword({ name: "another" }))).toMatchObject({ status: 400, error: "InvalidToken", message: expect.stringContaining("Bad token scope") });
    expect(await refusal(bot.com.atproto.identity.updateHandle({ handle: "hijacked.test" }))).toMatchObject({ status: 400, error: "InvalidToken" });
    expect(await refusal(bot.com.atproto.server.deactivateAccount({}))).toMatchObject({ status: 403 });
    expect(await refusal(bot.com.atproto.server.requestEmailUpdate())).toMatchObject({ status: 403 });
    expect(await refusal(bot.com.atproto.server.deleteAccount({ did: carol.did, password: appPassword, token: "x" }))).toMatchObject({ status: 403 });
    // Nor reach privileged methods: the chat service, or a service token to move the account.
    expect(await refusal(bot.com.atproto.server.getServiceAuth({ aud: "did:web:api.bsky.chat", lxm: "chat.bsky.convo.listConvos" }))).toMatchObject({
      status: 400,
      message: expect.stringContaining("Bad token method"),
    });
    expect((await owner.com.atproto.server.getSession()).data.handle).toBe(CAROL.handle);
  });

  it("a privileged app password reaches chat.bsky.* (a service token for it)", async () => {
    const created = await owner.com.atproto.server.createAppPassword({ name: "chat app", privileged: true });
    const chat = agent();
    await chat.login({ identifier: CAROL.email, password: created.data.password });
    expect(decodeJwt(chat.session!.accessJwt).scope).toBe("com.atproto.appPassPrivileged");
    const token = await chat.com.atproto.server.getServiceAuth({ aud: "did:web:api.bsky.chat", lxm: "chat.bsky.convo.listConvos" });
    expect(decodeJwt(token.data.token)).toMatchObject({ iss: carol.did, lxm: "chat.bsky.convo.listConvos" });
    expect(await refusal(chat.com.atproto.server.createAppPassword({ name: "another" }))).toMatchObject({ status: 400, error: "InvalidToken" });
    await owner.com.atproto.server.revokeAppPassword({ name: "chat app" });
  });

  it("taking the chat back from a privileged app password (its page's button) refuses its live session the chat at its next call and refresh, the rest kept (docs/decisions/0053)", async () => {
    const created = await owner.com.atproto.server.createAppPassword({ name: "narrowed chat app", privileged: true });
    const chat = agent();
    await chat.login({ identifier: CAROL.handle, password: created.data.password });
    const chatToken = () => chat.com.atproto.server.getServiceAuth({ aud: "did:web:api.bsky.chat", lxm: "chat.bsky.convo.listConvos" });
    expect((await chatToken()).success).toBe(true);

    const browser = await signedIn(server, CAROL.handle, CAROL.password);
    const stored = await rowOf<{ id: string }>(server.database(), sql`SELECT "id" FROM "AppPassword" WHERE "name" = ${"narrowed chat app"}`);
    const path = `/account/app-passwords/${stored!.id}`;
    const page = await openPage(browser, path);
    expect(pageText(page.html)).toContain("Take back chat access");
    const taken = await postForm(browser, path, { csrf_token: page.csrfToken!, intent: "drop-privilege" });
    expect(taken.status).toBe(303);
    expect(taken.location).toBe(`${path}?notice=app-password-chat-taken-back`);

    // The same access token, unchanged in the app: the chat is refused, the rest works.
    expect(await refusal(chatToken())).toMatchObject({ status: 400, message: expect.stringContaining("Bad token method") });
    expect((await chat.com.atproto.server.getSession()).data.handle).toBe(CAROL.handle);
    const refreshed = await fetch(`${server.issuer}/xrpc/com.atproto.server.refreshSession`, { method: "POST", headers: { Authorization: `Bearer ${chat.session!.refreshJwt}` } });
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(((await refreshed.json()) as { accessJwt: string }).accessJwt).scope).toBe("com.atproto.appPass");
    expect(pageText((await openPage(browser, path)).html)).not.toContain("Take back chat access");
    await owner.com.atproto.server.revokeAppPassword({ name: "narrowed chat app" });
  });

  it("is listed under Connected apps; revoking its app password ends its session at once, and the password signs in no more", async () => {
    const browser = await signedIn(server, CAROL.handle, CAROL.password);
    expect(pageText((await openPage(browser, "/account/apps")).html)).toContain("Signed in with the app password “my bot”");
    const session = bot.session!;
    await owner.com.atproto.server.revokeAppPassword({ name: "my bot" });
    const call = await fetch(`${server.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${session.accessJwt}` } });
    expect(await call.json()).toEqual({ error: "ExpiredToken", message: "Token has been revoked" });
    expect(await refusal(agent().resumeSession(session))).toMatchObject({ status: 400, error: "ExpiredToken" });
    expect(await refusal(agent().login({ identifier: CAROL.handle, password: appPassword }))).toMatchObject({ status: 401, error: "AuthenticationRequired" });
  });
});

describe("a password change ends every password session, an app password's too", () => {
  it("both sessions are refused at once; the app password still signs in, the old password no more", async () => {
    const erin = { handle: "erin.test", email: "erin@example.com", password: "erin's first password" };
    const { did } = await createAccount(server, erin);
    const app = agent();
    await app.login({ identifier: erin.handle, password: erin.password });
    const appPassword = (await app.com.atproto.server.createAppPassword({ name: "bot" })).data.password;
    const bot = agent();
    await bot.login({ identifier: erin.handle, password: appPassword });

    const browser = await signedIn(server, erin.handle, erin.password);
    const changed = await postForm(browser, "/account/password", {
      csrf_token: browser.csrfToken,
      current_password: erin.password,
      new_password: "erin's second password",
      confirm_password: "erin's second password",
    });
    expect(changed.status).toBe(303);
    for (const session of [app.session!, bot.session!]) {
      const answer = await fetch(`${server.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${session.accessJwt}` } });
      expect(await answer.json()).toEqual({ error: "ExpiredToken", message: "Token has been revoked" });
      expect(await refusal(agent().resumeSession(session))).toMatchObject({ status: 400, error: "ExpiredToken" });
    }
    expect(await refusal(agent().login({ identifier: erin.handle, password: erin.password }))).toMatchObject({ status: 401 });
    const again = agent();
    await again.login({ identifier: erin.handle, password: appPassword });
    expect(again.session?.did).toBe(did);
  });
});

describe("the emailed sign-in code (authFactorToken), turned on in the account area", () => {
  it("asks for the code, which then signs in once; a wrong code is refused; app passwords never need it", async () => {
    const finn = { handle: "finn.test", email: "finn@example.com", password: "finn's long password" };
    const { did } = await createAccount(server, finn);
    const owner = agent();
    await owner.login({ identifier: finn.handle, password: finn.password });
    const appPassword = (await owner.com.atproto.server.createAppPassword({ name: "bot" })).data.password;

    // Signing in to the account area counts as a recent authentication (docs/decisions/0007).
    const browser = await signedIn(server, finn.handle, finn.password);
    const turnedOn = await postForm(browser, "/account/app-passwords", { csrf_token: browser.csrfToken, intent: "sign-in-code", on: "1" });
    expect(turnedOn.location).toBe("/account/app-passwords?notice=sign-in-code-on");

    const asked = await refusal(agent().login({ identifier: finn.handle, password: finn.password }));
    expect(asked).toEqual({ status: 401, error: "AuthFactorTokenRequired", message: "A sign-in code has been sent to your email address" });
    const mail = await smtp.next();
    expect(mail.to).toMatchObject({ text: finn.email });
    const code = typedCodeIn(mail);
    expect(await refusal(agent().login({ identifier: finn.handle, password: finn.password, authFactorToken: "AAAAA-AAAAA" }))).toMatchObject({ status: 401, error: "InvalidToken" });
    const app = agent();
    const answer = await app.login({ identifier: finn.handle, password: finn.password, authFactorToken: code });
    expect(answer.data).toMatchObject({ did, emailAuthFactor: true });
    // Once: the same code again asks anew.
    expect(await refusal(agent().login({ identifier: finn.handle, password: finn.password, authFactorToken: code }))).toMatchObject({ status: 401, error: "InvalidToken" });
    // A wrong password never sends a code.
    expect(await refusal(agent().login({ identifier: finn.handle, password: "not finn's password" }))).toMatchObject({ status: 401, error: "AuthenticationRequired" });
    const bot = agent();
    await bot.login({ identifier: finn.handle, password: appPassword });
    expect(bot.session?.did).toBe(did);
    expect(smtp.messages.filter((message) => (message.to as { text: string }).text === finn.email)).toHaveLength(1);
  });
});

describe("a deactivated account (docs/decisions/0031), as the reference answers it", () => {
  it("signs in and refreshes with active: false; every call but getSession is refused AccountDeactivated", async () => {
    const gina = { handle: "gina.test", email: "gina@example.com", password: "gina's long password" };
    const { did } = await createAccount(server, gina);
    await execute(server.database(), sql`UPDATE "Account" SET "deactivatedAt" = ${at(Date.now())} WHERE "did" = ${did}`);
    const app = agent();
    const answer = await app.login({ identifier: gina.handle, password: gina.password });
    expect(answer.data).toMatchObject({ did, active: false, status: "deactivated" });
    expect((await app.com.atproto.server.getSession()).data).toMatchObject({ active: false, status: "deactivated" });
    expect(await refusal(app.post({ text: "while deactivated", createdAt: new Date().toISOString() }))).toMatchObject({ status: 401, error: "AccountDeactivated" });
    const refreshed = await app.com.atproto.server.refreshSession(undefined, { headers: { authorization: `Bearer ${app.session!.refreshJwt}` } });
    expect(refreshed.data).toMatchObject({ active: false, status: "deactivated" });
  });
});

describe("ATRIUM_PASSWORD_SESSIONS=off", () => {
  it("createSession says plainly that this server signs apps in with OAuth only", async () => {
    const oauthOnly = await startTestServer({ ATRIUM_PASSWORD_SESSIONS: "off" });
    try {
      await createAccount(oauthOnly, CAROL);
      const answer = await refusal(new AtpAgent({ service: oauthOnly.issuer }).login({ identifier: CAROL.handle, password: CAROL.password }));
      expect(answer).toMatchObject({ status: 501, error: "MethodNotImplemented", message: expect.stringContaining("OAuth only") });
    } finally {
      await oauthOnly.stop();
    }
  });
});

describe("two server processes on one database", () => {
  let second: TestServer;
  beforeAll(async () => {
    second = await startTestServer({ ...clock.env, DATABASE_URL: server.databaseUrl, ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>" });
  });
  afterAll(() => second?.stop());

  const refreshAt = (issuer: string, token: string) =>
    fetch(`${issuer}/xrpc/com.atproto.server.refreshSession`, { method: "POST", headers: { Authorization: `Bearer ${token}` } });

  it("ten refreshes of one token at once over both: one spends it, every other is handed the same successor, and the session has one", async () => {
    const app = agent();
    await app.login({ identifier: CAROL.handle, password: CAROL.password });
    const token = app.session!.refreshJwt;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => refreshAt(i % 2 ? second.issuer : server.issuer, token)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    const successors = new Set(await Promise.all(answers.map(async (answer) => decodeJwt(((await answer.json()) as { refreshJwt: string }).refreshJwt).jti!)));
    expect(successors.size).toBe(1);
    // The session holds the spent token (in its grace) and its one successor, live: nothing else.
    const tokens = await rowsOf<{ tokenHash: string; spent: number }>(server.database(), sql`SELECT t."tokenHash" AS "tokenHash",
        CASE WHEN t."usedAt" IS NULL THEN 0 ELSE 1 END AS "spent"
      FROM "PasswordRefreshToken" t WHERE t."sessionId" = (SELECT "sessionId" FROM "PasswordRefreshToken" WHERE "tokenHash" = ${sha256Base64url(decodeJwt(token).jti!)})
      ORDER BY "spent"`);
    expect(tokens.map((row) => [row.tokenHash, Number(row.spent)])).toEqual([
      [sha256Base64url([...successors][0]!), 0],
      [sha256Base64url(decodeJwt(token).jti!), 1],
    ]);
    clock.advance(2 * HOUR + MINUTE);
    expect(await (await refreshAt(second.issuer, token)).json()).toEqual({ error: "ExpiredToken", message: "Token has been revoked" });
    await app.logout();
  });

  it("an app password revoked through one process is refused by the other on its very next call", async () => {
    const owner = agent();
    await owner.login({ identifier: CAROL.handle, password: CAROL.password });
    const password = (await owner.com.atproto.server.createAppPassword({ name: "two processes" })).data.password;
    const bot = new AtpAgent({ service: second.issuer });
    await bot.login({ identifier: CAROL.handle, password });
    expect((await bot.com.atproto.server.getSession()).data.did).toBe(carol.did);
    await owner.com.atproto.server.revokeAppPassword({ name: "two processes" });
    const answer = await fetch(`${second.issuer}/xrpc/com.atproto.server.getSession`, { headers: { Authorization: `Bearer ${bot.session!.accessJwt}` } });
    expect(await answer.json()).toEqual({ error: "ExpiredToken", message: "Token has been revoked" });
    await owner.logout();
  });
});
