import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { pageText } from "../helpers/account.ts";
import { CookieJar } from "../helpers/consent.ts";
import { rowOf } from "../helpers/databases.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { fetchFrom } from "../helpers/raw-http.ts";
import { createAccount } from "../helpers/test-server.ts";

/**
 * Issue 16, hole 2 (docs/decisions/0023a): which email belongs to a public handle. After the free attempts on a
 * handle, one wrong password typed with a guessed email used to get 429 when the email was that account's and 400
 * otherwise. Attacked as the review did: a botnet (each guess from its own loopback address, each with a forged
 * X-Forwarded-For that the trusted nginx does not let through), through a real nginx balancing over two processes
 * that share one database, many guesses at once, every alias of the account in several spellings. The first wait
 * is 10 minutes here, so a counter that waits keeps waiting for the whole test however slow the machine is.
 */

let proxied: ProxiedServers;
let host = 10;
/** A new attacker address for every guess: the address's own counter never decides anything here. */
const nextAddress = () => `127.0.0.${host++}`;

type Answer = { status: number; retryAfter: string | null; text: string; signedIn: boolean };

/** One guess from a fresh browser at a fresh address: the sign-in page of /account, then its form with `identifier` and `password`. */
async function guess(identifier: string, password: string): Promise<Answer> {
  const from = fetchFrom(nextAddress());
  // The same lie on every request: were it believed, every guess would share one address counter.
  const forged = { "X-Forwarded-For": "203.0.113.50" };
  const jar = new CookieJar();
  const page = await from(`${proxied.issuer}/account`, { headers: { ...forged, cookie: jar.header() }, redirect: "manual" });
  jar.store(page as unknown as Response);
  const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(await page.text())?.[1];
  expect(csrfToken, "the sign-in page has its form").toBeTruthy();
  const answer = await from(`${proxied.issuer}/account`, {
    method: "POST",
    headers: { ...forged, "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: proxied.issuer },
    body: new URLSearchParams({ csrf_token: csrfToken!, identifier, password, next: "/account" }).toString(),
    redirect: "manual",
  });
  jar.store(answer as unknown as Response);
  return { status: answer.status, retryAfter: answer.headers.get("retry-after"), text: pageText(await answer.text()), signedIn: Boolean(jar.get("atrium_session")) };
}

/** How many attempts were checked against the account (its counter's count: only those that passed its claim). */
async function checkedAgainst(did: string): Promise<number> {
  const row = await rowOf<{ count: number }>(proxied.servers[0]!.database(), sql`SELECT "count" FROM "RateLimit" WHERE "key" = ${`sign-in:account:${did}`}`);
  return Number(row?.count ?? 0);
}

/** What a wrong password answers: the one answer every guess below must get, whatever it typed. */
let wrongPassword: Answer;

beforeAll(async () => {
  proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "1", ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: "600" });
  await createAccount(proxied.servers[0]!, { handle: "hugo.test", email: "hugo@example.com", password: "hugo's own password" });
  wrongPassword = await guess("hugo.test", "not hugo's password");
  expect(wrongPassword.status).toBe(400);
  expect(wrongPassword.retryAfter).toBeNull();
});
afterAll(() => proxied?.stop());

