import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { translatorFor, type Translate } from "../../app/.server/i18n/translate.ts";
import { dateLocale, LANGUAGES, LANGUAGE_NAMES, type Language } from "../../app/i18n/languages.ts";
import { ClientHost } from "../helpers/client-host.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  callbackParams,
  contextOptions,
  E2E_TIMEOUT,
  hydrated,
  releaseBrowser,
  sharedBrowser,
  loopbackClientId,
  PASSWORD,
  PHOTOGRAPHS,
  pushRequest,
  SCREENSHOT_DIR,
  seriousAxeViolations,
  startAppCallback,
  visibleText,
  type AppCallback,
  type AxeViolation,
} from "./support.ts";

/**
 * Every screen in every shipped language (docs/decisions/0019): a browser whose Accept-Language names the language
 * sees the consent, sign-in, account and error screens in it, with `<html lang>` set, dates in its own format and no
 * hydration warning; axe-core finds nothing serious or critical, in light in each language and in dark once per
 * screen; with PHOTOGRAPHS (support.ts), one photograph per screen and language goes to
 * test-results/screenshots/i18n/<language>/. Then the order of the choice: the app's ui_locales over
 * Accept-Language, the picker over both, remembered in a cookie, with and without JavaScript. The words expected are
 * read from the catalogue itself (the test fails when a page does not use it).
 */

const I18N_DIR = path.join(SCREENSHOT_DIR, "i18n");
const SCOPE = [
  "atproto",
  "repo:app.bsky.feed.post",
  "repo:app.bsky.feed.like?action=create&action=delete",
  "blob:image/*",
  "rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview",
  "account:email",
  "identity:handle",
].join(" ");

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let host: ClientHost;
let rich: DpopClient;
let loopback: DpopClient;
const findings: Record<string, AxeViolation[]> = {};

beforeAll(async () => {
  [server, browser, app, host] = await Promise.all([
    // Six languages sign in and fail a password once each: neither the screens' nor the sign-in limits are the subject here.
    startTestServer({ ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "5000", ATRIUM_SIGN_IN_FREE_ATTEMPTS: "100" }),
    sharedBrowser(),
    startAppCallback(),
    ClientHost.start(),
  ]);
  await Promise.all(LANGUAGES.map((language) => createAccount(server, { handle: handleOf(language), email: `${handleOf(language)}@example.com`, password: PASSWORD })));
  host.serveMetadata(host.metadata({ authMethod: "none", clientName: "Skyline Photos", overrides: { scope: SCOPE } }));
  rich = new DpopClient(server.issuer, await generateDpopKey(), host.clientId);
  loopback = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId("atproto transition:generic"));
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await host?.stop();
  await server?.stop();
  if (Object.keys(findings).length) console.log("axe findings:", JSON.stringify(findings, null, 2));
});

function handleOf(language: Language): string {
  return `speaks-${language.toLowerCase().replace(/[^a-z]/g, "")}.test`;
}

/** A browser that speaks `language` (Accept-Language, navigator.language); axe is injected, so the CSP is bypassed. */
async function browserIn(language: string, options: { javaScriptEnabled?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; hydrationErrors: string[] }> {
  const context = await browser.newContext(contextOptions({ locale: language, bypassCSP: true, ...options }));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const hydrationErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && /hydrat|did not match|server rendered/i.test(message.text())) hydrationErrors.push(message.text());
  });
  page.on("pageerror", (error) => {
    if (/hydrat|did not match/i.test(error.message)) hydrationErrors.push(error.message);
  });
  return { context, page, hydrationErrors };
}

/**
 * One pass per screen and language: axe-core in light, every rule, for each language but English (serious and
 * critical violations fail); axe's colour rules in dark once per screen, in English; and with PHOTOGRAPHS one
 * photograph of the whole page, light, phone-sized (test-results/screenshots/i18n/<language>/<screen>.png). The
 * colours come from the stylesheet, the same in every language, and the words from the catalogue, the same in both
 * schemes (support.ts, COLOUR_RULES): a screen's dark colours audited in one language are audited in all.
 */
async function audit(page: Page, language: Language, screen: string): Promise<void> {
  const found: AxeViolation[] = [];
  // English is audited in full screen by screen, narrow and wide, by screens.test.ts: here its light pass only photographs.
  if (language !== "en") found.push(...(await seriousAxeViolations(page, "all")).map((violation) => ({ ...violation, help: `light: ${violation.help}` })));
  if (PHOTOGRAPHS) {
    mkdirSync(path.join(I18N_DIR, language), { recursive: true });
    await page.screenshot({ path: path.join(I18N_DIR, language, `${screen}.png`), fullPage: true, animations: "disabled" });
  }
  if (language === "en") {
    // Colour transitions (buttons: 150 ms) would be measured half-way: switch them off rather than wait for them.
    await page.addStyleTag({ content: "*, *::before, *::after { transition: none !important; }" });
    await page.emulateMedia({ colorScheme: "dark" });
    found.push(...(await seriousAxeViolations(page, "colours")).map((violation) => ({ ...violation, help: `dark: ${violation.help}` })));
    await page.emulateMedia({ colorScheme: "light" });
  }
  if (found.length) findings[`${language}/${screen}`] = found;
  expect(found, `${language}/${screen}: ${JSON.stringify(found, null, 2)}`).toEqual([]);
}

