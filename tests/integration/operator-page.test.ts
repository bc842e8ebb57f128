/**
 * The operator page, /admin (docs/decisions/0051), over HTTP as a browser without JavaScript uses it: the sign-in with
 * the admin password (throttled as every admin call), the screens' CSRF token and Origin check on every form, the
 * accounts a page at a time through 10,000 of them, the search, one account's takedown with its reason and its
 * restoration, signing out; and `npm run account -- list` over the same 10,000. Its look, languages and accessibility
 * are tests/e2e/operator-page.test.ts's. The takedown it makes is the store's (both engines: takedown.test.ts), so
 * this runs once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, run, sql, statementOf, type Program } from "../../app/.server/db/sql.ts";
import { runAccountCommand } from "../../scripts/lib/account-commands.ts";
import { ADMIN_PASSWORD, basicAuthorization } from "../helpers/admin.ts";
import { newBrowser, openPage, pageText, postForm, type Browser } from "../helpers/account.ts";
import { rowOf } from "../helpers/databases.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const TOTAL = 10_000;
const PAGE_SIZE = 50;

let server: TestServer;
let operator: Browser & { csrfToken: string };

/** The accounts a page of the list links to, each once (a phone's cards and a wide screen's table name the same). */
function accountsOn(html: string): string[] {
  return [...new Set([...html.matchAll(/href="\/admin\/account\?did=([^"]+)"/g)].map((match) => decodeURIComponent(match[1]!)))];
}

function nextLink(html: string): string | undefined {
  const href = /<a href="([^"]+)"[^>]*>Next page<\/a>/.exec(html)?.[1];
  return href?.replace(/&amp;/g, "&");
}

