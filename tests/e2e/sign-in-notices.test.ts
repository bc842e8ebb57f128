import { readFileSync } from "node:fs";
import type { ParsedMail } from "mailparser";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LANGUAGES } from "../../app/i18n/languages.ts";
import { E2E_TIMEOUT, expectAccessible, hydrated, mailingServer, PASSWORD, printFindings, signedInToAccountArea, visibleText, type Findings, type MailingServer } from "./support.ts";

/**
 * The one-click link of a new-sign-in email and the setting (docs/decisions/0056) in a real browser, phone-sized:
 * the link's page with and without JavaScript (signed in already, or signing in on it first), the button that signs
 * the other browser out, the setting on the signed-in browsers page; every shipped language; axe light and dark.
 */

let mailing: MailingServer;
const findings: Findings = {};

beforeAll(async () => {
  mailing = await mailingServer(["nora", "otto", "pia"]);
}, E2E_TIMEOUT);

afterAll(async () => {
  printFindings(findings);
  await mailing?.close();
});

const toAccount = (name: string) => (mail: ParsedMail) => (mail.to && "text" in mail.to ? mail.to.text : "") === `${name}@example.com`;

function linkIn(mail: ParsedMail): string {
  const link = /https?:\/\/\S+\/account\/end\?token=end-[A-Za-z0-9_-]+/.exec(mail.text ?? "")?.[0];
  if (!link) throw new Error(`no end link in: ${mail.text}`);
  return link;
}

/** Signs `name` in in two phone-sized browsers (the first is the account's first: told of nothing); the second's email's link. */
async function twoBrowsers(name: string, javaScriptEnabled: boolean): Promise<{ first: { context: BrowserContext; page: Page }; second: { context: BrowserContext; page: Page }; link: string }> {
  const options = { javaScriptEnabled, bypassCSP: true };
  const first = await signedInToAccountArea(mailing.browser, mailing.server.issuer, `${name}.test`, options);
  const second = await signedInToAccountArea(mailing.browser, mailing.server.issuer, `${name}.test`, options);
  const [mail] = await mailing.smtp.received(toAccount(name), 1);
  return { first, second, link: linkIn(mail!) };
}

describe("the link of a new-sign-in email", { timeout: E2E_TIMEOUT }, () => {
  it("with JavaScript, in a browser signed in a moment ago: says what ends, and the button signs the other browser out", async () => {
    const { first, second, link } = await twoBrowsers("nora", true);
    const { page } = first;
    await page.goto(link);
    await hydrated(page);
    expect(await visibleText(page.getByRole("heading", { level: 1 }))).toBe("Sign out this browser");
    await visibleText(page.getByText("signed in to @nora.test"));
    await expectAccessible(page, "end-link", findings);
    await page.getByRole("button", { name: "Sign out this browser" }).click();
    await visibleText(page.getByText("Done: that browser is signed out."));
    await expectAccessible(page, "end-link-done", findings);
    await second.page.goto(`${mailing.server.issuer}/account/sessions`);
    await visibleText(second.page.getByLabel("Handle or email"));
    // Opened again: used.
    await page.goto(link);
    await visibleText(page.getByText("This link was already used."));
    await expectAccessible(page, "end-link-used", findings);
    await first.context.close();
    await second.context.close();
  });

  it("without JavaScript, in a browser not signed in: signs in as the account on the page first, then the button", async () => {
    const { first, second, link } = await twoBrowsers("otto", false);
    const context = await mailing.browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(link);
    await visibleText(page.getByText("To do this, sign in as @otto.test first."));
    await page.getByLabel("Password", { exact: true }).fill("not the password");
    await page.getByRole("button", { name: "Sign in and continue" }).click();
    await visibleText(page.getByText("That password is not right."));
    await page.getByLabel("Password", { exact: true }).fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in and continue" }).click();
    await page.getByRole("button", { name: "Sign out this browser" }).click();
    await visibleText(page.getByText("Done: that browser is signed out."));
    await second.page.goto(`${mailing.server.issuer}/account/sessions`);
    await visibleText(second.page.getByLabel("Handle or email"));
    for (const opened of [first.context, second.context, context]) await opened.close();
  });
});

describe("the setting and every language", { timeout: E2E_TIMEOUT }, () => {
  for (const javaScriptEnabled of [true, false]) {
    it(`turns the emails off and on again on the signed-in browsers page (${javaScriptEnabled ? "with" : "without"} JavaScript)`, async () => {
      const { context, page } = await signedInToAccountArea(mailing.browser, mailing.server.issuer, "pia.test", { javaScriptEnabled, bypassCSP: true });
      await page.goto(`${mailing.server.issuer}/account/sessions`);
      if (javaScriptEnabled) await hydrated(page);
      const box = page.getByLabel("Email me when a new browser or app signs in");
      expect(await box.isChecked()).toBe(true);
      await box.uncheck();
      await page.getByRole("button", { name: "Save" }).click();
      await visibleText(page.getByText("You will no longer get emails about new sign-ins."));
      expect(await page.getByLabel("Email me when a new browser or app signs in").isChecked()).toBe(false);
      if (javaScriptEnabled) await expectAccessible(page, "sessions-sign-in-notices", findings);
      await page.getByLabel("Email me when a new browser or app signs in").check();
      await page.getByRole("button", { name: "Save" }).click();
      await visibleText(page.getByText("You will get an email when a new browser or app signs in."));
      await context.close();
    });
  }

  it("speaks every shipped language on the link's page and the setting, axe-clean light and dark", async () => {
    const { first, second, link } = await twoBrowsers("pia", true);
    const { page } = first;
    for (const language of LANGUAGES) {
      const words = JSON.parse(readFileSync(new URL(`../../app/i18n/locales/${language}/account.json`, import.meta.url), "utf8")) as {
        signInNotices: { label: string; end: { sessionHeading: string; sessionButton: string } };
      };
      await page.goto(`${link}&lng=${language}`);
      expect(await page.locator("html").getAttribute("lang")).toBe(language);
      await visibleText(page.getByRole("heading", { level: 1, name: words.signInNotices.end.sessionHeading }));
      await visibleText(page.getByRole("button", { name: words.signInNotices.end.sessionButton }));
      await expectAccessible(page, `i18n/${language}/end-link`, findings);
      await page.goto(`${mailing.server.issuer}/account/sessions?lng=${language}`);
      await visibleText(page.getByText(words.signInNotices.label));
      await expectAccessible(page, `i18n/${language}/sessions`, findings);
    }
    await first.context.close();
    await second.context.close();
  });
});
