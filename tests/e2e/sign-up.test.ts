/**
 * The sign-up screens in Chromium (docs/decisions/0052): an app sends a person with prompt=create; at 390×844 they sign
 * up with an invite code (a wrong one first, said beside its field), see the consent screen naming the new handle,
 * allow, and the app gets tokens for the new DID. The same without JavaScript in the account area, ending on the new
 * account's overview with its "confirm your email" row. axe-core finds nothing serious or critical on either step or
 * on the refused form, light and dark; the page's CSP refuses nothing; every shipped language shows the form in it.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LANGUAGES } from "../../app/i18n/languages.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { ADMIN_PASSWORD, adminInviteCode } from "../helpers/invites.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  callbackParams,
  contextOptions,
  E2E_TIMEOUT,
  expectAccessible,
  focusedId,
  hydrated,
  loopbackClientId,
  printFindings,
  pushRequest,
  releaseBrowser,
  sharedBrowser,
  startAppCallback,
  watchedPage,
  type AppCallback,
  type Findings,
} from "./support.ts";

const PASSWORD = "a new long password";

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let smtp: TestSmtp;
const findings: Findings = {};

beforeAll(async () => {
  smtp = await startSmtpServer();
  [server, browser, app] = await Promise.all([
    startTestServer({ ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@example.com>", ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_TERMS_URL: "https://example.com/terms", ATRIUM_PRIVACY_URL: "https://example.com/privacy" }),
    sharedBrowser(),
    startAppCallback(),
  ]);
}, E2E_TIMEOUT);
afterAll(async () => {
  printFindings(findings);
  await releaseBrowser(browser);
  await Promise.all([server?.stop(), app?.stop()]);
  await smtp?.stop();
});

describe("sign-up", () => {
  it(
    "from an app with prompt=create, on a phone: the form, a refusal beside its field, the new account's consent screen, tokens for the new DID",
    async () => {
      const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId("atproto transition:generic"));
      const pushed = await pushRequest(client, app.redirectUri, { prompt: "create" });
      const { page, csp } = await watchedPage(browser);
      await page.goto(pushed.authorizeUrl);
      await hydrated(page);
      // Phone first: the first step's button is within the first screen.
      const next = page.getByRole("button", { name: "Continue" });
      const box = (await next.boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(844);
      await expectAccessible(page, "sign-up-handle", findings);

      await page.getByLabel("Handle").fill("phonecomer");
      await next.click();
      await page.getByLabel("Email address").waitFor();
      await expect.poll(() => page.locator("body").innerText()).toContain("@phonecomer.test");
      await expectAccessible(page, "sign-up-details", findings);
      // The second step's button too, with an invite code to give and the operator's terms to agree to.
      const create = (await page.getByRole("button", { name: "Create account" }).boundingBox())!;
      expect(create.y + create.height).toBeLessThanOrEqual(844);

      await page.getByLabel("Email address").fill("phonecomer@example.com");
      await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
      await expect.poll(() => page.locator("#password-strength").innerText()).toMatch(/strength/i);
      await page.getByLabel("Invite code").fill("localhost-aaaaa-aaaaa");
      await page.getByRole("button", { name: "Create account" }).click();
      const refusal = page.locator("#inviteCode-error");
      await refusal.waitFor();
      expect(await page.getByLabel("Invite code").getAttribute("aria-invalid")).toBe("true");
      expect(await focusedId(page, "inviteCode")).toBe("inviteCode");
      await expectAccessible(page, "sign-up-refused", findings);

      await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
      await page.getByLabel("Invite code").fill(await adminInviteCode(server));
      await page.getByRole("button", { name: "Create account" }).click();
      // The consent screen for the new account: the person allows; nothing was allowed for them.
      const allow = page.locator('button[name="decision"][value="allow"]');
      await allow.waitFor();
      expect(await page.locator("main").innerText()).toContain("phonecomer.test");
      await allow.click();
      const params = await callbackParams(page, app.redirectUri);
      const tokens = await client.exchangeCode(params.get("code")!, pushed.verifier, pushed.redirectUri);
      expect(tokens.status).toBe(200);
      const didDocument = (await (await fetch(`${process.env.ATRIUM_PLC_DIRECTORY_URL}/${tokens.body.sub}`)).json()) as { alsoKnownAs: string[] };
      expect(didDocument.alsoKnownAs).toEqual(["at://phonecomer.test"]);
      expect(csp).toEqual([]);
    },
    E2E_TIMEOUT,
  );

  it(
    "without JavaScript, in the account area: the new account's overview, with its confirm-your-email row",
    async () => {
      const { context, page } = await watchedPage(browser, false);
      await page.goto(`${server.issuer}/account`);
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Handle").fill("nojscomer");
      await page.getByRole("button", { name: "Continue" }).click();
      await page.getByLabel("Email address").fill("nojscomer@example.com");
      await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
      await page.getByLabel("Invite code").fill(await adminInviteCode(server));
      await page.getByRole("button", { name: "Create account" }).click();
      await page.waitForURL((url) => url.pathname === "/account");
      const text = await page.locator("main").innerText();
      expect(text).toContain("nojscomer.test");
      await page.getByRole("link", { name: /confirm/i }).first().click();
      await page.waitForURL((url) => url.pathname === "/account/email");
      expect(await page.locator("#confirmation-code").count()).toBe(1);

      // axe runs as a script: the same browser's session, with JavaScript, audits the two pages.
      const audited = await browser.newContext(contextOptions({ bypassCSP: true, storageState: await context.storageState() }));
      const auditPage = await audited.newPage();
      await auditPage.goto(`${server.issuer}/account`);
      await hydrated(auditPage);
      await expectAccessible(auditPage, "account-overview-unconfirmed-email", findings);
      await auditPage.goto(`${server.issuer}/account/email`);
      await hydrated(auditPage);
      await expectAccessible(auditPage, "account-email-confirmation", findings);
    },
    E2E_TIMEOUT,
  );

  it(
    "every shipped language shows the form in it",
    async () => {
      const english = new Set<string>();
      for (const language of LANGUAGES) {
        const context = await browser.newContext(contextOptions({ locale: language, extraHTTPHeaders: { "Accept-Language": language } }));
        const page = await context.newPage();
        await page.goto(`${server.issuer}/account/sign-up`);
        expect(await page.locator("html").getAttribute("lang")).toBe(language);
        const labels = await page.locator("label, button[type=submit], h1").allInnerTexts();
        expect(labels.join(" "), language).not.toMatch(/signUp\.|account:/);
        // The title and the button are in the language (a label such as "Handle" may be the same word in it).
        const headline = await page.locator("h1, button[type=submit]").allInnerTexts();
        if (language === "en") headline.forEach((text) => english.add(text));
        else expect(headline.filter((text) => english.has(text)), language).toEqual([]);
        await context.close();
      }
    },
    E2E_TIMEOUT,
  );
});
