import type { ParsedMail } from "mailparser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { newBrowser, openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { execute } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope } from "../helpers/xrpc.ts";

/**
 * Changing the account's email address (docs/decisions/0030, issue 19 item 9), over HTTP against a started server
 * and a real SMTP server: a code to the new address, a notice to the old one, sign-in by the new address only,
 * getSession's email; a taken address, the same address, and a browser whose proof is old are refused; two
 * accounts confirming one address at once: one gets it.
 */

const PASSWORD = "another horse battery";
let smtp: TestSmtp;
let server: TestServer;
let alice: { did: string };
let counter = 0;
const newAddress = () => `198.51.100.${++counter}`;

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  alice = await createAlice(server);
  for (const name of ["bob", "carol", "dave"]) await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD });
});
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

const recipient = (mail: ParsedMail) => (mail.to && "text" in mail.to ? mail.to.text : "");

async function askCode(browser: Browser & { csrfToken: string }, email: string) {
  return postForm(browser, "/account/email", { csrf_token: browser.csrfToken, intent: "request", email });
}

async function typeCode(browser: Browser & { csrfToken: string }, code: string) {
  return postForm(browser, "/account/email", { csrf_token: browser.csrfToken, intent: "change", code });
}

describe("changing the email address", () => {
  it("a code to the new address changes it; the old address is told; sign-in and getSession follow", async () => {
    const token = await tokenWithScope(server, "atproto account:email");
    const browser = await signedIn(server, ALICE.handle, ALICE.password, newAddress());
    expect(pageText((await openPage(browser, "/account/email")).html)).toMatch(/Your account's email address is alice@example\.com ?\./);

    const asked = await askCode(browser, "  Alice.New@Example.COM ");
    expect(asked.status).toBe(303);
    expect(asked.location).toBe("/account/email?notice=email-code-sent");
    const mail = await smtp.next();
    expect(recipient(mail)).toBe("alice.new@example.com");
    expect(mail.subject).toBe("Confirm your new email address for Atrium Test");
    expect(mail.text).toContain("@alice.test");
    const code = typedCodeIn(mail);
    const pending = pageText((await openPage(browser, asked.location!)).html);
    // The code form names the address the code went to (issue 28, item 21).
    expect(pending).toMatch(/Enter the code we sent to alice\.new@example\.com ?\./);

    const wrong = await typeCode(browser, "ZZZZZ-ZZZZZ");
    expect(wrong.status).toBe(400);
    expect(pageText(wrong.html)).toContain("This code does not work");
    // Posted from the page the redirect named with its notice: the notice spoke of the step before, and goes.
    expect(pageText(await postForm(browser, asked.location!, { csrf_token: browser.csrfToken, intent: "change", code: "ZZZZZ-ZZZZZ" }).then((page) => page.html))).not.toContain(
      "A code is on its way",
    );
    expect(pending).toContain("A code is on its way");
    expect(wrong.html).toMatch(/id="code"[^>]*aria-describedby="code-error/);

    const changed = await typeCode(browser, code);
    expect(changed.status).toBe(303);
    expect(changed.location).toBe("/account/email?notice=email-changed");
    const notice = await smtp.next();
    expect(recipient(notice)).toBe("alice@example.com");
    expect(notice.text).toContain("alice.new@example.com");

    const byOld = await newBrowser(server, newAddress());
    expect((await postForm(byOld, "/account", { csrf_token: byOld.csrfToken, identifier: "alice@example.com", password: ALICE.password })).status).toBe(400);
    const byNew = await newBrowser(server, newAddress());
    expect((await postForm(byNew, "/account", { csrf_token: byNew.csrfToken, identifier: "ALICE.NEW@example.com", password: ALICE.password })).status).toBe(303);
    const session = await call<{ email?: string; emailConfirmed?: boolean }>(token, "com.atproto.server.getSession");
    expect(session.body).toMatchObject({ did: alice.did, email: "alice.new@example.com", emailConfirmed: true });

    // The code worked once.
    expect((await typeCode(browser, code)).status).toBe(400);
  });

  it("refuses another account's address (in any case) and the account's own, sending nothing", async () => {
    const browser = await signedIn(server, "bob.test", PASSWORD, newAddress());
    const taken = await askCode(browser, "CAROL@example.com");
    expect(taken.status).toBe(400);
    expect(pageText(taken.html)).toContain("Another account uses this email address.");
    expect(taken.html).toMatch(/id="email"[^>]*aria-describedby="email-error/);
    const same = await askCode(browser, "bob@example.com");
    expect(pageText(same.html)).toContain("This is already your account's email address.");
    const malformed = await askCode(browser, "not an address");
    expect(pageText(malformed.html)).toContain("Enter an email address such as alice@example.com.");
    expect(smtp.messages.filter((mail) => recipient(mail) === "carol@example.com")).toEqual([]);
  });

  it("needs a recent proof of the password: an older session is asked to confirm it's you first", async () => {
    const browser = await signedIn(server, "carol.test", PASSWORD, newAddress());
    await execute(server.database(), sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${at(Date.now() - 60 * 60_000)} WHERE "accountDid" = (SELECT "did" FROM "Account" WHERE "handle" = 'carol.test')`);
    expect(pageText((await openPage(browser, "/account/email")).html)).toContain("Confirm it's you");
    const refused = await askCode(browser, "carol.elsewhere@example.com");
    expect(refused.status).toBe(403);
    const confirmed = await postForm(browser, "/account/email", { csrf_token: browser.csrfToken, intent: "confirm", password: PASSWORD });
    expect(confirmed.location).toBe("/account/email?notice=email-confirmed");
    expect((await askCode(browser, "carol.elsewhere@example.com")).status).toBe(303);
    expect(recipient(await smtp.next())).toBe("carol.elsewhere@example.com");
  });

  it("two accounts confirming one address at once: one gets it, the other is told it is taken", async () => {
    const browsers = [await signedIn(server, "bob.test", PASSWORD, newAddress()), await signedIn(server, "dave.test", PASSWORD, newAddress())];
    const codes: string[] = [];
    for (const browser of browsers) {
      expect((await askCode(browser, "shared@example.com")).status).toBe(303);
      codes.push(typedCodeIn(await smtp.next()));
    }
    const answers = await Promise.all(browsers.map((browser, i) => typeCode(browser, codes[i]!)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 400]);
    expect(pageText(answers.find((answer) => answer.status === 400)!.html)).toContain("Another account uses this email address.");
  });
});
