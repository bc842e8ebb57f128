/**
 * Changing the handle from /account/handle against a started server and the real PLC directory of the test run
 * (@did-plc/server): the DID document's alsoKnownAs changes, the firehose carries #identity with the new handle
 * (frames checked against the subscribeRepos lexicon), resolveHandle answers the new one; refusals are said under
 * the field; two people taking the same handle at once: one wins, and the loser's DID document keeps its own handle.
 * Runs on SQLite and, in the postgresql project, on PostgreSQL (the server's pool: separate connections).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../scripts/lib/dpop-client.ts";
import { openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { execute, rowsOf } from "../helpers/databases.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { createAlice } from "../helpers/flow.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectXrpcError, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";

const directoryUrl = inject("plcDirectoryUrl");
const PASSWORD = "correct horse battery";

let server: TestServer;
let firehose: FirehoseConsumer;
let lastAccount = 0;

beforeAll(async () => {
  server = await startTestServer();
  firehose = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos`);
  await firehose.opened;
});
afterAll(async () => {
  firehose?.close();
  await server?.stop();
});

type Person = { did: string; handle: string; browser: Browser & { csrfToken: string } };

async function newPerson(label: string): Promise<Person> {
  lastAccount += 1;
  const handle = `${label}${lastAccount}.test`;
  const created = await createAccount(server, { handle, email: `${label}${lastAccount}@example.com`, password: PASSWORD });
  return { ...created, browser: await signedIn(server, handle, PASSWORD) };
}

async function alsoKnownAs(did: string): Promise<string[]> {
  const response = await fetch(`${directoryUrl}/${did}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { alsoKnownAs: string[] }).alsoKnownAs;
}

function change(person: Person, name: string, domain = ".test") {
  return postForm(person.browser, "/account/handle", { csrf_token: person.browser.csrfToken, intent: "change", name, domain });
}

/** The field's error, and that the field names it and has the focus (issue 19: the error where the person looks). */
function fieldError(html: string): string {
  expect(html).toMatch(/<input[^>]*aria-describedby="name-error[^"]*"[^>]*autofocus/i);
  return pageText(/<p[^>]*id="name-error"[^>]*>(.*?)<\/p>/s.exec(html)?.[1] ?? "");
}

