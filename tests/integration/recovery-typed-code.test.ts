import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { newBrowser, openPage, pageText, postForm, type Browser } from "../helpers/account.ts";
import { rowOf } from "../helpers/databases.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { resetLinkIn, startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount } from "../helpers/test-server.ts";

/**
 * The recovery code a person types (docs/decisions/0030, issue 19 item 7), end to end: two server processes on one
 * database (PostgreSQL in the postgresql project, one SQLite file in the sqlite project) behind nginx, a real SMTP
 * server. The email carries the link and the code; the code leads to the same new-password page; guesses in
 * parallel, through both processes, with every alias of the account and forged X-Forwarded-For, never pass the
 * code's five; a code of one account never acts on another; the answer never tells whether an account exists.
 */

const PASSWORD = "the old password";
const NEW_PASSWORD = "a brand new password";

let smtp: TestSmtp;
let proxied: ProxiedServers;
const dids: Record<string, string> = {};
let counter = 0;
const server = () => proxied.servers[0]!;

beforeAll(async () => {
  smtp = await startSmtpServer();
  proxied = await startBehindNginx(2, {
    ATRIUM_TRUST_PROXY: "1",
    ATRIUM_SMTP_URL: smtp.url,
    ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>",
    ATRIUM_SERVICE_NAME: "Atrium Test",
    ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "100000",
  });
  for (const name of ["alice", "bob", "carol", "dave", "erin"]) {
    dids[name] = (await createAccount(server(), { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD })).did;
  }
});
afterAll(async () => {
  await proxied?.stop();
  await smtp?.stop();
});

/**
 * A browser talking straight to one process with its own client address (the processes trust one proxy hop, so the
 * X-Forwarded-For of a request from loopback names the client): tests apart from the attack never share a counter.
 */
async function directBrowser(process = 0): Promise<Browser & { csrfToken: string }> {
  const browser = await newBrowser(proxied.servers[process]!, `198.51.100.${++counter}`);
  const via = `http://127.0.0.1:${proxied.servers[process]!.port}`;
  const page = await openPage({ ...browser, via }, "/account/recover");
  return { ...browser, via, csrfToken: page.csrfToken! };
}

async function askFor(browser: Browser & { csrfToken: string }, identifier: string, extra: Record<string, string> = {}) {
  const asked = await postForm(browser, "/account/recover", { csrf_token: browser.csrfToken, identifier, ...extra });
  expect(asked.status).toBe(303);
  return asked;
}

function typeCode(browser: Browser & { csrfToken: string }, identifier: string, code: string) {
  return postForm(browser, "/account/recover?code=1", { csrf_token: browser.csrfToken, intent: "code", identifier, code });
}

const guessesOf = async (did: string) =>
  (await rowOf<{ guesses: number }>(server().database(), sql`SELECT "guesses" FROM "TypedCode" WHERE "accountDid" = ${did} AND "purpose" = 'recovery'`))?.guesses;