const insertAccounts = statementOf(
  `INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt") VALUES ${Array.from({ length: 100 }, () => "(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
);

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "1000000" });
  // 10,000 accounts, written as rows (the accounts' own creation is not what this is about).
  const now = Date.parse("2026-11-28T12:00:00Z");
  await server.database().transaction(function* (): Program<void> {
    for (let start = 0; start < TOTAL; start += 100) {
      const values = Array.from({ length: 100 }, (_, i) => {
        const name = `user${String(start + i).padStart(5, "0")}`;
        return [`did:plc:${name}`, `${name}.test`, `${name}@example.com`, "scrypt$16384$8$1$c2FsdA$aGFzaA", "{}", at(now), at(now)];
      }).flat();
      yield* run(insertAccounts(...values));
    }
  });
  operator = await newBrowser(server);
});
afterAll(() => server?.stop());

describe("the operator page", () => {
  it("asks for the admin password; a wrong one is said beside the field, and signs in nobody", async () => {
    const page = await openPage(operator, "/admin");
    expect(page.status).toBe(200);
    expect(pageText(page.html)).toContain("Operator sign-in");
    expect(page.html).toContain('name="password"');
    const wrong = await postForm(operator, "/admin", { csrf_token: page.csrfToken!, intent: "sign_in", password: "not the admin password" });
    expect(wrong.status).toBe(401);
    expect(pageText(wrong.html)).toContain("That is not the admin password.");
    expect(wrong.html).toMatch(/aria-invalid="true"[^>]*aria-describedby="password-error"|aria-describedby="password-error"[^>]*aria-invalid="true"/);
    expect(operator.jar.get("atrium_admin")).toBeUndefined();
  });

  it("refuses a sign-in without this browser's CSRF token or from another origin", async () => {
    const page = await openPage(operator, "/admin");
    expect((await postForm(operator, "/admin", { intent: "sign_in", password: ADMIN_PASSWORD })).status).toBe(403);
    expect((await postForm(operator, "/admin", { csrf_token: page.csrfToken!, intent: "sign_in", password: ADMIN_PASSWORD }, { origin: "https://evil.example" })).status).toBe(403);
    expect(operator.jar.get("atrium_admin")).toBeUndefined();
  });

  it("signs in with the admin password: a cookie that ends with the browser, a session the server keeps", async () => {
    const page = await openPage(operator, "/admin");
    const signedIn = await postForm(operator, "/admin", { csrf_token: page.csrfToken!, intent: "sign_in", password: ADMIN_PASSWORD });
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).toBe("/admin");
    expect(operator.jar.get("atrium_admin")).toMatch(/^adm-/);
    expect(await rowOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AdminSession"`)).toEqual({ n: 1 });
  });

  it(`pages through ${TOTAL.toLocaleString("en")} accounts ${PAGE_SIZE} at a time, each once, in handle order`, async () => {
    const seen: string[] = [];
    let path: string | undefined = "/admin";
    let pages = 0;
    while (path) {
      const page = await openPage(operator, path);
      expect(page.status).toBe(200);
      const shown = accountsOn(page.html);
      expect(shown.length).toBeLessThanOrEqual(PAGE_SIZE);
      seen.push(...shown);
      pages += 1;
      path = nextLink(page.html);
    }
    expect(pages).toBe(TOTAL / PAGE_SIZE);
    expect(seen.length).toBe(TOTAL);
    expect(new Set(seen).size).toBe(TOTAL);
    expect(seen).toEqual([...seen].sort());
  });

  it("finds accounts by the start of a handle, an email or a DID, a page at a time", async () => {
    const byHandle = await openPage(operator, "/admin?q=user0999");
    expect(accountsOn(byHandle.html)).toEqual(Array.from({ length: 10 }, (_, i) => `did:plc:user0999${i}`));
    expect(nextLink(byHandle.html)).toBeUndefined();
    const byEmail = await openPage(operator, "/admin?q=User01234%40");
    expect(accountsOn(byEmail.html)).toEqual(["did:plc:user01234"]);
    const byDid = await openPage(operator, "/admin?q=did:plc:user0002");
    expect(accountsOn(byDid.html)).toHaveLength(10);
    const many = await openPage(operator, "/admin?q=user00");
    expect(accountsOn(many.html)).toHaveLength(PAGE_SIZE);
    const second = await openPage(operator, nextLink(many.html)!);
    expect(accountsOn(second.html)[0]).toBe(`did:plc:user000${PAGE_SIZE}`);
    expect(pageText((await openPage(operator, "/admin?q=nobody")).html)).toContain("No account matches.");
  });

  it("takes an account down with a reason (required), then restores it; each form needs the CSRF token and our Origin", async () => {
    const did = "did:plc:user04321";
    const page = await openPage(operator, `/admin/account?did=${did}`);
    expect(page.status).toBe(200);
    expect(pageText(page.html)).toContain("Take this account down");
    const form = { csrf_token: page.csrfToken!, did, intent: "takedown" };
    // The form posts to the page's own address: a refusal is rendered again from the loader, which needs the DID.
    const action = /<form method="post" action="(\/admin\/account\?[^"]+)"/.exec(page.html)?.[1]?.replace(/&amp;/g, "&");
    expect(action).toBe(`/admin/account?did=${encodeURIComponent(did)}`);
    const noReason = await postForm(operator, action!, { ...form, reason: "  " });
    expect(noReason.status).toBe(400);
    expect(pageText(noReason.html)).toContain("Say why the account is taken down.");
    expect(pageText(noReason.html)).toContain(did);
    expect((await postForm(operator, `/admin/account?did=${did}`, { ...form, csrf_token: "", reason: "spam" })).status).toBe(403);
    expect((await postForm(operator, `/admin/account?did=${did}`, { ...form, reason: "spam" }, { origin: "https://evil.example" })).status).toBe(403);
    expect(await rowOf(server.database(), sql`SELECT "takendownAt" FROM "Account" WHERE "did" = ${did}`)).toEqual({ takendownAt: null });

    const done = await postForm(operator, `/admin/account?did=${did}`, { ...form, reason: "Spam, report #1234" });
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/admin/account?did=${encodeURIComponent(did)}&notice=taken-down`);
    expect(await rowOf(server.database(), sql`SELECT "takedownRef" FROM "Account" WHERE "did" = ${did}`)).toEqual({ takedownRef: "Spam, report #1234" });
    const shown = pageText((await openPage(operator, done.location!)).html);
    expect(shown).toContain("The account is taken down.");
    expect(shown).toContain("Spam, report #1234");
    expect(shown).toContain("Restore this account");
    expect(pageText((await openPage(operator, "/admin?q=user04321")).html)).toContain("Taken down");

    const restored = await postForm(operator, `/admin/account?did=${did}`, { csrf_token: page.csrfToken!, did, intent: "untakedown", reason: "appeal accepted" });
    expect(restored.status).toBe(303);
    expect(await rowOf(server.database(), sql`SELECT "takendownAt", "takedownRef" FROM "Account" WHERE "did" = ${did}`)).toEqual({ takendownAt: null, takedownRef: null });
  });

  it("lists an account's invite codes, the disabled and used-up ones too, and says when it has none", async () => {
    const admin = (method: string, body: unknown) =>
      fetch(`${server.issuer}/xrpc/${method}`, { method: "POST", headers: { Authorization: basicAuthorization(), "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const did = "did:plc:user01234";
    const made = (await (await admin("com.atproto.server.createInviteCodes", { codeCount: 2, useCount: 3, forAccounts: [did] })).json()) as { codes: { codes: string[] }[] };
    const [kept, disabled] = made.codes[0]!.codes;
    expect((await admin("com.atproto.admin.disableInviteCodes", { codes: [disabled] })).status).toBe(200);
    const text = pageText((await openPage(operator, `/admin/account?did=${did}`)).html);
    expect(text).toContain("Invite codes");
    expect(text).toContain(`${kept} 0 of 3 uses taken`);
    expect(text).toContain(`${disabled} 0 of 3 uses taken · disabled`);
    expect(pageText((await openPage(operator, "/admin/account?did=did:plc:user01235")).html)).toContain("None made for this account.");
  });

  it("an account that is not there is a page that says so", async () => {
    const page = await openPage(operator, "/admin/account?did=did:plc:nobodyhere2345678901234");
    expect(page.status).toBe(404);
    expect(pageText(page.html)).toContain("No such account");
  });

  it("signing out ends the session on the server; the pages ask for the password again", async () => {
    const page = await openPage(operator, "/admin");
    const cookie = operator.jar.get("atrium_admin")!;
    const out = await postForm(operator, "/admin", { csrf_token: page.csrfToken!, intent: "sign_out" });
    expect(out.status).toBe(303);
    expect(out.location).toBe("/admin?notice=signed-out");
    expect(await rowOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AdminSession"`)).toEqual({ n: 0 });
    // The old cookie, kept by someone, opens nothing.
    const stale = await fetch(`${server.issuer}/admin/account?did=did:plc:user00001`, { headers: { cookie: `atrium_admin=${cookie}` }, redirect: "manual" });
    expect(stale.status).toBe(303);
    expect(stale.headers.get("location")).toBe("/admin");
    expect(pageText((await openPage(operator, "/admin")).html)).toContain("Operator sign-in");
  });
});

describe("npm run account -- list", () => {
  it(`prints every one of ${TOTAL.toLocaleString("en")} accounts once, a page of the store at a time (its reads: sql-account-store.test.ts)`, async () => {
    const lines: string[] = [];
    await runAccountCommand(["list"], { env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer }, print: (line) => lines.push(line) });
    const dids = lines.map((line) => (JSON.parse(line) as { did: string }).did);
    expect(dids.length).toBe(TOTAL);
    expect(new Set(dids).size).toBe(TOTAL);
    expect(JSON.parse(lines[0]!)).toEqual({
      did: "did:plc:user00000", handle: "user00000.test", email: "user00000@example.com", emailConfirmed: false, active: true,
      createdAt: "2026-11-28T12:00:00.000Z", lastSignInAt: null,
    });
    const found: string[] = [];
    await runAccountCommand(["list", "--prefix", "USER0999"], { env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer }, print: (line) => found.push(line) });
    expect(found).toHaveLength(10);
  });
});