describe("changing the handle from /account/handle", () => {
  it("changes the DID document, the account and resolveHandle, and the firehose says #identity with the new handle", async () => {
    const person = await newPerson("renamer");
    const page = await openPage(person.browser, "/account/handle");
    expect(pageText(page.html)).toContain(`Your handle is @${person.handle}`);
    const answer = await change(person, `Moved-${lastAccount}`);
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/account/handle?notice=handle-changed");
    const handle = `moved-${lastAccount}.test`;
    expect(await alsoKnownAs(person.did)).toEqual([`at://${handle}`]);
    await firehose.until((frames) => frames.some((frame) => frame.kind === "message" && frame.type === "#identity" && frame.body.did === person.did && frame.body.handle === handle));
    const resolved = await callAnonymous<{ did: string }>(server, "com.atproto.identity.resolveHandle", { params: { handle } });
    expect(resolved.body.did).toBe(person.did);
    expect(pageText((await openPage(person.browser, "/account")).html)).toContain(`@${handle}`);
  });

  it("refuses a taken, malformed, too short or foreign-domain handle under the field, changing nothing", async () => {
    const person = await newPerson("refused");
    const other = await newPerson("holder");
    const cases: Array<[string, string, string]> = [
      [other.handle.replace(".test", ""), ".test", `@${other.handle} is taken`],
      ["no_underscores", ".test", "Use only letters, digits and hyphens"],
      ["a.b", ".test", "no dots"],
      ["ab", ".test", "3 to 18 characters"],
      ["", ".test", "Enter the handle you want"],
    ];
    for (const [name, domain, message] of cases) {
      const answer = await change(person, name, domain);
      expect(answer.status, name).toBe(400);
      expect(fieldError(answer.html), name).toContain(message);
    }
    const foreign = await change(person, "fine-name", ".example.com");
    expect(foreign.status).toBe(400);
    expect(pageText(foreign.html)).toContain("Choose one of the domains listed");
    expect(await alsoKnownAs(person.did)).toEqual([`at://${person.handle}`]);
  });

  it("asks a browser whose sign-in is old to confirm it's you first", async () => {
    const person = await newPerson("stale");
    const then = at(Date.now() - 10 * 60_000);
    await execute(server.database(), sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${then} WHERE "idHash" = ${sha256Base64url(person.browser.jar.get("atrium_session")!)}`);
    expect(pageText((await openPage(person.browser, "/account/handle")).html)).toContain("Confirm it's you");
    const refused = await change(person, "stolen-name");
    expect(refused.status).toBe(403);
    expect(await alsoKnownAs(person.did)).toEqual([`at://${person.handle}`]);
  });

  it("two people taking the same handle at once: one wins; the other is told it is taken and keeps its own, in its DID document too", async () => {
    const people = await Promise.all([newPerson("racer"), newPerson("racer"), newPerson("racer")]);
    const wanted = `wanted-${lastAccount}`;
    const answers = await Promise.all(people.map((person) => change(person, wanted)));
    const winners = people.filter((_, i) => answers[i]!.status === 303);
    expect(winners).toHaveLength(1);
    for (const [i, person] of people.entries()) {
      if (person === winners[0]) {
        expect(await alsoKnownAs(person.did)).toEqual([`at://${wanted}.test`]);
        continue;
      }
      expect(answers[i]!.status).toBe(400);
      expect(fieldError(answers[i]!.html)).toContain(`@${wanted}.test is taken`);
      expect(await alsoKnownAs(person.did)).toEqual([`at://${person.handle}`]);
    }
    const resolved = await callAnonymous<{ did: string }>(server, "com.atproto.identity.resolveHandle", { params: { handle: `${wanted}.test` } });
    expect(resolved.body.did).toBe(winners[0]!.did);
  });
});

/**
 * Issue 28, item 3: the rule of a handle under this server's domains (one label of 3 to 18 characters, not a reserved
 * name) lived in the account page alone, so updateHandle took another person's subdomain, a one-letter name or a
 * 45-character one. It is one rule now (accounts/handle-rules.ts), and every way of taking a handle applies it.
 */
describe("every way of taking a handle applies the one rule (issue 28)", () => {
  let alice: { did: string; handle: string };
  let token: ScopedToken;

  beforeAll(async () => {
    alice = await createAlice(server);
    token = await tokenWithScope(server, "atproto identity:handle");
  });

  const refused: Array<[handle: string, xrpcError: string, message: RegExp]> = [
    ["support.alice.test", "InvalidHandle", /Invalid characters in handle/],
    ["x.test", "InvalidHandle", /Handle too short/],
    [`${"a".repeat(45)}.test`, "InvalidHandle", /Handle too long/],
    ["admin.test", "HandleNotAvailable", /Reserved handle/],
    ["bsky.test", "HandleNotAvailable", /Reserved handle/],
    ["alice.example.com", "UnsupportedDomain", /handles here end with \.test.*not supported yet/],
    ["alice-.test", "InvalidHandle", /hyphens/],
  ];

  it("com.atproto.identity.updateHandle refuses each with the reference's error name, and the DID document keeps the handle", async () => {
    for (const [handle, error, message] of refused) {
      const body = expectXrpcError(await call(token, "com.atproto.identity.updateHandle", { json: { handle } }), 400, error);
      expect(body.message, handle).toMatch(message);
    }
    expect(await alsoKnownAs(alice.did)).toEqual([`at://${alice.handle}`]);
    expect((await callAnonymous<{ did: string }>(server, "com.atproto.identity.resolveHandle", { params: { handle: alice.handle } })).body.did).toBe(alice.did);
  });

  it("the account tool's create refuses each, and no account is made", async () => {
    const handles = async () => (await rowsOf<{ handle: string }>(server.database(), sql`SELECT "handle" FROM "Account" ORDER BY "handle"`)).map((row) => row.handle);
    const before = await handles();
    for (const [handle, , message] of refused) {
      await expect(createAccount(server, { handle, email: "taker@example.com", password: PASSWORD }), handle).rejects.toThrow(message);
    }
    expect(await handles()).toEqual(before);
  });

  it("the account page says a reserved name is reserved, beside the field", async () => {
    const person = await newPerson("reserver");
    for (const name of ["admin", "Support", "bsky"]) {
      const answer = await change(person, name);
      expect(answer.status, name).toBe(400);
      expect(fieldError(answer.html), name).toContain("That name is reserved");
    }
    const tooLong = await change(person, "a".repeat(45));
    expect(fieldError(tooLong.html)).toContain("3 to 18 characters");
    expect(await alsoKnownAs(person.did)).toEqual([`at://${person.handle}`]);
  });

  it("a name of 3 and one of 18 characters are taken", async () => {
    for (const handle of ["abc.test", `${"b".repeat(18)}.test`]) {
      expect((await call(token, "com.atproto.identity.updateHandle", { json: { handle } })).status, handle).toBe(200);
      expect(await alsoKnownAs(alice.did)).toEqual([`at://${handle}`]);
    }
  });
});
