import { describe, expect, it } from "vitest";
import { pickedOnThisSite, screenI18n, screenLanguage, type LanguageSources } from "./screen-language.ts";

/** A pending request whose ui_locales the fake authorize manager knows. */
const REQUEST_URI = "urn:ietf:params:oauth:request_uri:req-abc";

function sources(uiLocales?: string, https = false): LanguageSources {
  return {
    config: { publicUrl: new URL(https ? "https://pds.example" : "http://localhost:3000") },
    authorize: { requestedLocales: async (uri) => (uri === REQUEST_URI && uiLocales ? uiLocales.split(" ") : undefined) },
  };
}

function request(path: string, headers: Record<string, string> = {}): Request {
  return new Request(new URL(path, "http://localhost:3000"), { headers });
}

/** A click on the picker of one of this server's pages (Fetch Metadata). */
const FROM_HERE = { "sec-fetch-site": "same-origin" };

const consent = `/oauth/authorize?${new URLSearchParams({ client_id: "https://app.example/client.json", request_uri: REQUEST_URI })}`;

describe("screenLanguage", () => {
  const plain = sources();

  it("follows Accept-Language, matching a region or script to the language shipped", async () => {
    expect(await screenLanguage(plain, request("/account", { "accept-language": "fr" }))).toBe("fr");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "ja,en;q=0.5" }))).toBe("ja");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "de-CH,de;q=0.9" }))).toBe("de");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "pt-PT" }))).toBe("pt-BR");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "es-419" }))).toBe("es");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "tlh, it;q=0.8, es;q=0.5" }))).toBe("es");
  });

  it("weighs the header's ranges: q=0 is never chosen, a heavier range wins over an earlier one", async () => {
    expect(await screenLanguage(plain, request("/account", { "accept-language": "fr;q=0, de;q=0.3, ja;q=0.9" }))).toBe("ja");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "fr;q=0" }))).toBe("en");
  });

  it("falls back to English: no header, nothing shipped, or a header nobody can read", async () => {
    expect(await screenLanguage(plain, request("/account"))).toBe("en");
    expect(await screenLanguage(plain, request("/account", { "accept-language": "tlh, it" }))).toBe("en");
    expect(await screenLanguage(plain, request("/account", { "accept-language": ";;;q=x,,*" }))).toBe("en");
  });

  it("a remembered choice (the picker's cookie) beats Accept-Language", async () => {
    const { setCookie } = await screenI18n(plain, request("/account?lng=de", { "accept-language": "fr", ...FROM_HERE }));
    expect(setCookie).toMatch(/^atrium_lang=/);
    const cookie = setCookie!.split(";")[0]!;
    expect(await screenLanguage(plain, request("/account", { "accept-language": "fr", cookie }))).toBe("de");
  });

  it("the request's ui_locales beat the cookie and Accept-Language, in their order, skipping what is not shipped", async () => {
    const { setCookie } = await screenI18n(plain, request("/account?lng=ja", FROM_HERE));
    const cookie = setCookie!.split(";")[0]!;
    expect(await screenLanguage(sources("de"), request(consent, { "accept-language": "fr", cookie }))).toBe("de");
    expect(await screenLanguage(sources("tlh pt-BR de"), request(consent, { "accept-language": "fr" }))).toBe("pt-BR");
    // Each tag in turn, by itself: a region of a shipped language counts before a later exact match.
    expect(await screenLanguage(sources("de-CH fr"), request(consent, { "accept-language": "fr" }))).toBe("de");
    // None shipped: the next source decides.
    expect(await screenLanguage(sources("tlh"), request(consent, { "accept-language": "fr" }))).toBe("fr");
    // Only the screens of that request: the account pages follow the person.
    expect(await screenLanguage(sources("de"), request("/account", { "accept-language": "fr" }))).toBe("fr");
  });

  it("the picker's lng, on the page where it was picked, beats everything; an unknown one is ignored", async () => {
    expect(await screenLanguage(sources("de"), request(`${consent}&lng=ja`, { "accept-language": "fr" }))).toBe("ja");
    expect(await screenLanguage(sources("de"), request(`${consent}&lng=xx`, { "accept-language": "fr" }))).toBe("de");
  });

  it("a lookup that fails chooses nothing rather than failing the page", async () => {
    const broken: LanguageSources = { config: plain.config, authorize: { requestedLocales: async () => Promise.reject(new Error("database down")) } };
    expect(await screenLanguage(broken, request(consent, { "accept-language": "es" }))).toBe("es");
  });
});

