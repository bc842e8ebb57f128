/**
 * The sign-up screens over plain HTTP, as a browser without JavaScript uses them (docs/decisions/0052): prompt=create
 * opens the form in the OAuth flow and ends at the consent screen for the new account (never an automatic Allow), the
 * app's tokens are the new DID's; the account area's form ends on the new account's overview, with its "confirm your
 * email" row; refusals stand beside their fields and leave nothing behind (no account, no DID at the directory); two
 * people taking one handle at once: one gets it, the other is told under the field; the per-address budget; the
 * captcha hook against a local stand-in of an hCaptcha-compatible verify endpoint; Origin and CSRF checks.
 * The store's races run on both engines elsewhere (sign-up-race, orphan-did): these checks are the screens' (SQLITE_ONLY).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { openPage, pageText, postForm, type Browser } from "../helpers/account.ts";
import { CookieJar, openConsentPage, submitConsent, visibleText } from "../helpers/consent.ts";
import { rowOf } from "../helpers/databases.ts";
import { createAlice, createPkce, newClient, REDIRECT } from "../helpers/flow.ts";
import { ADMIN_PASSWORD, adminInviteCode } from "../helpers/invites.ts";
import { genesisGate, type PlcGate } from "../helpers/plc-gate.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const directoryUrl = inject("plcDirectoryUrl");
const PASSWORD = "a new long password";

/** A stand-in for the captcha service's verify endpoint: "good" passes, anything else fails; it keeps what it was sent. */
async function captchaStandIn() {
  const asked: URLSearchParams[] = [];
  const server = http.createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      const form = new URLSearchParams(body);
      asked.push(form);
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ success: form.get("response") === "good", "error-codes": [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/siteverify`, asked, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let server: TestServer;
let open: TestServer;
let gate: PlcGate;
let smtp: TestSmtp;
let captcha: Awaited<ReturnType<typeof captchaStandIn>>;

beforeAll(async () => {
  [gate, smtp, captcha] = await Promise.all([genesisGate(directoryUrl, 0), startSmtpServer(), captchaStandIn()]);
  [server, open] = await Promise.all([
    startTestServer({
      ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ATRIUM_PLC_DIRECTORY_URL: gate.url,
      ATRIUM_SMTP_URL: smtp.url,
      ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>",
      ATRIUM_TERMS_URL: "https://example.com/terms",
    }),
    // No invite codes; a captcha; one account per address an hour; client addresses from the proxy.
    startTestServer({
      ATRIUM_INVITE_REQUIRED: "false",
      ATRIUM_HCAPTCHA_SITE_KEY: "10000000-ffff-ffff-ffff-000000000001",
      ATRIUM_HCAPTCHA_SECRET: "0x0000000000000000000000000000000000000000",
      ATRIUM_HCAPTCHA_VERIFY_URL: captcha.url,
      ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR: "1",
      ATRIUM_TRUST_PROXY: "1",
    }),
  ]);
  await createAlice(server);
}, 120_000);
afterAll(async () => {
  await Promise.all([server?.stop(), open?.stop()]);
  await Promise.all([gate?.close(), smtp?.stop(), captcha?.close()]);
});

/** The message under a field (the Field component's `<id>-error`). */
function errorUnder(html: string, field: string): string | undefined {
  const match = new RegExp(`id="${field}-error"[^>]*>([\\s\\S]*?)</p>`).exec(html);
  return match ? visibleText(match[1]!).trim() : undefined;
}

async function accountWith(handle: string) {
  return rowOf<{ did: string }>(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = ${handle}`);
}

/** The account area's two steps; the details step's answer. */
async function signUpInAccountArea(browser: Browser, name: string, details: Record<string, string>) {
  const first = await openPage(browser, "/account/sign-up");
  const second = await postForm(browser, "/account/sign-up", { csrf_token: first.csrfToken!, intent: "sign-up-handle", name, domain: ".test" });
  expect(second.status, visibleText(second.html).slice(0, 300)).toBe(200);
  return postForm(browser, "/account/sign-up", { csrf_token: second.csrfToken!, intent: "sign-up", name, domain: ".test", ...details });
}