describe("which email belongs to a public handle, behind nginx, two processes on one database", () => {
  it("after the free attempts on the handle, the account's email answers exactly like a stranger's: status, message, no Retry-After", async () => {
    const owner = { handle: "gwen.test", email: "gwen@example.com", password: "gwen's own password" };
    const { did } = await createAccount(proxied.servers[0]!, owner);

    // Eight wrong passwords at once on the public handle: the five free ones are checked, the rest wait visibly,
    // on the counter of what they typed.
    const onHandle = await Promise.all(Array.from({ length: 8 }, (_, i) => guess(i % 2 ? "GWEN.TEST" : "@gwen.test", `guess ${i}`)));
    expect(onHandle.map((answer) => answer.status).sort()).toEqual([400, 400, 400, 400, 400, 429, 429, 429]);
    expect(await checkedAgainst(did)).toBe(5);

    // Then one wrong password each, all at once, with the account's own email and DID in several spellings, and
    // with emails that are not the account's (another account's among them).
    const aliases = [owner.email, "Gwen@Example.COM", ` GWEN@example.com `, did, did.toUpperCase()];
    const strangers = ["gwen@example.org", "g.wen@example.com", "hugo@example.com", "nobody@example.com", "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"];
    const answers = await Promise.all([...aliases, ...strangers].map((identifier) => guess(identifier, "one more guess")));
    for (const [i, answer] of answers.entries()) {
      const identifier = [...aliases, ...strangers][i]!;
      expect({ identifier, status: answer.status, retryAfter: answer.retryAfter, signedIn: answer.signedIn }).toEqual({ identifier, status: 400, retryAfter: null, signedIn: false });
      expect(answer.text, identifier).toBe(wrongPassword.text);
    }
    // None of them was checked against the account: it was waiting.
    expect(await checkedAgainst(did)).toBe(5);

    // The cap still holds: the right password, under every alias not typed yet, is not checked either, and gets a
    // wrong password's answer, all at once.
    const right = await Promise.all(["GWEN@EXAMPLE.COM", `@${did}`, "ｇｗｅｎ＠ｅｘａｍｐｌｅ．ｃｏｍ"].map((identifier) => guess(identifier, owner.password)));
    for (const answer of right) expect({ status: answer.status, retryAfter: answer.retryAfter, signedIn: answer.signedIn, text: answer.text }).toEqual({ ...wrongPassword, signedIn: false });
    // Someone else's sign-in is not held up by any of it.
    expect((await guess("HUGO@example.com", "hugo's own password")).status).toBe(303);
  });

  it("the account's counter caps guessing: 12 wrong passwords at once under 12 spellings of its handle, email and DID, over both processes, check only the free five, and refuse none visibly", async () => {
    const owner = { handle: "ines.test", email: "ines@example.com", password: "ines's own password" };
    const { did } = await createAccount(proxied.servers[0]!, owner);
    // Four spellings of each alias: no alias's own counter (what was typed, in its canonical spelling) reaches its
    // free attempts, so only the account's can stop them.
    const spellings = [
      ...["ines.test", "INES.TEST", "@Ines.Test", "ｉｎｅｓ．ｔｅｓｔ"],
      ...["ines@example.com", "INES@EXAMPLE.COM", "ｉｎｅｓ＠ｅｘａｍｐｌｅ．ｃｏｍ", "@ines@example.com"],
      ...[did, did.toUpperCase(), `@${did}`, ` ${did} `],
    ];
    const answers = await Promise.all(spellings.map((identifier, i) => guess(identifier, `wrong ${i}`)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(12).fill(400));
    for (const answer of answers) {
      expect(answer.retryAfter).toBeNull();
      expect(answer.text).toBe(wrongPassword.text);
    }
    expect(await checkedAgainst(did)).toBe(5);
    // Then even the right password is not checked from a browser the account does not know (a fifth spelling of the
    // email, still free on its own counter).
    const right = await guess("Ines@Example.com", owner.password);
    expect({ status: right.status, signedIn: right.signedIn, text: right.text }).toEqual({ status: 400, signedIn: false, text: wrongPassword.text });
  });
});

/** One com.atproto.server.createSession from a fresh address, with the same forged X-Forwarded-For (docs/decisions/0047). */
async function createSession(identifier: string, password: string): Promise<Answer> {
  const answer = await fetchFrom(nextAddress())(`${proxied.issuer}/xrpc/com.atproto.server.createSession`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Forwarded-For": "203.0.113.50" },
    body: JSON.stringify({ identifier, password }),
  });
  const text = await answer.text();
  return { status: answer.status, retryAfter: answer.headers.get("retry-after"), text, signedIn: answer.status === 200 };
}