describe("screenI18n", () => {
  it("remembers a picked language in a year-long, server-only cookie (__Host- over https), and only when it changes", async () => {
    const picked = await screenI18n(sources(undefined, true), request("/account?lng=fr", FROM_HERE));
    expect(picked.language).toBe("fr");
    expect(picked.setCookie).toMatch(/^__Host-atrium_lang=.+; Max-Age=31536000; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
    const again = await screenI18n(sources(undefined, true), request("/account?lng=fr", { cookie: picked.setCookie!.split(";")[0]!, ...FROM_HERE }));
    expect(again.setCookie).toBeUndefined();
    expect((await screenI18n(sources(), request("/account", { "accept-language": "fr" }))).setCookie).toBeUndefined();
  });

  it("another site's link with lng shows that language on that page but remembers nothing", async () => {
    const elsewhere: Record<string, string>[] = [{ "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }, { "sec-fetch-site": "none" }, {}, { referer: "https://evil.example/page" }];
    for (const headers of elsewhere) {
      const answer = await screenI18n(sources(), request("/account?lng=ja", { "accept-language": "fr", ...headers }));
      expect(answer.language, JSON.stringify(headers)).toBe("ja");
      expect(answer.setCookie, JSON.stringify(headers)).toBeUndefined();
    }
  });
});

describe("pickedOnThisSite", () => {
  const origin = "https://pds.example";
  const at = (headers: Record<string, string>) => new Request("https://pds.example/account?lng=fr", { headers });

  it("trusts Fetch Metadata when the browser sends it: same-origin only", () => {
    expect(pickedOnThisSite(at({ "sec-fetch-site": "same-origin" }), origin)).toBe(true);
    for (const site of ["same-site", "cross-site", "none", "SAME-ORIGIN", ""]) expect(pickedOnThisSite(at({ "sec-fetch-site": site }), origin), site).toBe(false);
    // A header that says another site wins over a Referer or Origin that says this one.
    expect(pickedOnThisSite(at({ "sec-fetch-site": "cross-site", referer: `${origin}/account`, origin }), origin)).toBe(false);
  });

  it("without Fetch Metadata: a post's Origin or a link's Referer of this origin, nothing else", () => {
    expect(pickedOnThisSite(at({ origin }), origin)).toBe(true);
    expect(pickedOnThisSite(at({ referer: `${origin}/oauth/authorize?lng=de` }), origin)).toBe(true);
    expect(pickedOnThisSite(at({}), origin)).toBe(false);
    expect(pickedOnThisSite(at({ origin: "https://evil.example" }), origin)).toBe(false);
    expect(pickedOnThisSite(at({ origin: "null" }), origin)).toBe(false);
    expect(pickedOnThisSite(at({ referer: "https://pds.example.evil.example/" }), origin)).toBe(false);
    expect(pickedOnThisSite(at({ referer: "http://pds.example/account" }), origin)).toBe(false);
    expect(pickedOnThisSite(at({ referer: "not a url" }), origin)).toBe(false);
  });
});

describe("screenI18n's words", () => {
  it("gives the words of the language chosen", async () => {
    const { t } = await screenI18n(sources(), request("/account", { "accept-language": "de" }));
    expect(t("consent:allow")).toBe("Erlauben");
    expect(t("account:overview.apps", { count: 2 })).toBe("2 Apps haben Zugriff auf Ihr Konto.");
  });
});