describe("prompt=create in the OAuth flow", () => {
  it("opens the form; after it, the consent screen names the new account; allowing gives the app the new DID's tokens", async () => {
    const client = await newClient(server);
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest({ redirect_uri: REDIRECT, scope: "atproto transition:generic", state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256", prompt: "create" });
    expect(par.status).toBe(201);
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const jar = new CookieJar();
    const form = await openConsentPage(authorizeUrl, jar);
    expect(form.html).toContain('value="sign-up-handle"');
    expect(visibleText(form.html)).toContain("localhost"); // the app is named
    const hidden = { client_id: new URL(authorizeUrl).searchParams.get("client_id")!, request_uri: par.body.request_uri };
    const post = (fields: Record<string, string>) =>
      fetch(`${server.issuer}/oauth/authorize`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: server.issuer }, body: new URLSearchParams({ ...hidden, ...fields }) });

    // A taken handle is refused under the field at the first step.
    const taken = await post({ csrf_token: form.csrfToken!, intent: "sign-up-handle", name: "Alice", domain: ".test" });
    expect(taken.status).toBe(400);
    expect(errorUnder(await taken.text(), "name")).toContain("alice.test");

    const details = await post({ csrf_token: form.csrfToken!, intent: "sign-up-handle", name: "flowcomer", domain: ".test" });
    expect(details.status).toBe(200);
    const detailsHtml = await details.text();
    expect(visibleText(detailsHtml)).toContain("@flowcomer.test");
    expect(detailsHtml).toContain('href="https://example.com/terms"');
    const created = await post({ csrf_token: form.csrfToken!, intent: "sign-up", name: "flowcomer", domain: ".test", email: "flowcomer@example.com", password: PASSWORD, invite_code: await adminInviteCode(server) });
    jar.store(created);
    expect(created.status).toBe(303);
    const did = (await accountWith("flowcomer.test"))!.did;
    expect(created.headers.get("location")).toContain(`account=${encodeURIComponent(did)}`);

    // The consent screen for the new account: nothing was allowed yet.
    const consent = await openConsentPage(new URL(created.headers.get("location")!, server.issuer).href, jar);
    expect(consent.status).toBe(200);
    expect(visibleText(consent.html)).toContain("flowcomer.test");
    expect(consent.html).toContain('value="allow"');
    const allowed = await submitConsent(authorizeUrl, jar, { decision: "allow", account: did, csrfToken: consent.csrfToken });
    expect(allowed.status).toBe(303);
    const code = new URL(allowed.headers.get("location")!).searchParams.get("code")!;
    const tokens = await client.exchangeCode(code, pkce.verifier, REDIRECT);
    expect(tokens.status).toBe(200);
    expect(tokens.body.sub).toBe(did);
  });
});