async function expectLanguage(page: Page, language: Language): Promise<void> {
  expect(await page.locator("html").getAttribute("lang")).toBe(language);
  expect(await page.locator("html").getAttribute("dir")).toBe("ltr");
}

/** English sentences that must not show on a page in another language (the catalogue was not used). */
function englishLeaks(text: string, language: Language, keys: Parameters<Translate>[0][]): string[] {
  if (language === "en") return [];
  const en = translatorFor("en");
  return keys.map((key) => en(key as never) as string).filter((sentence) => text.includes(sentence));
}

describe("every screen in every language", () => {
  for (const language of LANGUAGES) {
    it(`${LANGUAGE_NAMES[language]} (${language}): consent, sign-in, account and error screens`, async () => {
      const t = translatorFor(language);
      const { context, page, hydrationErrors } = await browserIn(language);
      try {
        await page.goto(server.issuer);
        await expectLanguage(page, language);
        expect(await visibleText(page.getByRole("link", { name: t("common:start.manage") }))).toBe(t("common:start.manage"));
        await audit(page, language, "start");

        expect((await page.goto(`${server.issuer}/no/such/page`))?.status()).toBe(404);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("common:errorPage.statusTitles.404"));
        expect(await page.title()).toContain(t("common:errorPage.statusTitles.404"));
        await audit(page, language, "not-found");

        expect((await page.goto(`${server.issuer}/oauth/authorize?client_id=x&request_uri=urn:ietf:params:oauth:request_uri:req-unknown`))?.status()).toBe(400);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("errors:authorize.expired.title"));
        await audit(page, language, "authorize-error");

        // The consent screen, signed out: the heading, the permissions in plain words, a wrong password.
        const pushed = await pushRequest(rich, host.redirectUri, { scope: SCOPE });
        await page.goto(pushed.authorizeUrl);
        await hydrated(page);
        await expectLanguage(page, language);
        const hostName = new URL(host.clientId).host;
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("consent:heading.sign-in", { who: hostName }));
        const consentText = await page.locator("main").innerText();
        expect(consentText).toContain(t("permissions:scope.handle.title"));
        expect(consentText).toContain(t("permissions:collections.post"));
        expect(await page.title()).toContain(t("consent:pageTitle.sign-in"));
        expect(englishLeaks(consentText, language, ["consent:permissionsHeading", "permissions:scope.handle.title", "consent:takeBack"])).toEqual([]);
        await audit(page, language, "consent-signed-out");
        await page.locator('input[name="identifier"]').fill(handleOf(language));
        await page.locator('input[name="password"]').fill("wrong password");
        await page.locator('button[name="decision"][value="allow"]').click();
        expect(await visibleText(page.getByRole("alert").filter({ hasText: t("errors:signIn.failed") }))).toBe(t("errors:signIn.failed"));
        await audit(page, language, "consent-wrong-password");
        await page.locator('input[name="password"]').fill(PASSWORD);
        await page.getByRole("button", { name: t("consent:allow"), exact: true }).click();
        expect((await callbackParams(page, pushed.redirectUri)).get("code")).toBeTruthy();

        // Signed in: the consent screen names the account; Allow and Deny in the language.
        const again = await pushRequest(loopback, app.redirectUri, { prompt: "consent" });
        await page.goto(again.authorizeUrl);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("consent:heading.allow", { who: t("consent:identity.thisDevice") }));
        await visibleText(page.getByRole("button", { name: t("consent:deny"), exact: true }));
        await audit(page, language, "consent-signed-in");
        await page.getByRole("button", { name: t("consent:deny"), exact: true }).click();
        expect((await callbackParams(page, again.redirectUri)).get("error")).toBe("access_denied");

        // The account pages: titles, plurals, dates in the language's own format.
        await page.goto(`${server.issuer}/account`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:titles.overview"));
        expect(await page.locator("main").innerText()).toContain(t("account:overview.apps", { count: 1 }));
        await audit(page, language, "account-overview");

        // An app signed in with the password is listed beside the OAuth app (docs/decisions/0047).
        const session = await fetch(`${server.issuer}/xrpc/com.atproto.server.createSession`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "User-Agent": "ExampleBot/2.1" },
          body: JSON.stringify({ identifier: handleOf(language), password: PASSWORD }),
        });
        expect(session.status).toBe(200);
        await page.goto(`${server.issuer}/account/apps`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:titles.apps"));
        await visibleText(page.getByText(t("account:apps.passwordSessions.withPassword")));
        await page.getByText(t("account:apps.whatItCanDo")).first().click();
        const time = page.locator("time").first();
        const iso = (await time.getAttribute("datetime"))!;
        const expectedDate = new Intl.DateTimeFormat(dateLocale(language), { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }).format(new Date(iso));
        expect(await time.innerText()).toBe(t("common:time.utc", { time: expectedDate }));
        await audit(page, language, "account-apps");

        await page.goto(`${server.issuer}/account/sessions`);
        await hydrated(page);
        // The pill is one piece on a phone, however its language wraps (issue 28, item 21).
        const pill = page.getByText(t("account:sessions.thisBrowser"));
        await visibleText(pill);
        expect(await pill.evaluate((element) => element.getClientRects().length)).toBe(1);
        // Every account page is in the navigation, Handle and Deactivate included.
        const nav = page.getByRole("navigation", { name: t("account:navLabel") });
        for (const key of ["overview", "apps", "sessions", "passkeys", "password", "email", "handle", "deactivate", "delete"] as const) {
          expect(await nav.getByRole("link", { name: t(`account:nav.${key}`), exact: true }).count(), key).toBe(1);
        }
        await audit(page, language, "account-sessions");

        await page.goto(`${server.issuer}/account/passkeys`);
        await hydrated(page);
        await visibleText(page.getByText(t("account:passkeys.none")));
        await visibleText(page.getByRole("heading", { name: t("passkey:add.title") }));
        await audit(page, language, "account-passkeys");

        await page.goto(`${server.issuer}/account/password`);
        await page.locator("#current_password").fill("wrong");
        await page.locator("#new_password").fill("short");
        await page.getByRole("button", { name: t("account:password.submit") }).click();
        expect(await visibleText(page.locator("#new_password-error"))).toBe(t("errors:form.passwordTooShort", { count: 8 }));
        await audit(page, language, "account-password-errors");

        // The email address (this server has no SMTP: the page says whom to ask; docs/decisions/0030).
        await page.goto(`${server.issuer}/account/email`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:titles.email"));
        await visibleText(page.getByText(t("account:emailChange.noEmail", { service: new URL(server.issuer).hostname })));
        await audit(page, language, "account-email");

        // App passwords (docs/decisions/0047): one created and shown once, then its revocation's confirmation.
        await page.goto(`${server.issuer}/account/app-passwords`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:titles.appPasswords"));
        await visibleText(page.getByText(t("account:appPasswords.list.none")));
        await page.locator("#app-password-name").fill("Bot");
        await page.getByRole("button", { name: t("account:appPasswords.create.submit") }).click();
        expect(await visibleText(page.getByRole("heading", { name: t("account:appPasswords.created.title") }))).toBe(t("account:appPasswords.created.title"));
        expect(await page.locator("#created-password").inputValue()).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
        await audit(page, language, "account-app-password-created");
        await page.goto(`${server.issuer}/account/app-passwords?revoke=Bot`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:appPasswords.confirm.title"));
        await audit(page, language, "account-app-password-revoke");

        // Signed out through the account menu: the notice, then the sign-in form's own errors.
        const handle = `@${handleOf(language)}`;
        await page.getByText(t("account:switcher.managing", { handle }), { exact: true }).click();
        await page.getByRole("button", { name: t("account:switcher.signOutOf", { handle }), exact: true }).click();
        await visibleText(page.getByText(t("account:notices.signed-out")));
        await visibleText(page.getByLabel(t("account:staySignedIn.label")));
        await page.getByRole("button", { name: t("account:signIn.submit"), exact: true }).click();
        expect(await visibleText(page.locator("#identifier-error"))).toBe(t("errors:form.enterIdentifier"));
        await expectLanguage(page, language);
        await audit(page, language, "account-sign-in");

        // Password recovery (this server has no SMTP: the screen says whom to ask) and a link that no longer works.
        await page.goto(`${server.issuer}/account/recover`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:recovery.title"));
        await visibleText(page.getByText(t("account:recovery.noEmail")));
        await audit(page, language, "account-recover");
        await page.goto(`${server.issuer}/account/reset?code=rec-${"x".repeat(43)}`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:recovery.invalidTitle"));
        await audit(page, language, "account-reset-invalid");

        // Two accounts in this browser: adding the second, then the chooser.
        for (const [index, account] of [handleOf(language), handleOf(language === "en" ? "fr" : "en")].entries()) {
          await page.goto(`${server.issuer}/account?add=1`);
          await hydrated(page);
          expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(index === 0 ? t("account:titles.signIn") : t("account:signIn.addTitle"));
          if (index === 1) await audit(page, language, "account-add");
          await page.locator("#identifier").fill(account);
          await page.locator("#password").fill(PASSWORD);
          await page.getByRole("button", { name: t("account:signIn.submit"), exact: true }).click();
          await visibleText(page.getByText(t("account:notices.signed-in")));
        }
        await page.goto(`${server.issuer}/account?choose=1`);
        await hydrated(page);
        expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(t("account:chooser.title"));
        await visibleText(page.getByText(t("account:chooser.continueAs", { handle })));
        await audit(page, language, "account-chooser");

        expect(hydrationErrors).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }
});

describe("how the language is chosen", { timeout: E2E_TIMEOUT }, () => {
  it("the app's ui_locales win over Accept-Language; the picker wins over both, and is remembered", async () => {
    const de = translatorFor("de");
    const fr = translatorFor("fr");
    const { context, page } = await browserIn("fr");
    try {
      const pushed = await pushRequest(loopback, app.redirectUri, { ui_locales: "tlh de-CH fr" });
      await page.goto(pushed.authorizeUrl);
      await hydrated(page);
      await expectLanguage(page, "de");
      expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(de("consent:heading.sign-in", { who: de("consent:identity.thisDevice") }));
      // The person picks French on this screen: it beats the app's German here, and the form keeps working.
      const picker = page.getByRole("navigation", { name: de("common:language.label") });
      expect(await picker.getByRole("link", { name: "Deutsch" }).getAttribute("aria-current")).toBe("true");
      await picker.getByRole("link", { name: "Français" }).click();
      await page.waitForURL(/lng=fr/);
      await expectLanguage(page, "fr");
      expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(fr("consent:heading.sign-in", { who: fr("consent:identity.thisDevice") }));
      await page.locator('input[name="identifier"]').fill(handleOf("fr"));
      await page.locator('input[name="password"]').fill(PASSWORD);
      await page.getByRole("button", { name: fr("consent:allow"), exact: true }).click();
      expect((await callbackParams(page, pushed.redirectUri)).get("code")).toBeTruthy();
      const cookies = await context.cookies(server.issuer);
      expect(cookies.find((cookie) => cookie.name === "atrium_lang")).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    } finally {
      await context.close();
    }
  });

  it("without JavaScript: the picker is plain links, and the choice is remembered across pages and over Accept-Language", async () => {
    const ja = translatorFor("ja");
    const es = translatorFor("es");
    const { context, page } = await browserIn("en-GB", { javaScriptEnabled: false });
    try {
      await page.goto(`${server.issuer}/account`);
      await expectLanguage(page, "en");
      await page.getByRole("navigation", { name: "Language" }).getByRole("link", { name: "日本語" }).click();
      await page.waitForURL(/lng=ja/);
      await expectLanguage(page, "ja");
      expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(ja("account:titles.signIn"));
      // Another page, no lng in its address: the cookie carries the choice.
      await page.goto(`${server.issuer}/no/such/page`);
      await expectLanguage(page, "ja");
      // A form post without JavaScript, answered in the chosen language.
      await page.goto(`${server.issuer}/account`);
      await page.locator('input[name="identifier"]').fill(handleOf("ja"));
      await page.locator('input[name="password"]').fill(PASSWORD);
      await page.getByRole("button", { name: ja("account:signIn.submit"), exact: true }).click();
      await visibleText(page.getByText(ja("account:notices.signed-in")));
      // Picking again replaces it.
      await page.getByRole("navigation", { name: ja("common:language.label") }).getByRole("link", { name: "Español" }).click();
      await page.goto(`${server.issuer}/account/sessions`);
      await expectLanguage(page, "es");
      expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(es("account:titles.sessions"));
    } finally {
      await context.close();
    }
  });

  it("the server's own answers speak the language too: the metadata lists what ships, JSON refusals and the entry's pages are translated", async () => {
    const metadata = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as { ui_locales_supported: string[] };
    expect(metadata.ui_locales_supported).toEqual([...LANGUAGES]);

    const refusal = await fetch(`${server.issuer}/account/passkey-auth?lng=ja`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Origin: server.issuer },
      body: JSON.stringify({ csrf_token: "x" }),
    });
    expect(refusal.status).toBe(400);
    expect(((await refusal.json()) as { error_description: string }).error_description).toBe(translatorFor("ja")("errors:passkey.malformed"));

    const tooLarge = await fetch(`${server.issuer}/account`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "Accept-Language": "pt-BR", Origin: server.issuer },
      body: "x".repeat(2 * 1024 * 1024),
    });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get("content-language")).toBe("pt-BR");
    const html = await tooLarge.text();
    expect(html).toContain('<html lang="pt-BR">');
    expect(html).toContain(translatorFor("pt-BR")("common:entry.tooMuchData.title"));
  });
});
