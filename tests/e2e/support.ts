/**
 * Shared pieces of the browser tests: Debian's Chromium through
 * playwright-core, a loopback "app" that receives the authorization
 * redirect, pushed requests, axe-core, screenshots, and a CSP watcher.
 */
import { mkdirSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { expect } from "vitest";
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page } from "playwright-core";
import { createPkce, type DpopClient } from "../../scripts/lib/dpop-client.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
export const SCREENSHOT_DIR = path.join(ROOT, "test-results", "screenshots");
const AXE_PATH = path.join(ROOT, "node_modules", "axe-core", "axe.min.js");

/** Browser tests drive real pages: a safety net against a hang (never a speed check), as generous as any test's. */
export const E2E_TIMEOUT = 180_000;

export const PASSWORD = "correct horse battery";

/**
 * Debian's Chromium headless shell: Blink and V8 of the same Chromium release as Debian's `chromium`, without the
 * desktop browser around them (its spare renderers, its browser-process work), which cost the browser tests 40 % more
 * CPU for the same pages (docs/decisions/0036, third amendment). `.ci/run` installs it when missing.
 */
const CHROMIUM = "/usr/bin/chromium-headless-shell";

/** Where the test process keeps its Chromium: Vitest may evaluate this module again for each file; the process stays. */
const processWide = globalThis as { atriumTestBrowser?: Promise<Browser> };

/**
 * The test process's Chromium, launched on first use and shared by the files the process runs one after another
 * (vitest.config.ts: a fork runs file after file). A file's state lives in the contexts it makes (cookies, storage,
 * permissions), which `releaseBrowser` closes at the file's end; a launch was a second of CPU per file
 * (docs/decisions/0036, amendment). Playwright closes the browser when the process exits; one that crashed or was
 * closed is launched again on next use.
 */
export function sharedBrowser(): Promise<Browser> {
  processWide.atriumTestBrowser ??= chromium
    .launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] })
    .then(
      (browser) => {
        browser.on("disconnected", () => delete processWide.atriumTestBrowser);
        return browser;
      },
      (error: unknown) => {
        delete processWide.atriumTestBrowser;
        throw error;
      },
    );
  return processWide.atriumTestBrowser;
}

/** A file's end: closes every context the file left open; the browser stays for the process's next file. */
export async function releaseBrowser(browser: Browser | undefined): Promise<void> {
  await Promise.all(browser?.contexts().map((context) => context.close()) ?? []);
}

/** Context defaults: a phone-sized window unless a test says otherwise. */
export function contextOptions(options: BrowserContextOptions = {}): BrowserContextOptions {
  return { viewport: { width: 390, height: 844 }, locale: "en-GB", ...options };
}

/** The atproto loopback client: metadata derived from the client_id, redirects to 127.0.0.1 on any port. */
export function loopbackClientId(scope: string): string {
  return `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope })}`;
}

export type AppCallback = { redirectUri: string; stop(): Promise<void> };

/** The app's side of the redirect: a loopback HTTP server answering /callback with a small page. */
export async function startAppCallback(): Promise<AppCallback> {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html lang="en"><head><title>App callback</title></head><body><main><h1>Back in the app</h1><p>${req.url?.length ?? 0}</p></main></body></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type PushedRequest = { authorizeUrl: string; verifier: string; state: string; redirectUri: string };

/** PAR for `client`; returns the consent screen's URL. */
export async function pushRequest(client: DpopClient, redirectUri: string, params: Record<string, string> = {}): Promise<PushedRequest> {
  const pkce = createPkce();
  const state = `state-${Math.random().toString(36).slice(2)}`;
  const par = await client.pushAuthorizationRequest({
    redirect_uri: redirectUri,
    scope: "atproto transition:generic",
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    ...params,
  });
  if (par.status !== 201) throw new Error(`PAR failed (${par.status}): ${JSON.stringify(par.body)}`);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), verifier: pkce.verifier, state, redirectUri };
}

/** Waits until the page has landed on the app's callback and returns its parameters (query or fragment). */
export async function callbackParams(page: Page, redirectUri: string): Promise<URLSearchParams> {
  await page.waitForURL((url) => url.href.startsWith(redirectUri), { timeout: 15_000 });
  const url = new URL(page.url());
  return url.search ? url.searchParams : new URLSearchParams(url.hash.slice(1));
}

/** Collects CSP violations the page reports (console "Refused to …" and securitypolicyviolation events). */
export function watchCsp(page: Page): string[] {
  const violations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
  });
  return violations;
}

/**
 * A fresh context and page, recording what the page's CSP refused (`csp`). axe-core is injected as a script: the
 * context bypasses the CSP for that (violations are still watched).
 */
export async function watchedPage(browser: Browser, javaScriptEnabled = true): Promise<{ context: BrowserContext; page: Page; csp: string[] }> {
  const context = await browser.newContext(contextOptions({ bypassCSP: true, javaScriptEnabled }));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return { context, page, csp: watchCsp(page) };
}

