import { describe, expect, it } from "vitest";
import { LANGUAGES } from "../../i18n/languages.ts";
import { newAppEmail, newBrowserEmail } from "../email/templates.ts";

/** docs/decisions/0056: the two notices in every shipped language, with and without the network's country. */
const VALUES = {
  service: "Example PDS",
  handle: "alice.example.com",
  when: Date.UTC(2026, 10, 29, 14, 5),
  link: "https://pds.example.com/account/end?token=end-abc",
  settings: "https://pds.example.com/account/sessions",
};
const FIREFOX_ANDROID = "Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0";

describe.each(LANGUAGES)("the new-sign-in emails in %s", (language) => {
  const france = new Intl.DisplayNames([language], { type: "region" }).of("FR")!;

  it("name the browser, the time in UTC, the country when known, the link and the settings", () => {
    const { subject, text } = newBrowserEmail({ ...VALUES, country: "FR", userAgent: FIREFOX_ANDROID }, language);
    expect(subject).toContain("Example PDS");
    for (const part of ["@alice.example.com", "Firefox", "Android", "UTC", france, VALUES.link, VALUES.settings]) expect(text).toContain(part);
    expect(text).toContain(new Intl.DateTimeFormat(language, { dateStyle: "long", timeStyle: "short", timeZone: "UTC" }).format(VALUES.when));
    expect(`${subject}${text}`).not.toMatch(/\{\{|\}\}/);
  });

  it("say nothing of where without a country", () => {
    const { text } = newBrowserEmail({ ...VALUES, userAgent: FIREFOX_ANDROID }, language);
    const withCountry = newBrowserEmail({ ...VALUES, country: "FR", userAgent: FIREFOX_ANDROID }, language).text;
    expect(text).not.toContain(france);
    expect(withCountry.split("\n").length - text.split("\n").length).toBe(1);
  });

  it("name the app in the subject and the text", () => {
    const { subject, text } = newAppEmail({ ...VALUES, app: "Graysky (graysky.app)" }, language);
    expect(subject).toContain("Graysky (graysky.app)");
    for (const part of ["Graysky (graysky.app)", "@alice.example.com", VALUES.link]) expect(text).toContain(part);
    expect(`${subject}${text}`).not.toMatch(/\{\{|\}\}/);
  });
});