describe("the account area's form", () => {
  it("makes the account and signs it in; the overview offers to confirm the email until it is", async () => {
    const browser: Browser = { server, jar: new CookieJar() };
    const created = await signUpInAccountArea(browser, "areacomer", { email: "areacomer@example.com", password: PASSWORD, invite_code: await adminInviteCode(server) });
    expect(created.status).toBe(303);
    expect(created.location).toMatch(/^\/account/);
    const overview = await openPage(browser, "/account");
    expect(pageText(overview.html)).toContain("areacomer.test");
    expect(overview.html).toContain('href="/account/email"');
    expect(pageText(overview.html)).toMatch(/confirm/i);

    // The code mailed at sign-up, typed on the email page, confirms the address; the row goes away.
    let mail = await smtp.next();
    while (mail.to && !Array.isArray(mail.to) && mail.to.text !== "areacomer@example.com") mail = await smtp.next();
    const emailPage = await openPage(browser, "/account/email");
    const wrong = await postForm(browser, "/account/email", { csrf_token: emailPage.csrfToken!, intent: "confirmation-code", code: "AAAAA-AAAAA" });
    expect(wrong.status).toBe(400);
    expect(errorUnder(wrong.html, "confirmation-code")).toBeTruthy();
    const confirmed = await postForm(browser, "/account/email", { csrf_token: wrong.csrfToken!, intent: "confirmation-code", code: typedCodeIn(mail) });
    expect(confirmed.status).toBe(303);
    const row = await rowOf<{ emailConfirmedAt: unknown }>(server.database(), sql`SELECT "emailConfirmedAt" FROM "Account" WHERE "handle" = ${"areacomer.test"}`);
    expect(row!.emailConfirmedAt).not.toBeNull();
  });

  it("refuses each field beside it, all at once, and a refusal registers no DID and stores nothing", async () => {
    const browser: Browser = { server, jar: new CookieJar() };
    const registered = gate.genesisDids.length;
    const refused = await signUpInAccountArea(browser, "refused", { email: "not an address", password: "short", invite_code: "localhost-aaaaa-aaaaa", recovery_key: "did:key:nonsense" });
    expect(refused.status).toBe(400);
    expect(errorUnder(refused.html, "email")).toBeTruthy();
    expect(errorUnder(refused.html, "password")).toBeTruthy();
    expect(errorUnder(refused.html, "recoveryKey")).toBeTruthy();
    // What was typed is kept (never the password).
    expect(refused.html).toContain('value="not an address"');
    expect(refused.html).not.toContain('value="short"');
    const badInvite = await signUpInAccountArea(browser, "refused", { email: "refused@example.com", password: PASSWORD, invite_code: "localhost-aaaaa-aaaaa" });
    expect(badInvite.status).toBe(400);
    expect(errorUnder(badInvite.html, "inviteCode")).toBeTruthy();
    const takenEmail = await signUpInAccountArea(browser, "refused", { email: "ALICE@example.com", password: PASSWORD, invite_code: await adminInviteCode(server) });
    expect(takenEmail.status).toBe(400);
    expect(errorUnder(takenEmail.html, "email")).toBeTruthy();
    expect(await accountWith("refused.test")).toBeUndefined();
    expect(gate.genesisDids.length).toBe(registered);
  });

  it("a post from another origin, or without the form's token, is refused", async () => {
    const browser: Browser = { server, jar: new CookieJar() };
    const page = await openPage(browser, "/account/sign-up");
    const fields = { csrf_token: page.csrfToken!, intent: "sign-up-handle", name: "csrfcomer", domain: ".test" };
    expect((await postForm(browser, "/account/sign-up", fields, { origin: "https://evil.example" })).status).toBe(403);
    expect((await postForm(browser, "/account/sign-up", { ...fields, csrf_token: "forged" })).status).toBe(403);
  });

  it("two people taking one handle at once: one gets it, the other is told under the field, and no DID stays registered for them", async () => {
    const one: Browser = { server, jar: new CookieJar() };
    const two: Browser = { server, jar: new CookieJar() };
    const [codeOne, codeTwo] = [await adminInviteCode(server), await adminInviteCode(server)];
    const before = gate.genesisDids.length;
    gate.holdNext(2);
    const answers = await Promise.all([
      signUpInAccountArea(one, "contested", { email: "one@example.com", password: PASSWORD, invite_code: codeOne }),
      signUpInAccountArea(two, "contested", { email: "two@example.com", password: PASSWORD, invite_code: codeTwo }),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([303, 400]);
    const lost = answers.find((answer) => answer.status === 400)!;
    expect(errorUnder(lost.html, "name")).toContain("contested.test");
    // The name's field is open again to choose another.
    expect(lost.html).toMatch(/id="name"[^>]*value="contested"|value="contested"[^>]*id="name"/);
    const winner = (await accountWith("contested.test"))!.did;
    const registered = gate.genesisDids.slice(before);
    expect(registered).toHaveLength(2);
    const loser = registered.find((did) => did !== winner)!;
    const last = (await (await fetch(`${directoryUrl}/${loser}/log/last`)).json()) as { type: string };
    expect(last.type).toBe("plc_tombstone");
  });
});

describe("a server without invite codes, with a captcha and one account per address an hour", () => {
  const browserAt = (address: string): Browser => ({ server: open, jar: new CookieJar(), address });
  const signUp = async (browser: Browser, name: string, captchaAnswer?: string) => {
    const first = await openPage(browser, "/account/sign-up");
    const second = await postForm(browser, "/account/sign-up", { csrf_token: first.csrfToken!, intent: "sign-up-handle", name, domain: ".test" });
    expect(second.html).toContain('data-sitekey="10000000-ffff-ffff-ffff-000000000001"');
    expect(second.html).not.toContain('name="invite_code"');
    return postForm(browser, "/account/sign-up", {
      csrf_token: second.csrfToken!,
      intent: "sign-up",
      name,
      domain: ".test",
      email: `${name}@example.com`,
      password: PASSWORD,
      ...(captchaAnswer === undefined ? {} : { "h-captcha-response": captchaAnswer }),
    });
  };

  it("a failing or missing captcha is refused beside the widget; the service is asked with the secret, site key and address", async () => {
    const browser = browserAt("198.51.100.7");
    for (const answer of ["bad", undefined]) {
      const refused = await signUp(browser, "captchacomer", answer);
      expect(refused.status).toBe(400);
      expect(errorUnder(refused.html, "captcha")).toBeTruthy();
    }
    const asked = captcha.asked.find((form) => form.get("response") === "bad")!;
    expect(Object.fromEntries(asked)).toMatchObject({ secret: "0x0000000000000000000000000000000000000000", sitekey: "10000000-ffff-ffff-ffff-000000000001", remoteip: "198.51.100.7" });
    expect((await signUp(browser, "captchacomer", "good")).status).toBe(303);
  });

  it("the address's budget: a second account from one address in the hour waits; another address may", async () => {
    expect((await signUp(browserAt("203.0.113.9"), "budget-one", "good")).status).toBe(303);
    const refused = await signUp(browserAt("203.0.113.9"), "budget-two", "good");
    expect(refused.status).toBe(429);
    expect(refused.html).toContain('id="sign-up-error"');
    expect((await signUp(browserAt("203.0.114.9"), "budget-two", "good")).status).toBe(303);
  });
});
