import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageText, postForm, signedIn } from "../helpers/account.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Security review (review branch): the email-change code request (POST /account/email intent=request) has no counter
 * at all, unlike password recovery's and the deletion code's requests (3, then a 429). Anyone who can make an account
 * and sign in (which counts as the recent authentication) can (a) have this server mail a code, signed with its name
 * and the attacker's handle, to any number of arbitrary addresses, and (b) learn, one request per address and without
 * a limit, which addresses hold an account here ("That email address is already in use" versus a code sent).
 */

const PASSWORD = "mallory battery horse";
let smtp: TestSmtp;
let server: TestServer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  await createAccount(server, { handle: "victim.test", email: "victim@example.com", password: "victim battery horse" });
  await createAccount(server, { handle: "mallory.test", email: "mallory@example.com", password: PASSWORD });
});
afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
});

describe("attacks on the email change", () => {
  it("requests for an email-change code are counted: a dozen in a row do not all send mail", async () => {
    const mallory = await signedIn(server, "mallory.test", PASSWORD, "198.51.100.7");
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await postForm(mallory, "/account/email", { csrf_token: mallory.csrfToken, intent: "request", email: `target${i}@example.net` });
      statuses.push(answer.status);
    }
    const sent = [];
    for (let i = 0; i < statuses.filter((status) => status === 303).length; i++) sent.push(await smtp.next());
    console.log("email-change code requests:", JSON.stringify(statuses), "mails sent:", sent.length, "first subject:", sent[0]?.subject);
    expect(statuses.filter((status) => status === 303).length).toBeLessThanOrEqual(3);
  });

  it("the answers do not tell, without a limit, which addresses have an account here", async () => {
    const mallory = await signedIn(server, "mallory.test", PASSWORD, "198.51.100.8");
    const probes = ["victim@example.com", "VICTIM@Example.COM", "nobody-here@example.com"];
    const answers = [];
    for (const email of probes) {
      const answer = await postForm(mallory, "/account/email", { csrf_token: mallory.csrfToken, intent: "request", email });
      answers.push({ email, status: answer.status, says: /Another account uses this email address/.test(pageText(answer.html)) ? "taken" : answer.status === 303 ? "code sent" : "other" });
    }
    console.log("probes:", JSON.stringify(answers));
    // Enumeration: the answer for a registered address differs from the answer for a free one, with no counter.
    expect(new Set(answers.map((answer) => answer.says)).size).toBe(1);
  });
});
