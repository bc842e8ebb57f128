/**
 * Sign-up over XRPC (docs/decisions/0052), as the reference PDS answers it: describeServer telling the truth of the
 * settings, com.atproto.server.createAccount with the reference's checks and error names (and nothing left behind by
 * a refusal: no account, no spent invite use), answered with a password session; the invite-code methods behind HTTP
 * Basic admin:<ATRIUM_ADMIN_PASSWORD>; and the email confirmation (requestEmailConfirmation, confirmEmail) for password
 * sessions and OAuth tokens with account:email?action=manage, which getSession's emailConfirmed then reports.
 * Engine-independent (SQLITE_ONLY): the race of one code's last use runs on both engines in sign-up-race.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { rowOf } from "../helpers/databases.ts";
import { createAlice, newClient, parForm } from "../helpers/flow.ts";
import { ADMIN_PASSWORD, adminAuthorization, adminInviteCode } from "../helpers/invites.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectInsufficientScope, expectXrpcError, tokenWithScope } from "../helpers/xrpc.ts";
import type { HttpResult } from "../helpers/flow.ts";

const admin = adminAuthorization;

let server: TestServer;
let closed: TestServer;
let smtp: TestSmtp;

beforeAll(async () => {
  smtp = await startSmtpServer();
  [server, closed] = await Promise.all([
    startTestServer({
      ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ATRIUM_SMTP_URL: smtp.url,
      ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>",
      ATRIUM_CONTACT_EMAIL: "operator@example.com",
      ATRIUM_TERMS_URL: "https://example.com/terms",
      ATRIUM_PRIVACY_URL: "https://example.com/privacy",
      ATRIUM_USER_DOMAINS: ".test,.example.test",
    }),
    // Sign-up off, invites not required, no admin password.
    startTestServer({ ATRIUM_SIGNUP: "off", ATRIUM_INVITE_REQUIRED: "false" }),
  ]);
  await createAlice(server);
}, 120_000);
afterAll(async () => {
  await Promise.all([server?.stop(), closed?.stop()]);
  await smtp?.stop();
});

function post<T = Record<string, unknown>>(target: TestServer, nsid: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpResult<T>> {
  return callAnonymous<T>(target, nsid, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });
}

type Session = { accessJwt: string; refreshJwt: string; did: string; handle: string; didDoc?: { service?: unknown[] } };

/** The next message to `address` (the sign-ups of other tests mail their own codes meanwhile). */
async function mailTo(address: string) {
  for (;;) {
    const mail = await smtp.next();
    if (mail.to && !Array.isArray(mail.to) && mail.to.text === address) return mail;
  }
}

async function accountCount(): Promise<number> {
  return Number((await rowOf<{ count: number }>(server.database(), sql`SELECT COUNT(*) AS "count" FROM "Account"`))!.count);
}

async function usedCount(code: string): Promise<number> {
  return Number((await rowOf<{ usedCount: number }>(server.database(), sql`SELECT "usedCount" FROM "InviteCode" WHERE "code" = ${code}`))!.usedCount);
}

describe("describeServer", () => {
  it("says what the settings say: invite codes required, the user domains, the operator's links and contact", async () => {
    const described = await callAnonymous(server, "com.atproto.server.describeServer");
    expect(described.body).toEqual({
      did: expect.stringMatching(/^did:web:/),
      availableUserDomains: [".test", ".example.test"],
      inviteCodeRequired: true,
      phoneVerificationRequired: false,
      links: { termsOfService: "https://example.com/terms", privacyPolicy: "https://example.com/privacy" },
      contact: { email: "operator@example.com" },
    });
    expect((await callAnonymous(closed, "com.atproto.server.describeServer")).body).toMatchObject({ inviteCodeRequired: false, links: {}, contact: {} });
  });

  it("prompt=create is advertised while sign-up is open, and PAR refuses it when it is off", async () => {
    const metadata = async (target: TestServer) => (await (await fetch(`${target.issuer}/.well-known/oauth-authorization-server`)).json()) as { prompt_values_supported: string[] };
    expect((await metadata(server)).prompt_values_supported).toContain("create");
    expect((await metadata(closed)).prompt_values_supported).not.toContain("create");
  });
});