/** Waits for React to have hydrated the page (the passkey button and JS forms only work then). */
export async function hydrated(page: Page): Promise<void> {
  await page.waitForFunction(() => Boolean((window as unknown as { __remixContext?: unknown }).__remixContext) && document.readyState === "complete");
  // Effects run right after hydration; give them a tick.
  await page.waitForTimeout(50);
}

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: string[] };

/**
 * The axe rules whose outcome depends on the colours alone. The dark scheme changes colours only (app/styles: the
 * `prefers-color-scheme: dark` rules set colour properties, nothing else), so a page audited in full in one scheme
 * needs only these in the other.
 */
const COLOUR_RULES = ["color-contrast", "link-in-text-block"];

/**
 * Runs axe-core and returns only serious and critical violations: every rule of WCAG 2.x A/AA and best practice, or
 * the colour rules only (for a page already audited in full in the other colour scheme). The context needs bypassCSP.
 */
export async function seriousAxeViolations(page: Page, rules: "all" | "colours" = "all"): Promise<AxeViolation[]> {
  // A streamed page can show its text before its stylesheet has loaded; measured then, every link is an unstyled
  // inline box (axe's target-size once flagged a whole page so, after a form post). The load event waits for it.
  await page.waitForLoadState("load");
  if (!(await page.evaluate(() => "axe" in window))) await page.addScriptTag({ path: AXE_PATH });
  const runOnly = rules === "all" ? { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] } : { type: "rule", values: COLOUR_RULES };
  const results = await page.evaluate(async (runOnly) => {
    const axe = (window as unknown as { axe: { run(context: Document, options: unknown): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] }> } }).axe;
    // Only violations are read: axe then skips gathering the details of what passed (its "resultTypes" option).
    const result = await axe.run(document, { runOnly, resultTypes: ["violations"] });
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      nodes: violation.nodes.map((node) => JSON.stringify(node.target)),
    }));
  }, runOnly);
  return results.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
}

const SIZES = { narrow: { width: 390, height: 844 }, wide: { width: 1280, height: 900 } } as const;

/**
 * Photographs are for the people who review the screens, not assertions (what a test checks, it checks in the page:
 * positions, focus, text, axe): written under test-results/screenshots/ when ATRIUM_TEST_PHOTOGRAPHS=1
 * (`npm run test:photographs`), skipped by `npm test`, where they cost an eighth of the browser tests' CPU
 * (docs/decisions/0036, amendment).
 */
export const PHOTOGRAPHS = process.env.ATRIUM_TEST_PHOTOGRAPHS === "1";

/**
 * Photographs the screen as a person sees it at `viewport`: the first
 * screen (`<file>-first-screen.png`, what shows before any scrolling) and the
 * whole page (`<file>.png`). The whole page is taken with the window as
 * tall as the page, so that what sticks to the window's bottom (the consent
 * screen's Allow and Deny) stands where it belongs instead of mid-page.
 */
export async function photograph(page: Page, file: string, viewport: { width: number; height: number }): Promise<void> {
  if (!PHOTOGRAPHS) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.setViewportSize(viewport);
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${file}-first-screen.png`), animations: "disabled" });
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: viewport.width, height: Math.max(viewport.height, height) });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${file}.png`), animations: "disabled" });
  await page.setViewportSize(viewport);
}

/**
 * Waits for the event rather than a guessed time: every animation and CSS transition the page runs has finished (the
 * buttons' colour transitions after a change of colour scheme; the CSS does not drop them under
 * prefers-reduced-motion, so emulating it would not help). document.getAnimations() updates the style first (Web
 * Animations, "getAnimations()"), so a transition that the new scheme starts is already in its list; the loop catches
 * one that a finished one started. An endless animation would be waited for forever, so it is left out (none exists).
 */
async function transitionsSettled(page: Page): Promise<void> {
  await page.evaluate(async () => {
    for (;;) {
      const running = document
        .getAnimations()
        .filter((animation) => animation.playState === "running" && animation.effect?.getComputedTiming().endTime !== Infinity);
      if (running.length === 0) return;
      await Promise.allSettled(running.map((animation) => animation.finished));
    }
  });
}

/**
 * Audits the screen the page shows: axe-core's serious and critical
 * violations (every rule in light, the colour rules again in dark), and, with PHOTOGRAPHS, screenshots narrow
 * (390×844) and wide (1280×900) under test-results/screenshots/<name>-<scheme>-<size>.png (the
 * whole page) and …-first-screen.png (before scrolling).
 */
export async function auditScreen(page: Page, name: string): Promise<Record<string, AxeViolation[]>> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const found: Record<string, AxeViolation[]> = {};
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    await transitionsSettled(page);
    for (const [size, viewport] of Object.entries(SIZES)) {
      await photograph(page, `${name}-${colorScheme}-${size}`, viewport);
    }
    // axe audits the wide window (the phone-sized one is audited screen by screen in languages and phone-first).
    await page.setViewportSize(SIZES.wide);
    const violations = await seriousAxeViolations(page, colorScheme === "light" ? "all" : "colours");
    if (violations.length) found[colorScheme] = violations;
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(SIZES.narrow);
  return found;
}

