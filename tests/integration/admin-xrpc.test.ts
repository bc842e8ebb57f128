/**
 * The reference's admin methods an operator needs (com.atproto.admin.*, docs/decisions/0051), against a started
 * server on each engine, behind HTTP Basic admin:<ATRIUM_ADMIN_PASSWORD>: what each does to the account, checked in
 * the database and on the account's own sessions and apps, and what each refuses. Guessing the password is
 * admin-guessing.test.ts's; takedowns are takedown.test.ts's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyPassword } from "../../app/.server/accounts/password.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { adminCall, ADMIN_PASSWORD, basicAuthorization } from "../helpers/admin.ts";
import { openPage, signedIn } from "../helpers/account.ts";
import { rowOf } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { testEngine } from "../helpers/test-database.ts";
import { call, expectXrpcError } from "../helpers/xrpc.ts";
import { scopedSession } from "../helpers/xrpc-extra.ts";

const BOB = { handle: "bob.test", email: "bob@example.com", password: "another good password" };
const CAROL = { handle: "carol.test", email: "carol@example.com", password: "a third good password" };

let server: TestServer;
let smtp: TestSmtp;
let alice: { did: string; handle: string };
let bob: { did: string; handle: string };

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>" });
  alice = await createAlice(server);
  bob = await createAccount(server, BOB);
});
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

async function accountRow(did: string) {
  return rowOf<{ handle: string; email: string; emailConfirmedAt: unknown; passwordHash: string }>(
    server.database(),
    sql`SELECT "handle", "email", "emailConfirmedAt", "passwordHash" FROM "Account" WHERE "did" = ${did}`,
  );
}

describe("the admin credential", () => {
  it("refuses a call without it, with another scheme, another user or a wrong password: 401 with a Basic challenge", async () => {
    const session = await scopedSession(server, "atproto transition:generic");
    const refusals = [
      await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: alice.did }, authorization: null }),
      await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: alice.did }, authorization: `Bearer ${session.accessToken}` }),
      await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: alice.did }, authorization: basicAuthorization(ADMIN_PASSWORD, "root") }),
      await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: alice.did }, authorization: basicAuthorization("not the admin password") }),
    ];
    for (const refused of refusals) {
      expectXrpcError(refused, 401, "AuthenticationRequired");
      expect(refused.headers.get("www-authenticate")).toBe('Basic realm="admin", charset="UTF-8"');
    }
    // An app's own token opens nothing of the operator's, whatever its scope.
    const asApp = await call(session, "com.atproto.admin.getAccountInfo", { params: { did: alice.did } });
    expect(asApp.status).toBe(401);
  });

  it("checks the credential before the input: a wrong password with a body is refused, not parsed", async () => {
    const refused = await adminCall(server, "com.atproto.admin.deleteAccount", { json: { did: alice.did }, authorization: basicAuthorization("wrong") });
    expectXrpcError(refused, 401, "AuthenticationRequired");
    expect(await accountRow(alice.did)).toBeDefined();
  });
});

describe("the admin methods", () => {
  it("getAccountInfo and getAccountInfos: the account as the lexicon's accountView, or NotFound", async () => {
    const info = await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: alice.did } });
    expect(info.status).toBe(200);
    expect(info.body).toEqual({ did: alice.did, handle: ALICE.handle, email: ALICE.email, indexedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expectXrpcError(await adminCall(server, "com.atproto.admin.getAccountInfo", { params: { did: "did:plc:nobodyhere2345678901234" } }), 400, "NotFound");
    expectXrpcError(await adminCall(server, "com.atproto.admin.getAccountInfo", { params: {} }), 400, "InvalidRequest");
    const infos = await adminCall<{ infos: Array<{ did: string }> }>(server, "com.atproto.admin.getAccountInfos", { params: { dids: [alice.did, bob.did, "did:plc:nobodyhere2345678901234"] } });
    expect(infos.body.infos.map((one) => one.did).sort()).toEqual([alice.did, bob.did].sort());
  });

  it("updateAccountHandle: under this server's domains, not taken; the DID document follows", async () => {
    expect((await adminCall(server, "com.atproto.admin.updateAccountHandle", { json: { did: bob.did, handle: "robert.test" } })).status).toBe(200);
    expect((await accountRow(bob.did))?.handle).toBe("robert.test");
    const resolved = await fetch(`${process.env.ATRIUM_PLC_DIRECTORY_URL}/${bob.did}`);
    expect(((await resolved.json()) as { alsoKnownAs: string[] }).alsoKnownAs).toEqual(["at://robert.test"]);
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountHandle", { json: { did: bob.did, handle: ALICE.handle } }), 400, "HandleNotAvailable");
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountHandle", { json: { did: bob.did, handle: "bob.example.org" } }), 400, "UnsupportedDomain");
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountHandle", { json: { did: "did:plc:nobodyhere2345678901234", handle: "nobody.test" } }), 400, "NotFound");
  });

  it("updateAccountEmail: by handle or DID, unconfirmed; an address another account has is refused", async () => {
    expect((await adminCall(server, "com.atproto.admin.updateAccountEmail", { json: { account: "robert.test", email: "Robert@Example.com" } })).status).toBe(200);
    expect(await accountRow(bob.did)).toMatchObject({ email: "robert@example.com", emailConfirmedAt: null });
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountEmail", { json: { account: bob.did, email: ALICE.email } }), 400, "InvalidRequest");
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountEmail", { json: { account: bob.did, email: "not an address" } }), 400, "InvalidRequest");
    expect((await accountRow(bob.did))?.email).toBe("robert@example.com");
  });

  it("updateAccountPassword: the new password, and every browser session of the account ended; another account's app is untouched", async () => {
    const browser = await signedIn(server, "robert.test", BOB.password);
    const app = await scopedSession(server, "atproto transition:generic");
    // scopedSession signs Alice in: Bob's own app is the browser above; Alice's app must keep working.
    expect((await adminCall(server, "com.atproto.admin.updateAccountPassword", { json: { did: bob.did, password: "a new password for bob" } })).status).toBe(200);
    const row = await accountRow(bob.did);
    expect(await verifyPassword("a new password for bob", row!.passwordHash)).toBe(true);
    expect(await verifyPassword(BOB.password, row!.passwordHash)).toBe(false);
    const page = await openPage(browser, "/account");
    expect(page.html).toContain('name="password"');
    expect(await rowOf(server.database(), sql`SELECT 1 AS "one" FROM "BrowserSession" WHERE "accountDid" = ${bob.did}`)).toBeUndefined();
    expect((await call(app, "com.atproto.server.getSession")).status).toBe(200);
    expectXrpcError(await adminCall(server, "com.atproto.admin.updateAccountPassword", { json: { did: bob.did, password: "short" } }), 400, "InvalidRequest");
  });

  it("updateAccountPassword ends the account's OAuth grants too", async () => {
    const app = await scopedSession(server, "atproto transition:generic");
    expect((await call(app, "com.atproto.server.getSession")).status).toBe(200);
    expect((await adminCall(server, "com.atproto.admin.updateAccountPassword", { json: { did: alice.did, password: ALICE.password } })).status).toBe(200);
    expect((await call(app, "com.atproto.server.getSession")).status).toBe(401);
    expect((await app.client.refresh(app.tokens.refresh_token)).status).toBe(400);
  });

  it("sendEmail: to the account's address, as plain text, with the subject given", async () => {
    const sent = await adminCall(server, "com.atproto.admin.sendEmail", {
      json: { recipientDid: alice.did, senderDid: bob.did, subject: "About your account", content: "Hello from the operator.", comment: "ticket 7" },
    });
    expect(sent.body).toEqual({ sent: true });
    const mail = await smtp.next();
    expect(mail.subject).toBe("About your account");
    expect(mail.text?.trim()).toBe("Hello from the operator.");
    expect((Array.isArray(mail.to) ? mail.to[0] : mail.to)?.text).toBe(ALICE.email);
    expectXrpcError(await adminCall(server, "com.atproto.admin.sendEmail", { json: { recipientDid: alice.did, senderDid: bob.did, subject: "Two\r\nBcc: x@example.com", content: "x" } }), 400, "InvalidRequest");
    expectXrpcError(await adminCall(server, "com.atproto.admin.sendEmail", { json: { recipientDid: "did:plc:nobodyhere2345678901234", senderDid: bob.did, content: "x" } }), 400, "InvalidRequest");
  });

  it("deleteAccount: the account and its rows are gone, and a second time is NotFound", async () => {
    const carol = await createAccount(server, CAROL);
    expect((await adminCall(server, "com.atproto.admin.deleteAccount", { json: { did: carol.did } })).status).toBe(200);
    expect(await accountRow(carol.did)).toBeUndefined();
    expectXrpcError(await adminCall(server, "com.atproto.admin.deleteAccount", { json: { did: carol.did } }), 400, "NotFound");
  });
});

describe.runIf(testEngine() === "sqlite")("a server without ATRIUM_ADMIN_PASSWORD", () => {
  let plain: TestServer;
  beforeAll(async () => {
    plain = await startTestServer();
  });
  afterAll(() => plain?.stop());

  it("refuses every admin call, whatever the password, and says why; the operator page is off", async () => {
    for (const authorization of [basicAuthorization(""), basicAuthorization(ADMIN_PASSWORD), null]) {
      const refused = expectXrpcError(await adminCall(plain, "com.atproto.admin.getAccountInfo", { params: { did: "did:plc:nobodyhere2345678901234" }, authorization }), 401, "AuthenticationRequired");
      if (authorization !== null) expect(refused.message).toContain("ATRIUM_ADMIN_PASSWORD");
    }
    const page = await fetch(`${plain.issuer}/admin`);
    expect(page.status).toBe(403);
    expect(await page.text()).toContain("ATRIUM_ADMIN_PASSWORD");
  });
});
