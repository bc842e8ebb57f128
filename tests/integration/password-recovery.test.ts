import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { newBrowser, openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { resetLinkIn, startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * "Forgot password?" by email (docs/decisions/0020), end to end through a real SMTP server: the same answer for
 * known and unknown identifiers, a hashed single-use link, the reset ending every session (and, when asked,
 * removing passkeys), the throttle, and the page without SMTP.
 */

const PASSWORD = "the old password";
const NEW_PASSWORD = "a brand new password";

let smtp: TestSmtp;
let server: TestServer;
let counter = 0;
const newAddress = () => `198.51.100.${++counter % 250}`;
const dids: Record<string, string> = {};

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({
    ATRIUM_TRUST_PROXY: "1",
    ATRIUM_SMTP_URL: smtp.url,
    ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>",
    ATRIUM_SERVICE_NAME: "Atrium Test",
  });
  for (const name of ["alice", "bob", "carol"]) dids[name] = (await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD })).did;
});
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

async function ask(identifier: string, address = newAddress()) {
  const browser = await newBrowser(server, address);
  const page = await openPage(browser, "/account/recover");
  return postForm(browser, "/account/recover", { csrf_token: page.csrfToken!, identifier });
}

/** Opens the link and posts its form (to the link's own address, as the browser does); a page without a form lends its CSRF token from /account/recover. */
async function reset(browser: Browser, link: string, fields: Record<string, string>) {
  const path = new URL(link).pathname + new URL(link).search;
  const page = await openPage(browser, path);
  const csrfToken = page.csrfToken ?? (await openPage(browser, "/account/recover")).csrfToken!;
  return { page, answer: await postForm(browser, path, { csrf_token: csrfToken, code: new URL(link).searchParams.get("code")!, ...fields }) };
}

