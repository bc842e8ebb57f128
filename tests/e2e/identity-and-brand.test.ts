import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { ClientHost } from "../helpers/client-host.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  expectAccessible,
  printFindings,
  callbackParams,
  contextOptions,
  E2E_TIMEOUT,
  hydrated,
  releaseBrowser,
  sharedBrowser,
  loopbackClientId,
  measureConsentLayout,
  PASSWORD,
  photograph,
  pushRequest,
  startAppCallback,
  visibleText,
  watchCsp,
  type AppCallback,
  type Findings,
} from "./support.ts";

/**
 * Issue 11 in a real browser: the consent screen names what was verified
 * (the app's host, or "an app on this device") before what the app claims,
 * and warns about an imitation; the operator's brand (name, logo, colour,
 * links) on every screen; Allow and Deny in view on a phone without
 * scrolling; the headings for each step and the prompt=login explanation;
 * error pages that say each thing once under the right tab title. Every
 * screen is checked with axe-core and photographed (test-results/screenshots/).
 */

const HANDLE = "alice.test";
const SERVICE = "Example Social";
const LOGO_URL = "https://brand.example/logo.svg";
/** The plain app's logo, on its own host. */
const APP_LOGO = "https://skyline.example/logo.svg";
const TERMS = "https://brand.example/terms";
const PRIVACY = "https://brand.example/privacy";
const SUPPORT = "mailto:help@brand.example";
const PRIMARY = "#0b6e4f";
const GENERIC = "atproto transition:generic";
/** A granular set a microblogging client asks for. */
const GRANULAR = [
  "atproto",
  "repo:app.bsky.feed.post",
  "repo:app.bsky.feed.like",
  "repo:app.bsky.feed.repost",
  "repo:app.bsky.graph.follow",
  "blob:image/*",
  "rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview",
  "rpc:app.bsky.actor.getProfile?aud=did:web:api.bsky.app%23bsky_appview",
].join(" ");
const IMPERSONATOR = "Bluesky (official app)";
const BRAND_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="14" fill="#0b6e4f"/><path d="M16 46V24l16-10 16 10v22z" fill="#fff"/></svg>`;

let server: TestServer;
let browser: Browser;
let app: AppCallback;
let impostorHost: ClientHost;
let plainHost: ClientHost;
let impostor: DpopClient;
let plain: DpopClient;
let loopback: DpopClient;
const findings: Findings = {};
const layouts: Record<string, unknown> = {};

beforeAll(async () => {
  [server, browser, app, impostorHost, plainHost] = await Promise.all([
    startTestServer({
      ATRIUM_SERVICE_NAME: SERVICE,
      ATRIUM_LOGO_URL: LOGO_URL,
      ATRIUM_PRIMARY_COLOR: PRIMARY,
      ATRIUM_TERMS_URL: TERMS,
      ATRIUM_PRIVACY_URL: PRIVACY,
      ATRIUM_SUPPORT_URL: SUPPORT,
    }),
    sharedBrowser(),
    startAppCallback(),
    ClientHost.start(),
    ClientHost.start(),
  ]);
  await createAccount(server, { handle: HANDLE, email: "alice@example.com", password: PASSWORD });
  // An app on an unrelated host that calls itself the official Bluesky app.
  impostorHost.serveMetadata(impostorHost.metadata({ authMethod: "none", clientName: IMPERSONATOR, overrides: { scope: GENERIC } }));
  plainHost.serveMetadata(plainHost.metadata({ authMethod: "none", clientName: "Skyline Photos", overrides: { scope: `${GENERIC} ${GRANULAR}`, logo_uri: APP_LOGO } }));
  impostor = new DpopClient(server.issuer, await generateDpopKey(), impostorHost.clientId);
  plain = new DpopClient(server.issuer, await generateDpopKey(), plainHost.clientId);
  loopback = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(GRANULAR));
}, E2E_TIMEOUT);

afterAll(async () => {
  await releaseBrowser(browser);
  await app?.stop();
  await impostorHost?.stop();
  await plainHost?.stop();
  await server?.stop();
  if (Object.keys(layouts).length) console.log("consent screen at 390×844 (page height, Allow's top and bottom, Deny's bottom):", JSON.stringify(layouts, null, 2));
  printFindings(findings);
});

/** A browser context; axe-core is injected as a script, which only a context that bypasses the CSP allows. */
async function newContext(options: { bypassCSP?: boolean; javaScriptEnabled?: boolean } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(contextOptions({ bypassCSP: true, ...options }));
  // The operator's logo is on another host: the browser gets it from here.
  await context.route(LOGO_URL, (route) => route.fulfill({ status: 200, contentType: "image/svg+xml", body: BRAND_LOGO }));
  await context.route(APP_LOGO, (route) => route.fulfill({ status: 200, contentType: "image/svg+xml", body: BRAND_LOGO }));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return { context, page };
}

const audit = (page: Page, name: string) => expectAccessible(page, name, findings);

async function signInOnAccountPage(page: Page) {
  await page.goto(`${server.issuer}/account`);
  await page.getByLabel("Handle or email").fill(HANDLE);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/notice=signed-in/);
}

/** The brand shows on this page: the name and logo in the header, the links in the footer, the name in the tab title, the colour on buttons. */
async function expectBrand(page: Page, where: string) {
  const header = page.getByRole("banner");
  expect(await visibleText(header), where).toContain(SERVICE);
  expect(await header.locator(`img[src="${LOGO_URL}"]`).count(), where).toBe(1);
  const footer = page.getByRole("navigation", { name: `About ${SERVICE}` });
  expect(await footer.getByRole("link", { name: /Terms of service/ }).getAttribute("href"), where).toBe(TERMS);
  expect(await footer.getByRole("link", { name: /Privacy policy/ }).getAttribute("href"), where).toBe(PRIVACY);
  expect(await footer.getByRole("link", { name: /Help and support/ }).getAttribute("href"), where).toBe(SUPPORT);
  expect(await page.title(), where).toMatch(new RegExp(` · ${SERVICE}$`));
  // The primary colour reaches the page through /brand.css (the CSP allows no inline style).
  const brand = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue("--brand").trim());
  expect(brand, where).toBe(PRIMARY);
}

describe("who is asking: verified first, claims second", { timeout: E2E_TIMEOUT }, () => {
  it("an app calling itself 'Bluesky (official app)' on an unrelated host: the host heads the screen, the name is its claim, a caution says why", async () => {
    const { context, page } = await newContext();
    const pushed = await pushRequest(impostor, impostorHost.redirectUri, { scope: GENERIC });
    await page.goto(pushed.authorizeUrl);
    const heading = await visibleText(page.getByRole("heading", { level: 1 }));
    const host = new URL(impostorHost.clientId).host;
    expect(heading).toBe(`Sign in to give ${host} access to your account`);
    expect(heading).not.toMatch(/Bluesky/);
    const main = page.locator("main");
    expect(await main.innerText()).toContain(`It calls itself “${IMPERSONATOR}”.`);
    expect(await main.innerText()).toMatch(/The name comes from the app; Example Social checked only its address/);
    const caution = page.getByRole("region", { name: /Caution: this app may not be what it claims/ });
    expect(await visibleText(caution)).toContain("Its name suggests Bluesky or an official app, but nothing confirms that");
    expect(await caution.innerText()).toContain(host);
    // The broad permission no longer lends the app an official air.
    expect(await main.innerText()).not.toMatch(/like the official app/);
    expect(await visibleText(page.getByText("Act on your account in almost every way"))).toBeTruthy();
    await expectBrand(page, "consent");
    await audit(page, "issue11-consent-impersonator");
    await context.close();
  });

  it("a loopback app is 'an app on this device', told apart by where it receives the answer", async () => {
    const { context, page } = await newContext();
    const pushed = await pushRequest(loopback, app.redirectUri, { scope: GRANULAR });
    await page.goto(pushed.authorizeUrl);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Sign in to give an app on this device access to your account");
    const main = await page.locator("main").innerText();
    expect(main).toContain("A program on this device, not a website.");
    expect(main).toContain(`It receives the answer at ${app.redirectUri}.`);
    expect(await page.getByRole("region", { name: /Caution: this app may not/ }).count()).toBe(0);
    // Deleting marked Caution, in view; plain words before technical names in the folded details (issue 19).
    expect(main).toMatch(/Caution: it can delete your posts, likes, reposts, and follows/);
    await page.getByText("See all permissions in detail").click();
    expect(await page.locator("main").innerText()).toMatch(/Get timeline\s+app\.bsky\.feed\.getTimeline/);
    await audit(page, "issue11-consent-loopback-granular");
    await context.close();
  });
});

describe("a consent screen that fits a phone (390×844)", { timeout: E2E_TIMEOUT }, () => {
  const cases = [
    { name: "web-generic", client: () => plain, redirect: () => plainHost.redirectUri, scope: GENERIC },
    { name: "loopback-granular", client: () => loopback, redirect: () => app.redirectUri, scope: GRANULAR },
  ];

  it("Allow and Deny are in the window without scrolling, light and dark, signed out and signed in", async () => {
    const { context, page } = await newContext();
    for (const signedIn of [false, true]) {
      if (signedIn) await signInOnAccountPage(page);
      for (const { name, client, redirect, scope } of cases) {
        const pushed = await pushRequest(client(), redirect(), { scope, prompt: "consent" });
        await page.goto(pushed.authorizeUrl);
        for (const colorScheme of ["light", "dark"] as const) {
          await page.emulateMedia({ colorScheme });
          const layout = await measureConsentLayout(page);
          const label = `${name}-${signedIn ? "signed-in" : "signed-out"}`;
          if (colorScheme === "light") layouts[label] = layout;
          expect(layout.viewportHeight).toBe(844);
          expect(layout.allowTop, `${label} ${colorScheme}: ${JSON.stringify(layout)}`).toBeGreaterThanOrEqual(0);
          expect(layout.allowBottom, `${label} ${colorScheme}: ${JSON.stringify(layout)}`).toBeLessThanOrEqual(layout.viewportHeight);
          expect(layout.denyBottom, `${label} ${colorScheme}: ${JSON.stringify(layout)}`).toBeLessThanOrEqual(layout.viewportHeight);
          // Playwright's own check: the button is what a tap at its centre reaches (nothing covers it).
          await page.getByRole("button", { name: "Allow", exact: true }).click({ trial: true });
          await photograph(page, `issue11-phone-${label}-${colorScheme}`, { width: 390, height: 844 });
        }
        await page.emulateMedia({ colorScheme: "light" });
      }
    }
    // Broad access is summarised, its details folded (a <details>, open without JavaScript too).
    const pushed = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC, prompt: "consent" });
    await page.goto(pushed.authorizeUrl);
    const includes = page.getByText("Change or delete any of your records, your profile included");
    expect(await includes.isVisible()).toBe(false);
    await page.getByText("What this includes").click();
    expect(await visibleText(includes)).toBeTruthy();
    await audit(page, "issue11-consent-signed-in-generic-open");
    await context.close();
  });

  it("NSIDs wrap between their parts, never inside a word", async () => {
    const { context, page } = await newContext();
    await page.setViewportSize({ width: 320, height: 700 });
    const pushed = await pushRequest(loopback, app.redirectUri, { scope: GRANULAR });
    await page.goto(pushed.authorizeUrl);
    const breaks = await page.evaluate(() => {
      // Technical details (the scope, the client_id, the redirect URI) open too.
      for (const details of document.querySelectorAll("details")) details.open = true;
      // Every line of every technical name, as the browser laid it out: each must end at a dot, slash, colon (…) or a space, or stop before a %-escape.
      const found: string[] = [];
      for (const element of document.querySelectorAll<HTMLElement>("main .wrap-break-word")) {
        const text = element.textContent ?? "";
        const range = document.createRange();
        const node = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
        let lastTop: number | undefined;
        let previous = "";
        for (let current = node.nextNode(); current; current = node.nextNode()) {
          for (let i = 0; i < (current.textContent ?? "").length; i++) {
            range.setStart(current, i);
            range.setEnd(current, i + 1);
            const top = Math.round(range.getBoundingClientRect().top);
            const character = current.textContent?.[i] ?? "";
            if (lastTop !== undefined && top > lastTop + 2 && !/[./:?&#=+\s]/.test(previous) && character !== "%") found.push(`${text} (before "${current.textContent?.[i]}")`);
            lastTop = top;
            previous = current.textContent?.[i] ?? "";
          }
        }
      }
      return found;
    });
    expect(breaks).toEqual([]);
    await context.close();
  });

  it("a name that fits on a line is never split across two (issue 28, item 21), at every width from 300 to 420 px", async () => {
    const { context, page } = await newContext();
    const split: string[] = [];
    for (const client of [plain, loopback]) {
      const pushed = client === plain ? await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC }) : await pushRequest(loopback, app.redirectUri, { scope: GRANULAR });
      await page.goto(pushed.authorizeUrl);
      for (let width = 300; width <= 420; width += 6) {
        await page.setViewportSize({ width, height: 844 });
        split.push(
          ...(await page.evaluate((width) => {
            const found: string[] = [];
            for (const element of document.querySelectorAll<HTMLElement>("main .wrap-break-word")) {
              // Technical names only (an app's name wraps at its spaces), and only those shown (not in a closed fold).
              if (/\s/.test(element.textContent ?? "") || !element.checkVisibility()) continue;
              // Its lines, as laid out: the distinct tops of its characters.
              const range = document.createRange();
              range.selectNodeContents(element);
              const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
              if (tops.size < 2) continue;
              // Its width on one line, against the width of the block it stands in.
              const probe = element.cloneNode(true) as HTMLElement;
              probe.style.cssText = "position:absolute;visibility:hidden;white-space:nowrap;display:inline-block;max-width:none";
              element.parentElement!.append(probe);
              const natural = probe.getBoundingClientRect().width;
              probe.remove();
              let block: HTMLElement = element.parentElement!;
              while (getComputedStyle(block).display.startsWith("inline")) block = block.parentElement!;
              const style = getComputedStyle(block);
              const available = block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
              if (natural <= available) found.push(`${element.textContent} at ${width} px (${Math.round(natural)} ≤ ${Math.round(available)})`);
            }
            return found;
          }, width)),
        );
      }
    }
    expect(split).toEqual([]);
    await context.close();
  });

  it("a logo that does not load gives way to the neutral mark, the operator's and the app's", async () => {
    const { context, page } = await newContext();
    for (const logo of [LOGO_URL, APP_LOGO]) {
      await context.unroute(logo);
      await context.route(logo, (route) => route.abort());
    }
    const pushed = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC });
    await page.goto(pushed.authorizeUrl);
    await hydrated(page);
    // Both failed before the page was hydrated: no image is left, and the marks stand in their places.
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.getByRole("banner").locator("svg").count()).toBe(1);
    expect(await visibleText(page.locator("main"))).toContain("It calls itself “Skyline Photos”.");
    await audit(page, "consent-logos-failed");
    await context.close();
  });
});

describe("the words of each step", { timeout: E2E_TIMEOUT }, () => {
  it("signed in, the heading asks to give access (no 'Sign in'); prompt=login says why the password is asked again and fills in the account", async () => {
    const { context, page } = await newContext();
    await signInOnAccountPage(page);
    const host = new URL(plainHost.clientId).host;
    const first = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC });
    await page.goto(first.authorizeUrl);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(`Give ${host} access to your account?`);
    expect(await visibleText(page.getByText(`Signed in as @${HANDLE}`))).toBeTruthy();
    expect(await page.title()).toBe(`Allow access: ${host} · ${SERVICE}`);
    await audit(page, "issue11-consent-signed-in");

    const fresh = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC, prompt: "login" });
    await page.goto(fresh.authorizeUrl);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(`Sign in again to give ${host} access to your account`);
    expect(await visibleText(page.getByText(/The app asked you to sign in again, even though this browser is signed in/))).toBeTruthy();
    expect(await page.getByLabel("Handle or email").inputValue()).toBe(HANDLE);
    // The explanation belongs to the sign-in fields.
    expect(await page.getByRole("group", { name: "Sign in" }).getAttribute("aria-describedby")).toBe("fresh-sign-in");
    await audit(page, "issue11-consent-prompt-login");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    expect((await callbackParams(page, fresh.redirectUri)).get("code")).toBeTruthy();
    await context.close();
  });

  it("an answered request goes back to the app; a link whose app is unknown gets an error page that says what to do once, under its own tab title, with the brand", async () => {
    const { context, page } = await newContext();
    const pushed = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC });
    await page.goto(pushed.authorizeUrl);
    await page.getByRole("button", { name: "Deny", exact: true }).click();
    await callbackParams(page, pushed.redirectUri);
    // Answered already: back to the app (docs/decisions/0020).
    await page.goto(pushed.authorizeUrl);
    expect((await callbackParams(page, pushed.redirectUri)).get("error")).toBe("access_denied");
    const unknown = new URL(pushed.authorizeUrl);
    unknown.searchParams.set("request_uri", "urn:ietf:params:oauth:request_uri:req-never-issued");
    const response = await page.goto(unknown.href);
    expect(response?.status()).toBe(400);
    const title = await visibleText(page.getByRole("heading", { level: 1 }));
    expect(await page.title()).toBe(`${title} · ${SERVICE}`);
    const paragraphs = await page.locator("main p").allInnerTexts();
    const sentences = paragraphs.flatMap((paragraph) => paragraph.split(/(?<=\.)\s+/)).filter((sentence) => /^Go back/.test(sentence));
    expect(sentences.length, JSON.stringify(paragraphs)).toBe(1);
    await expectBrand(page, "error page");
    await audit(page, "issue11-error-answered");

    await page.goto(`${server.issuer}/no/such/page`);
    expect(await page.title()).toBe(`Page not found · ${SERVICE}`);
    await expectBrand(page, "not found page");
    await context.close();
  });
});

describe("the operator's brand on every screen", { timeout: E2E_TIMEOUT }, () => {
  it("sign-in, account pages and the connected apps (verified host first, the claim second, the caution)", async () => {
    const { context, page } = await newContext();
    // Allow the impersonating app, so that the connected apps page lists it.
    const pushed = await pushRequest(impostor, impostorHost.redirectUri, { scope: GENERIC });
    await page.goto(pushed.authorizeUrl);
    await page.getByLabel("Handle or email").fill(HANDLE);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    await callbackParams(page, pushed.redirectUri);

    await page.goto(`${server.issuer}/account/apps`);
    await expectBrand(page, "connected apps");
    const host = new URL(impostorHost.clientId).host;
    const card = page.getByRole("article", { name: host });
    expect(await visibleText(card)).toContain(`It calls itself “${IMPERSONATOR}”.`);
    expect(await visibleText(card.getByRole("region", { name: /Caution: this app may not be what it claims/ }))).toContain("Bluesky");
    await audit(page, "issue11-account-apps");

    for (const [path, name] of [
      ["/account", "overview"],
      ["/account/sessions", "sessions"],
      ["/account/passkeys", "passkeys"],
      ["/account/password", "password"],
    ] as const) {
      await page.goto(`${server.issuer}${path}`);
      await expectBrand(page, path);
      if (name === "overview") await audit(page, "issue11-account-overview");
    }

    await context.clearCookies();
    await page.goto(`${server.issuer}/account`);
    await visibleText(page.getByRole("heading", { name: "Sign in to your account" }));
    expect(await page.title()).toBe(`Sign in to your account · ${SERVICE}`);
    await expectBrand(page, "account sign-in");
    await audit(page, "issue11-account-sign-in");

    await page.goto(server.issuer);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe(SERVICE);
    await audit(page, "issue11-start");
    await context.close();
  });

  it("with the real CSP: the logo loads, /brand.css applies, nothing is refused", async () => {
    const { context, page } = await newContext({ bypassCSP: false });
    const csp = watchCsp(page);
    const pushed = await pushRequest(plain, plainHost.redirectUri, { scope: GENERIC });
    await page.goto(pushed.authorizeUrl);
    const logo = page.getByRole("banner").locator(`img[src="${LOGO_URL}"]`);
    await logo.waitFor();
    await page.waitForFunction((src) => [...document.images].some((image) => image.src === src && image.complete && image.naturalWidth > 0), LOGO_URL);
    const allow = page.getByRole("button", { name: "Allow", exact: true });
    expect(await allow.evaluate((button) => getComputedStyle(button).backgroundColor)).toBe("rgb(11, 110, 79)");
    expect(await allow.evaluate((button) => getComputedStyle(button).color)).toBe("rgb(255, 255, 255)");
    const sheet = await page.request.get(`${server.issuer}${await page.locator('link[href^="/brand.css"]').getAttribute("href")}`);
    expect(sheet.status()).toBe(200);
    expect(sheet.headers()["content-type"]).toMatch(/^text\/css/);
    expect(sheet.headers()["cache-control"]).toMatch(/immutable/);
    expect(csp).toEqual([]);
    await context.close();
  });
});