/** What createSession answers a wrong password: the one answer every guess below must get. */
const WRONG_PASSWORD = { status: 401, retryAfter: null, text: JSON.stringify({ error: "AuthenticationRequired", message: "Invalid identifier or password" }), signedIn: false };

describe("the same through com.atproto.server.createSession: the throttle is the screens' (docs/decisions/0047)", () => {
  it("an app's wrong passwords and a browser's count together; then every other alias answers as a stranger's, and the right password is not checked", async () => {
    const owner = { handle: "jade.test", email: "jade@example.com", password: "jade's own password" };
    const { did } = await createAccount(proxied.servers[0]!, owner);

    // Eight wrong passwords at once on the handle, half through the sign-in page and half through createSession (some
    // in an app password's shape, which costs one more hash): five are checked in all, the rest wait visibly.
    const guesses = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? guess("jade.test", `guess ${i}`) : createSession("JADE.test", i % 4 ? `guess ${i}` : "abcd-efgh-ijkl-mnop"))),
    );
    // Whichever arrive first are checked: a wrong password's answer each way in (400 on the page, 401 over XRPC).
    expect(guesses.filter((answer) => answer.status === 429)).toHaveLength(3);
    for (const [i, answer] of guesses.entries()) expect([429, i % 2 ? 400 : 401]).toContain(answer.status);
    for (const answer of guesses.filter((one) => one.status === 429)) expect(answer.retryAfter).toMatch(/^\d+$/);
    expect(await checkedAgainst(did)).toBe(5);

    // Then, all at once through createSession, one wrong password with each alias of the account and with strangers'.
    const aliases = [owner.email, "Jade@Example.COM", did, did.toUpperCase(), `@${did}`];
    const strangers = ["jade@example.org", "j.ade@example.com", "hugo@example.com", "nobody@example.com", "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"];
    const answers = await Promise.all([...aliases, ...strangers].map((identifier) => createSession(identifier, "one more guess")));
    for (const [i, answer] of answers.entries()) {
      expect({ identifier: [...aliases, ...strangers][i], ...answer }).toEqual({ identifier: [...aliases, ...strangers][i], ...WRONG_PASSWORD });
    }
    expect(await checkedAgainst(did)).toBe(5);

    // The right password under aliases not typed yet is not checked: a wrong password's answer, through both ways in.
    const right = await Promise.all(["JADE@EXAMPLE.COM", ` ${did} `].map((identifier) => createSession(identifier, owner.password)));
    for (const answer of right) expect(answer).toEqual(WRONG_PASSWORD);
    expect((await guess("jAde@example.com", owner.password)).status).toBe(400);
    // Someone else's app signs in meanwhile.
    expect((await createSession("HUGO@example.com", "hugo's own password")).status).toBe(200);
  });

  it("12 wrong passwords at once under 12 spellings, over both processes: only the free five are checked, none refused visibly", async () => {
    const owner = { handle: "kai.test", email: "kai@example.com", password: "kai's own password" };
    const { did } = await createAccount(proxied.servers[0]!, owner);
    const spellings = [
      ...["kai.test", "KAI.TEST", "@Kai.Test", "ｋａｉ．ｔｅｓｔ"],
      ...["kai@example.com", "KAI@EXAMPLE.COM", "ｋａｉ＠ｅｘａｍｐｌｅ．ｃｏｍ", "@kai@example.com"],
      ...[did, did.toUpperCase(), `@${did}`, ` ${did} `],
    ];
    const answers = await Promise.all(spellings.map((identifier, i) => createSession(identifier, i % 3 ? `wrong ${i}` : `wron-g${i}ab-cdef-ghij`.slice(0, 19))));
    for (const answer of answers) expect(answer).toEqual(WRONG_PASSWORD);
    expect(await checkedAgainst(did)).toBe(5);
    expect(await createSession("Kai@Example.com", owner.password)).toEqual(WRONG_PASSWORD);
  });
});