describe("createAccount", () => {
  it("makes the account under a new did:plc with an invite code, answers a password session, and spends the code's use", async () => {
    const code = await adminInviteCode(server);
    const created = await post<Session>(server, "com.atproto.server.createAccount", { handle: "newcomer.test", email: "Newcomer@Example.com", password: "a new long password", inviteCode: code });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ handle: "newcomer.test", did: expect.stringMatching(/^did:plc:/), accessJwt: expect.any(String), refreshJwt: expect.any(String) });
    const session = await callAnonymous(server, "com.atproto.server.getSession", { headers: { authorization: `Bearer ${created.body.accessJwt}` } });
    expect(session.body).toMatchObject({ did: created.body.did, handle: "newcomer.test", email: "newcomer@example.com", emailConfirmed: false });
    expect(await usedCount(code)).toBe(1);
    // The DID resolves at the directory with the handle, and the answer carries that document (the reference's didDoc).
    const document = (await (await fetch(`${process.env.ATRIUM_PLC_DIRECTORY_URL}/${created.body.did}`)).json()) as { alsoKnownAs: string[] };
    expect(document.alsoKnownAs).toEqual(["at://newcomer.test"]);
    expect(created.body.didDoc).toEqual(document);
    expect(created.body.didDoc?.service).toEqual([{ id: "#atproto_pds", type: "AtprotoPersonalDataServer", serviceEndpoint: server.issuer }]);
    // A code was mailed to confirm the address.
    expect(typedCodeIn(await mailTo("newcomer@example.com"))).toMatch(/-/);
  });

  it("refuses with the reference's error names, and a refusal leaves no account and no spent use behind", async () => {
    const code = await adminInviteCode(server);
    const accounts = await accountCount();
    const attempt = (fields: Record<string, unknown>) => post(server, "com.atproto.server.createAccount", { handle: "fresh.test", email: "fresh@example.com", password: "a new long password", inviteCode: code, ...fields });
    expectXrpcError(await attempt({ inviteCode: undefined }), 400, "InvalidInviteCode");
    expectXrpcError(await attempt({ inviteCode: "localhost-aaaaa-aaaaa" }), 400, "InvalidInviteCode");
    expectXrpcError(await attempt({ handle: "bad_handle!.test" }), 400, "InvalidHandle");
    expectXrpcError(await attempt({ handle: "fresh.example.com" }), 400, "UnsupportedDomain");
    expectXrpcError(await attempt({ handle: "alice.test" }), 400, "HandleNotAvailable");
    expectXrpcError(await attempt({ handle: "ALICE.test" }), 400, "HandleNotAvailable");
    expect((expectXrpcError(await attempt({ email: "ALICE@example.com" }), 400, "InvalidRequest")).message).toContain("Email already taken");
    expectXrpcError(await attempt({ email: "not an address" }), 400, "InvalidRequest");
    expectXrpcError(await attempt({ email: undefined }), 400, "InvalidRequest");
    expectXrpcError(await attempt({ password: "short" }), 400, "InvalidPassword");
    expectXrpcError(await attempt({ password: "x".repeat(257) }), 400, "InvalidRequest");
    expectXrpcError(await attempt({ recoveryKey: "did:key:not-a-key" }), 400, "InvalidRequest");
    // A DID of one's own needs the old PDS's service token (tests/integration/moving-in.test.ts moves one here).
    expect(expectXrpcError(await attempt({ did: "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa" }), 401, "AuthenticationRequired").message).toBe("Missing auth to create account with did: did:plc:aaaaaaaaaaaaaaaaaaaaaaaa");
    expectXrpcError(await attempt({ handle: 42 }), 400, "InvalidRequest");
    expect(await accountCount()).toBe(accounts);
    expect(await usedCount(code)).toBe(0);
    // The code still admits its one account.
    expect((await attempt({})).status).toBe(200);
    expectXrpcError(await attempt({ handle: "fresh2.test", email: "fresh2@example.com" }), 400, "InvalidInviteCode");
  });

  it("sign-up turned off: createAccount, the sign-up page and prompt=create are refused, and the sign-in page offers none", async () => {
    expectXrpcError(await post(closed, "com.atproto.server.createAccount", { handle: "nobody.test", email: "nobody@example.com", password: "a new long password" }), 403, "Forbidden");
    const page = await fetch(`${closed.issuer}/account/sign-up`);
    expect(page.status).toBe(403);
    expect(await page.text()).not.toContain('name="intent"');
    expect(await (await fetch(`${closed.issuer}/account`)).text()).not.toContain('href="/account/sign-up"');
    expect(await (await fetch(`${server.issuer}/account`)).text()).toContain('href="/account/sign-up"');
    const client = await newClient(closed);
    const par = await client.pushAuthorizationRequest(parForm({ prompt: "create" }));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_request" });
  });
});