describe("the recovery code", () => {
  it("comes with the link; typed on another device, it leads to the new-password page naming the account", async () => {
    const browser = await directBrowser();
    const asked = await askFor(browser, "alice@example.com");
    const mail = await smtp.next();
    const code = typedCodeIn(mail);
    expect(resetLinkIn(mail)).toMatch(/\/account\/reset\?code=rec-/);
    expect(mail.text).toContain("Enter the code from the email");

    // The page that says "Check your email" offers the code, with what this browser typed filled in.
    const sent = await openPage(browser, asked.location!);
    expect(pageText(sent.html)).toContain("Enter the code from the email");
    expect(sent.html).toContain('value="alice@example.com"');

    // Typed as a phone types it: lower case, without the dash.
    const typed = await typeCode(browser, "alice@example.com", code.toLowerCase().replace("-", ""));
    expect(typed.status).toBe(303);
    expect(typed.location).toMatch(/^\/account\/reset\?code=rec-/);
    // The identifier kept for the form is forgotten once the code worked.
    expect(browser.jar.get("atrium_recovery_identifier")).toBeFalsy();
    const resetPage = await openPage(browser, typed.location!);
    expect(pageText(resetPage.html)).toContain("Choose a new password");
    expect(pageText(resetPage.html)).toContain("@alice.test");
    const linkCode = new URL(typed.location!, server().issuer).searchParams.get("code")!;
    const done = await postForm(browser, typed.location!, { csrf_token: resetPage.csrfToken!, code: linkCode, new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD });
    expect(done.status).toBe(303);

    // The code worked once, and the emailed link, replaced by the one the code gave, no longer works.
    expect((await typeCode(await directBrowser(), "alice.test", code)).status).toBe(400);
    expect(pageText((await openPage(await directBrowser(), new URL(resetLinkIn(mail)).pathname + new URL(resetLinkIn(mail)).search)).html)).toContain(
      "This link does not work any more",
    );
    const fresh = await directBrowser();
    expect((await postForm(fresh, "/account", { csrf_token: fresh.csrfToken, identifier: "alice.test", password: NEW_PASSWORD })).status).toBe(303);
  });

  it("keeps the way back to the sign-in request it was asked for from", async () => {
    const browser = await directBrowser(1);
    const returnTo = "/oauth/authorize?client_id=https%3A%2F%2Fapp.example%2Fclient-metadata.json&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Apar-x";
    await askFor(browser, "bob.test", { return: returnTo });
    const code = typedCodeIn(await smtp.next());
    const typed = await typeCode(browser, "bob.test", code);
    expect(typed.status).toBe(303);
    const resetPage = await openPage(browser, typed.location!);
    const linkCode = new URL(typed.location!, server().issuer).searchParams.get("code")!;
    const done = await postForm(browser, typed.location!, { csrf_token: resetPage.csrfToken!, code: linkCode, new_password: NEW_PASSWORD, confirm_password: NEW_PASSWORD });
    expect(done.status).toBe(303);
    // Back to the request, which says the password changed (issue 28, item 21).
    expect(done.location).toBe(`${returnTo}&notice=password-reset`);
  });

  it("a code of one account never resets another", async () => {
    const browser = await directBrowser();
    await askFor(browser, "carol.test");
    const carols = typedCodeIn(await smtp.next());
    await askFor(await directBrowser(), "dave.test");
    const daves = typedCodeIn(await smtp.next());
    const wrong = await typeCode(await directBrowser(), "dave.test", carols);
    expect(wrong.status).toBe(400);
    expect(pageText(wrong.html)).toContain("This code does not work");
    // Neither code was spent by the other account's attempt.
    expect((await typeCode(await directBrowser(), "carol.test", carols)).status).toBe(303);
    expect((await typeCode(await directBrowser(), "dave.test", daves)).status).toBe(303);
  });

  it("answers a wrong code the same whether or not the handle or email names an account", async () => {
    const known = await typeCode(await directBrowser(), "erin.test", "7KQ2M-XR4PD");
    const unknown = await typeCode(await directBrowser(), "nobody.test", "7KQ2M-XR4PD");
    const unknownEmail = await typeCode(await directBrowser(), "nobody@example.com", "7KQ2M-XR4PD");
    for (const answer of [unknown, unknownEmail]) {
      expect(answer.status).toBe(known.status);
      expect(pageText(answer.html)).toBe(pageText(known.html));
    }
    expect(known.status).toBe(400);
  });

  it("attack: parallel guesses with every alias, through nginx with forged X-Forwarded-For, across both processes, compare at most five", async () => {
    const account = await createAccount(server(), { handle: "frank.test", email: "frank@example.com", password: PASSWORD });
    // Through nginx, as an attacker reaches the server: round-robin over both processes.
    const attacker = await newBrowser(server(), "203.0.113.1");
    await postForm(attacker, "/account/recover", { csrf_token: attacker.csrfToken, identifier: "frank.test" });
    const right = typedCodeIn(await smtp.next());
    const wrong = (i: number) => `ZZZZZ-ZZZZ${i}`;
    const aliases = ["frank.test", "FRANK.TEST", "@Frank.Test", "frank@example.com", "FRANK@Example.com", " frank@example.com ", account.did, account.did];
    const answers = await Promise.all(
      aliases.map((identifier, i) =>
        postForm({ ...attacker, address: `10.${i}.0.1, 203.0.113.${i}` }, "/account/recover?code=1", { csrf_token: attacker.csrfToken, intent: "code", identifier, code: wrong(i) }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(aliases.map(() => 400));
    expect(await guessesOf(account.did)).toBe(5);
    // Now even the right code is refused: the code is dead.
    const late = await postForm({ ...attacker, address: "10.9.9.9" }, "/account/recover?code=1", { csrf_token: attacker.csrfToken, intent: "code", identifier: account.did, code: right });
    expect(late.status).toBe(400);
    expect(pageText(late.html)).toContain("This code does not work");
  });

  it("control: four wrong guesses leave the right code working", async () => {
    await askFor(await directBrowser(), "erin.test");
    const right = typedCodeIn(await smtp.next());
    for (let i = 0; i < 4; i++) expect((await typeCode(await directBrowser(i % 2), i < 2 ? "erin.test" : "erin@example.com", "ZZZZZ-ZZZZ0")).status).toBe(400);
    expect((await typeCode(await directBrowser(1), dids.erin!, right)).status).toBe(303);
  });
});