/** Per screen, what auditScreen found: a test file prints the screens with findings at its end. */
export type Findings = Record<string, Record<string, AxeViolation[]>>;

/** At a test file's end: the screens axe found anything on (the assertions already failed those tests). */
export function printFindings(findings: Findings): void {
  const summary = Object.entries(findings).filter(([, found]) => Object.keys(found).length);
  if (summary.length) console.log("axe findings:", JSON.stringify(Object.fromEntries(summary), null, 2));
}

/** auditScreen, then the rule every screen keeps: no serious or critical axe finding, light and dark. */
export async function expectAccessible(page: Page, name: string, findings?: Findings): Promise<void> {
  const found = await auditScreen(page, name);
  if (findings) findings[name] = found;
  expect(found, `${name}: ${JSON.stringify(found, null, 2)}`).toEqual({});
}

/** The gzip size of every script the page loaded: what a visitor downloads (at most 120 kB on the consent route: docs/testing.md, "Browser tests"). */
export function measureScripts(page: Page): () => Promise<{ total: number; files: Record<string, number> }> {
  const pending: Promise<[string, number]>[] = [];
  page.on("response", (response) => {
    if (response.request().resourceType() !== "script") return;
    pending.push(response.body().then((body) => [new URL(response.url()).pathname, gzipSync(body, { level: 9 }).length] as [string, number]));
  });
  return async () => {
    const files = Object.fromEntries(await Promise.all(pending));
    return { total: Object.values(files).reduce((sum, size) => sum + size, 0), files };
  };
}

export type PhoneLayout = { pageHeight: number; allowTop: number; allowBottom: number; denyBottom: number; viewportHeight: number };

/** Where Allow and Deny stand in the window, and how tall the page is, without scrolling (the consent screen on a phone). */
export async function measureConsentLayout(page: Page): Promise<PhoneLayout> {
  await page.evaluate(() => window.scrollTo(0, 0));
  return page.evaluate(() => {
    const button = (value: string) => document.querySelector<HTMLButtonElement>(`button[name="decision"][value="${value}"]`)!.getBoundingClientRect();
    const allow = button("allow");
    return { pageHeight: document.documentElement.scrollHeight, allowTop: Math.round(allow.top), allowBottom: Math.round(allow.bottom), denyBottom: Math.round(button("deny").bottom), viewportHeight: window.innerHeight };
  });
}

/** Waits for an element to be visible (vitest has no Playwright locator matchers) and returns its text. */
export async function visibleText(locator: Locator, timeout = 10_000): Promise<string> {
  await locator.first().waitFor({ state: "visible", timeout });
  return locator.first().innerText();
}

/**
 * Waits for the element with id `expected` to hold the focus, and returns the id of whatever holds it then (after
 * `timeout` if it never comes). HTML runs autofocus at the page's next rendering update, after the parser has already
 * shown the field, so reading the focus as soon as the field is visible races it.
 */
export async function focusedId(page: Page, expected: string, timeout = 10_000): Promise<string> {
  await page.waitForFunction((id) => document.activeElement?.id === id, expected, { timeout }).catch(() => undefined);
  return page.evaluate(() => document.activeElement?.id ?? "");
}

/** Waits for `locator` to hold the focus (a notice focused on arrival), and says whether it does. */
export async function holdsFocus(locator: Locator, timeout = 10_000): Promise<boolean> {
  const element = await locator.first().elementHandle({ timeout });
  await locator.page().waitForFunction((target) => target === document.activeElement, element, { timeout }).catch(() => undefined);
  return locator.first().evaluate((target) => target === document.activeElement);
}

/** A new context (phone-sized unless `options` say otherwise) signed in to the account area as `handle` with PASSWORD. */
export async function signedInToAccountArea(browser: Browser, issuer: string, handle: string, options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(contextOptions(options));
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(`${issuer}/account`);
  await page.getByLabel("Handle or email").fill(handle);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(/notice=signed-in/);
  return { context, page };
}

/** A server that sends email, with the shared browser and accounts of its own: what the account-page tests start from. */
export type MailingServer = { server: TestServer; smtp: TestSmtp; browser: Browser; accounts: Record<string, { did: string; handle: string }>; close(): Promise<void> };

/**
 * A server whose email goes to a real local SMTP server, the process's shared browser, and an account `<name>.test`
 * (`<name>@example.com`, PASSWORD) for each name. `close` releases the browser's contexts and stops both servers.
 */
export async function mailingServer(names: readonly string[]): Promise<MailingServer> {
  const smtp = await startSmtpServer();
  const [server, browser] = await Promise.all([startTestServer({ ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>" }), sharedBrowser()]);
  const accounts: MailingServer["accounts"] = {};
  for (const name of names) accounts[name] = await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD });
  return {
    server,
    smtp,
    browser,
    accounts,
    async close() {
      await releaseBrowser(browser);
      await server.stop();
      await smtp.stop();
    },
  };
}