describe("invite codes", () => {
  it("every admin method refuses a missing or wrong password, and a server without one refuses them all", async () => {
    for (const authorization of [undefined, admin("a wrong password of length"), `Basic ${Buffer.from(`root:${ADMIN_PASSWORD}`).toString("base64")}`, `Bearer ${ADMIN_PASSWORD}`]) {
      const refused = await post(server, "com.atproto.server.createInviteCode", { useCount: 1 }, authorization ? { authorization } : {});
      expectXrpcError(refused, 401, "AuthenticationRequired");
      expect(refused.headers.get("www-authenticate")).toMatch(/^Basic realm="admin"/);
    }
    expectXrpcError(await callAnonymous(server, "com.atproto.admin.getInviteCodes", { headers: { authorization: admin("wrong wrong wrong wrong") } }), 401, "AuthenticationRequired");
    expectXrpcError(await post(closed, "com.atproto.server.createInviteCode", { useCount: 1 }, { authorization: admin() }), 401, "AuthenticationRequired");
  });

  it("codes in the reference's format; getInviteCodes pages them; disabled codes and accounts' invites refuse sign-ups", async () => {
    const made = await post<{ codes: { account: string; codes: string[] }[] }>(server, "com.atproto.server.createInviteCodes", { codeCount: 3, useCount: 2 }, { authorization: admin() });
    expect(made.status).toBe(200);
    const codes = made.body.codes[0]!.codes;
    expect(made.body.codes[0]!.account).toBe("admin");
    for (const code of codes) expect(code).toMatch(/^localhost-[a-z2-7]{5}-[a-z2-7]{5}$/);

    const pages: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await callAnonymous<{ codes: { code: string; available: number }[]; cursor?: string }>(server, "com.atproto.admin.getInviteCodes", {
        params: { limit: "2", ...(cursor ? { cursor } : {}) },
        headers: { authorization: admin() },
      });
      expect(page.status).toBe(200);
      pages.push(...page.body.codes.map((code) => code.code));
      cursor = page.body.cursor;
    } while (cursor);
    expect(new Set(pages).size).toBe(pages.length);
    for (const code of codes) expect(pages).toContain(code);
    expectXrpcError(await callAnonymous(server, "com.atproto.admin.getInviteCodes", { params: { cursor: "nonsense" }, headers: { authorization: admin() } }), 400, "InvalidRequest");

    expect((await post(server, "com.atproto.admin.disableInviteCodes", { codes: [codes[0]] }, { authorization: admin() })).status).toBe(200);
    const refused = await post(server, "com.atproto.server.createAccount", { handle: "disabled.test", email: "disabled@example.com", password: "a new long password", inviteCode: codes[0] });
    expectXrpcError(refused, 400, "InvalidInviteCode");
    expectXrpcError(await post(server, "com.atproto.admin.disableInviteCodes", { accounts: ["admin"] }, { authorization: admin() }), 400, "InvalidRequest");
  });

  it("an account's codes for its password session (never an OAuth token); disableAccountInvites disables them", async () => {
    const created = await post<Session>(server, "com.atproto.server.createAccount", { handle: "inviter.test", email: "inviter@example.com", password: "a new long password", inviteCode: await adminInviteCode(server) });
    const gift = await adminInviteCode(server, 1, created.body.did);
    const mine = () => callAnonymous<{ codes: { code: string; forAccount: string; disabled: boolean }[] }>(server, "com.atproto.server.getAccountInviteCodes", { headers: { authorization: `Bearer ${created.body.accessJwt}` } });
    expect((await mine()).body.codes).toEqual([expect.objectContaining({ code: gift, forAccount: created.body.did, disabled: false })]);

    expect((await post(server, "com.atproto.admin.disableAccountInvites", { account: created.body.did }, { authorization: admin() })).status).toBe(200);
    expect((await post(server, "com.atproto.admin.disableInviteCodes", { accounts: [created.body.did] }, { authorization: admin() })).status).toBe(200);
    expect((await mine()).body.codes).toEqual([]);
    expectXrpcError(await post(server, "com.atproto.admin.enableAccountInvites", { account: "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa" }, { authorization: admin() }), 400, "NotFound");
    expect((await post(server, "com.atproto.admin.enableAccountInvites", { account: created.body.did }, { authorization: admin() })).status).toBe(200);

    const oauth = await tokenWithScope(server, "atproto transition:generic");
    expect((await call(oauth, "com.atproto.server.getAccountInviteCodes")).status).toBe(403);
  });
});