describe("password recovery by email", () => {
  it("sends a single-use link; the reset ends every session and removes the passkeys when asked", async () => {
    const home = await signedIn(server, "alice.test", PASSWORD, newAddress());
    await signedIn(server, "alice.test", PASSWORD, newAddress());
    await execute(server.database(), sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "deviceType", "backedUp", "createdAt")
      VALUES ('cred-alice', ${dids.alice!}, 'Phone', ${new Uint8Array([1, 2, 3])}, 0, 'multiDevice', ${true}, ${at(Date.now())})`);

    const asked = await ask("ALICE@example.com");
    expect(asked.status).toBe(303);
    expect(asked.location).toBe("/account/recover?sent=1");
    const mail = await smtp.next();
    expect(mail.to && "text" in mail.to ? mail.to.text : "").toBe("alice@example.com");
    expect(mail.from?.text).toContain("no-reply@atrium.test");
    expect(mail.subject).toBe("Reset your password for Atrium Test");
    expect(mail.text).toContain("@alice.test");
    expect(mail.text).toContain("15 minutes");
    const link = resetLinkIn(mail);
    const code = new URL(link).searchParams.get("code")!;
    expect(new URL(link).origin).toBe(server.issuer);

    // Only the code's hash is stored.
    const stored = await rowsOf<{ codeHash: string }>(server.database(), sql`SELECT "codeHash" FROM "RecoveryCode" WHERE "accountDid" = ${dids.alice!}`);
    expect(stored.map((row) => row.codeHash)).toEqual([sha256Base64url(code)]);

    // Opening the link (twice: mail scanners open links) spends nothing; mismatched passwords are refused.
    const browser = await newBrowser(server, newAddress());
    expect(pageText((await openPage(browser, new URL(link).pathname + new URL(link).search)).html)).toContain("Choose a new password");
    const mismatch = await reset(browser, link, { new_password: NEW_PASSWORD, confirm_password: "something else" });
    expect(mismatch.answer.status).toBe(400);
    expect(pageText(mismatch.answer.html)).toContain("This does not match the new password.");

    const done = await reset(browser, link, { new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD, remove_passkeys: "on" });
    expect(done.answer.status).toBe(303);
    expect(done.answer.location).toBe("/account?notice=password-reset");
    expect(await rowsOf(server.database(), sql`SELECT "idHash" FROM "BrowserSession" WHERE "accountDid" = ${dids.alice!}`)).toEqual([]);
    expect(await rowsOf(server.database(), sql`SELECT "credentialId" FROM "Passkey" WHERE "accountDid" = ${dids.alice!}`)).toEqual([]);
    // The signed-in browser is signed out; the old password no longer works, the new one does.
    expect((await openPage(home, "/account")).html).toMatch(/name="password"/);
    const old = await newBrowser(server, newAddress());
    expect((await postForm(old, "/account", { csrf_token: old.csrfToken, identifier: "alice.test", password: PASSWORD })).status).toBe(400);
    expect((await postForm(old, "/account", { csrf_token: old.csrfToken, identifier: "alice.test", password: NEW_PASSWORD })).status).toBe(303);

    // The link works once.
    const again = await reset(await newBrowser(server, newAddress()), link, { new_password: "yet another password", confirm_password: "yet another password" });
    expect(pageText(again.page.html)).toContain("This link does not work any more");
    expect(again.answer.status).toBe(400);
    expect(pageText(again.answer.html)).toContain("This link has expired or was already used.");
  });

  it("answers an unknown handle or email exactly like a known one, and sends nothing for it", async () => {
    const unknown = await ask("nobody@example.com");
    const known = await ask("bob.test");
    expect(unknown.status).toBe(known.status);
    expect(unknown.location).toBe(known.location);
    expect(pageText((await openPage(await newBrowser(server, newAddress()), unknown.location!)).html)).toContain("If an account matches");
    // The next message is Bob's: nothing went out for the unknown address.
    const mail = await smtp.next();
    expect(mail.to && "text" in mail.to ? mail.to.text : "").toBe("bob@example.com");
  });

  it("writes the email in the language of the page that asked for it", async () => {
    await createAccount(server, { handle: "emile.test", email: "emile@example.com", password: PASSWORD });
    const browser = await newBrowser(server, newAddress());
    const page = await openPage(browser, "/account/recover?lng=fr");
    expect(page.html).toContain('lang="fr"');
    const asked = await postForm(browser, "/account/recover?lng=fr", { csrf_token: page.csrfToken!, identifier: "emile.test" });
    expect(asked.status).toBe(303);
    const mail = await smtp.next();
    expect(mail.subject).toBe("Réinitialisation de votre mot de passe sur Atrium Test");
    expect(mail.text).toContain("@emile.test");
    expect(mail.text).toContain("15 minutes");
    expect(mail.text).not.toContain("Someone asked");
    expect(resetLinkIn(mail)).toMatch(/\/account\/reset\?code=rec-/);
  });

  it("an expired link does not work", async () => {
    await ask("carol.test");
    const link = resetLinkIn(await smtp.next());
    await execute(server.database(), sql`UPDATE "RecoveryCode" SET "expiresAt" = ${at(Date.now() - 1000)} WHERE "accountDid" = ${dids.carol!}`);
    const answer = await reset(await newBrowser(server, newAddress()), link, { new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD });
    expect(pageText(answer.page.html)).toContain("This link does not work any more");
    expect(answer.answer.status).toBe(400);
    expect((await rowOf<{ usedAt: number | null }>(server.database(), sql`SELECT "usedAt" FROM "RecoveryCode" WHERE "accountDid" = ${dids.carol!}`))!.usedAt).toBeNull();
  });

  it("sign-ins with the old password running while the reset lands: none of them keeps a session", async () => {
    const { did } = await createAccount(server, { handle: "frank.test", email: "frank@example.com", password: PASSWORD });
    await ask("frank.test");
    const link = resetLinkIn(await smtp.next());
    // Whoever knows the old password signs in again and again from four browsers (each success forgives its attempt),
    // each until it has finished a sign-in that began after the reset was answered: by then every sign-in that was
    // being checked when the reset landed has finished too (a browser's sign-ins follow one another). Events, not
    // windows of real time (docs/decisions/0036).
    let resetAnswered = false;
    const thieves = await Promise.all([0, 1, 2, 3].map(() => newBrowser(server, newAddress())));
    const signedInOnce: (() => void)[] = [];
    const firstSignIns = thieves.map((_, i) => new Promise<void>((resolve) => (signedInOnce[i] = resolve)));
    const signIns = thieves.map(async (thief, i) => {
      for (;;) {
        const afterReset = resetAnswered;
        await postForm(thief, "/account", { csrf_token: thief.csrfToken, identifier: "frank.test", password: PASSWORD, stay_signed_in: "on" });
        signedInOnce[i]!();
        if (afterReset) return;
      }
    });
    // The reset lands while all four are signing in.
    await Promise.all(firstSignIns);
    const done = await reset(await newBrowser(server, newAddress()), link, { new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD });
    expect(done.answer.status).toBe(303);
    resetAnswered = true;
    await Promise.all(signIns);
    expect(await rowsOf(server.database(), sql`SELECT "idHash" FROM "BrowserSession" WHERE "accountDid" = ${did}`)).toEqual([]);
    for (const thief of thieves) expect(pageText((await openPage(thief, "/account")).html)).not.toContain("@frank.test");
  });

  it("two resets with one link at once: exactly one sets its password", async () => {
    const { did } = await createAccount(server, { handle: "dora.test", email: "dora@example.com", password: PASSWORD });
    await ask("dora.test");
    const link = resetLinkIn(await smtp.next());
    const browsers = await Promise.all([newBrowser(server, newAddress()), newBrowser(server, newAddress())]);
    const pages = await Promise.all(browsers.map((browser) => openPage(browser, new URL(link).pathname + new URL(link).search)));
    const answers = await Promise.all(
      browsers.map((browser, i) =>
        postForm(browser, "/account/reset", { csrf_token: pages[i]!.csrfToken!, code: new URL(link).searchParams.get("code")!, new_password: `password number ${i}`, confirm_password: `password number ${i}` }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort(), answers.map((answer) => pageText(answer.html).slice(0, 300)).join(" / ")).toEqual([303, 400]);
    const winner = answers.findIndex((answer) => answer.status === 303);
    const check = await newBrowser(server, newAddress());
    expect((await postForm(check, "/account", { csrf_token: check.csrfToken, identifier: "dora.test", password: `password number ${winner}` })).status).toBe(303);
    expect(did).toBeTruthy();
  });

  it("caps an account's emails quietly: every request, under every alias, gets the same answer; an unknown identifier alike", async () => {
    const { did } = await createAccount(server, { handle: "erin.test", email: "erin@example.com", password: PASSWORD });
    await createAccount(server, { handle: "faye.test", email: "faye@example.com", password: PASSWORD });
    const before = smtp.messages.length;
    for (const identifier of ["erin.test", "ERIN@example.com", did, "@Erin.Test", "erin@EXAMPLE.com", "ghost.test", "ghost.test", "ghost.test", "ghost.test"]) {
      const answer = await ask(identifier);
      // A refusal here would tell which email belongs to a public handle (three for the handle, then a guessed email).
      expect({ identifier, status: answer.status, location: answer.location }).toEqual({ identifier, status: 303, location: "/account/recover?sent=1" });
    }
    // Three emails reached Erin (the sending follows the answers), and no more.
    for (let i = 0; i < 3; i++) {
      const mail = await smtp.next();
      expect(mail.to && "text" in mail.to ? mail.to.text : "").toBe("erin@example.com");
    }
    // No fourth: the email of a request made after all of Erin's is the next to arrive (each request's email is
    // decided before its answer and sent after it, in the order of the answers), not a fourth to Erin. An event that
    // proves the moment has passed, not a silence of some length (docs/decisions/0036).
    await ask("faye.test");
    const later = await smtp.next();
    expect(later.to && "text" in later.to ? later.to.text : "").toBe("faye@example.com");
    expect(smtp.messages.length - before).toBe(4);
  });

  it("a client address that keeps asking is refused with 429 after twelve requests, whatever it names", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 13; i++) statuses.push((await ask(`nobody-${i}.test`, "203.0.113.77")).status);
    expect(statuses).toEqual([...Array<number>(12).fill(303), 429]);
  });
});

describe("without SMTP", () => {
  let plain: TestServer;
  beforeAll(async () => {
    plain = await startTestServer({ ATRIUM_SUPPORT_URL: "https://help.example.com/atrium" });
  });
  afterAll(() => plain?.stop());

  it("the screen says how to reach the operator", async () => {
    const browser = await newBrowser(plain);
    const page = await openPage(browser, "/account/recover");
    const text = pageText(page.html);
    expect(text).toContain("This server cannot send email");
    expect(page.html).toContain('href="https://help.example.com/atrium"');
    expect(page.html).not.toMatch(/name="identifier"/);
    // The sign-in page links to it.
    expect((await openPage(browser, "/account")).html).toContain('href="/account/recover"');
  });
});
