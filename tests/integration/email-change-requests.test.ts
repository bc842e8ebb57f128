import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postForm, signedIn } from "../helpers/account.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Found in review (docs/decisions/0030): the email-change code request (POST /account/email intent=request) had no
 * counter, unlike password recovery's and the deletion code's requests (3, then a 429). Anyone who could make an
 * account and sign in (which counts as the recent authentication) could (a) have this server mail a code, signed with
 * its name and the attacker's handle, to any number of addresses, and (b) learn, one request per address and without
 * a limit, which addresses hold an account here. Requests now count on the account, the client address and the
 * target address; a signed-in person may still learn that an address is taken, as at account creation, a few times.
 */

const PASSWORD = "mallory battery horse";
let smtp: TestSmtp;
let server: TestServer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  await createAccount(server, { handle: "victim.test", email: "victim@example.com", password: "victim battery horse" });
  await createAccount(server, { handle: "mallory.test", email: "mallory@example.com", password: PASSWORD });
  await createAccount(server, { handle: "eve.test", email: "eve@example.com", password: PASSWORD });
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

    expect(statuses.filter((status) => status === 303).length).toBeLessThanOrEqual(3);
  });

  it("the answers tell which addresses have an account only a few times, then the requests wait", async () => {
    const eve = await signedIn(server, "eve.test", PASSWORD, "198.51.100.8");
    const probes = ["victim@example.com", "VICTIM@Example.COM", "nobody-here@example.com", "mallory@example.com", "someone@example.org", "victim@example.com"];
    const statuses: number[] = [];
    for (const email of probes) {
      const answer = await postForm(eve, "/account/email", { csrf_token: eve.csrfToken, intent: "request", email });
      statuses.push(answer.status);
    }
    expect(statuses.filter((status) => status !== 429).length).toBeLessThanOrEqual(3);
    expect(statuses.slice(3)).toEqual([429, 429, 429]);
  });
});