describe("email confirmation", () => {
  it("a password session asks for a code and confirms with it; getSession then says emailConfirmed", async () => {
    const created = await post<Session>(server, "com.atproto.server.createAccount", { handle: "confirmer.test", email: "confirmer@example.com", password: "a new long password", inviteCode: await adminInviteCode(server) });
    const first = typedCodeIn(await mailTo("confirmer@example.com")); // the code mailed at sign-up
    const bearer = { authorization: `Bearer ${created.body.accessJwt}` };
    expect((await callAnonymous(server, "com.atproto.server.requestEmailConfirmation", { method: "POST", headers: bearer })).status).toBe(200);
    const code = typedCodeIn(await mailTo("confirmer@example.com"));
    expect(code).not.toBe(first);
    expectXrpcError(await post(server, "com.atproto.server.confirmEmail", { email: "someone.else@example.com", token: code }, bearer), 400, "InvalidEmail");
    expectXrpcError(await post(server, "com.atproto.server.confirmEmail", { email: "confirmer@example.com", token: "AAAAA-AAAAA" }, bearer), 400, "InvalidToken");
    expect((await callAnonymous(server, "com.atproto.server.getSession", { headers: bearer })).body).toMatchObject({ emailConfirmed: false });
    expect((await post(server, "com.atproto.server.confirmEmail", { email: "CONFIRMER@example.com", token: code }, bearer)).status).toBe(200);
    expect((await callAnonymous(server, "com.atproto.server.getSession", { headers: bearer })).body).toMatchObject({ emailConfirmed: true });
    // A code is spent once.
    expectXrpcError(await post(server, "com.atproto.server.confirmEmail", { email: "confirmer@example.com", token: code }, bearer), 400, "InvalidToken");
  });

  it("an OAuth token needs account:email?action=manage, as the reference asks", async () => {
    const without = await tokenWithScope(server, "atproto transition:generic");
    expectInsufficientScope(await call(without, "com.atproto.server.requestEmailConfirmation", { json: {} }), "account:email?action=manage");
    const manage = await tokenWithScope(server, "atproto account:email?action=manage");
    expect((await call(manage, "com.atproto.server.requestEmailConfirmation", { json: {} })).status).toBe(200);
    const code = typedCodeIn(await mailTo("alice@example.com"));
    expect((await call(manage, "com.atproto.server.confirmEmail", { json: { email: "alice@example.com", token: code } })).status).toBe(200);
    const session = await call<{ emailConfirmed?: boolean }>(await tokenWithScope(server, "atproto account:email"), "com.atproto.server.getSession");
    expect(session.body.emailConfirmed).toBe(true);
  });
});

// `createAccount` (the CLI's) stays the operator's way in while sign-up is off.
it("the operator's account tool still creates accounts with sign-up off", async () => {
  expect((await createAccount(closed, { handle: "operator-made.test", email: "made@example.com", password: "a new long password" })).did).toMatch(/^did:plc:/);
});
