import { createCookie } from "@remix-run/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newBrowser, postForm } from "../helpers/account.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Issue 16: any site's link with `?lng=` used to set the year-long language cookie, so one visit through another
 * site's link changed every later page of this server. Now the link's language shows on that page only; a language
 * is remembered when it was picked on a page of this server (docs/decisions/0019, 0024). Headers are what Chromium
 * sends for each kind of navigation (Fetch Metadata), or what an older browser sends without them.
 */

const LANGUAGE_COOKIE = /^atrium_lang=/;

describe("the language cookie", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  const open = async (path: string, headers: Record<string, string>) => {
    const answer = await fetch(`${server.issuer}${path}`, { headers: { "Accept-Language": "en", ...headers }, redirect: "manual" });
    return { status: answer.status, html: await answer.text(), cookies: answer.headers.getSetCookie().filter((cookie) => LANGUAGE_COOKIE.test(cookie)) };
  };

  it("a link from another site shows its language on that page and remembers nothing, whatever page it opens", async () => {
    const navigation = { "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1" };
    const elsewhere: Record<string, string>[] = [
      { ...navigation, "Sec-Fetch-Site": "cross-site", Referer: "https://evil.example/" },
      { ...navigation, "Sec-Fetch-Site": "cross-site" },
      // A sibling host of this one: on a PDS, possibly anyone's.
      { ...navigation, "Sec-Fetch-Site": "same-site", Referer: "https://someone.localhost/" },
      // Typed, bookmarked, or opened by another program (a mail client's link).
      { ...navigation, "Sec-Fetch-Site": "none" },
      // A browser without Fetch Metadata, from another site or with no referrer at all; a script.
      { Referer: "https://evil.example/page" },
      {},
    ];
    const pages = ["/account?lng=ja", "/account/recover?lng=ja", "/nowhere?lng=ja", "//evil.example/x?lng=ja"];
    const answers = await Promise.all(elsewhere.flatMap((headers) => pages.map(async (path) => ({ path, headers, ...(await open(path, headers)) }))));
    for (const { path, headers, html, cookies } of answers) {
      const label = `${path} ${JSON.stringify(headers)}`;
      expect(html, label).toContain('<html lang="ja"');
      expect(cookies, label).toEqual([]);
    }
  });

  it("a pick on this server's own page is remembered: the picker's link, with or without Fetch Metadata", async () => {
    const picks: Record<string, string>[] = [
      { "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", Referer: `${server.issuer}/account` },
      // An older browser: the screens send their Referer to their own origin (docs/decisions/0004).
      { Referer: `${server.issuer}/account/recover` },
    ];
    for (const headers of picks) {
      const picked = await open("/account?lng=de", headers);
      expect(picked.html).toContain('<html lang="de"');
      expect(picked.cookies, JSON.stringify(headers)).toHaveLength(1);
      // The next page, opened without lng, is in the remembered language.
      const next = await open("/account/recover", { Cookie: picked.cookies[0]!.split(";")[0]! });
      expect(next.html).toContain('<html lang="de"');
    }
  });

  it("a language remembered before the one cookie mechanism (Remix's createCookie) is still read, and a new pick is written plainly", async () => {
    const old = createCookie("atrium_lang", { path: "/", httpOnly: true, sameSite: "lax", maxAge: 365 * 24 * 60 * 60 });
    const remembered = (await old.serialize("ja")).split(";")[0]!;
    expect((await open("/account/recover", { Cookie: remembered })).html).toContain('<html lang="ja"');
    const picked = await open("/account?lng=fr", { "Sec-Fetch-Site": "same-origin", Cookie: remembered });
    expect(picked.cookies).toHaveLength(1);
    expect(picked.cookies[0]).toMatch(/^atrium_lang=fr; Max-Age=31536000; Path=\/; HttpOnly; SameSite=Lax$/);
    // Picking the language already remembered writes nothing.
    expect((await open("/account?lng=fr", { "Sec-Fetch-Site": "same-origin", Cookie: "atrium_lang=fr" })).cookies).toEqual([]);
  });

  it("a form of this server's page posted with its lng remembers it; the same post from another site is refused", async () => {
    const browser = await newBrowser(server);
    // The sign-in form of a page in Spanish posts to its own address (wrong password: the page comes back).
    const posted = await postForm(browser, "/account?lng=es", { csrf_token: browser.csrfToken, identifier: "nobody.test", password: "wrong password" });
    expect(posted.html).toContain('<html lang="es"');
    expect(browser.jar.get("atrium_lang")).toBeDefined();

    const elsewhere = await newBrowser(server);
    const refused = await postForm(elsewhere, "/account?lng=es", { csrf_token: elsewhere.csrfToken, identifier: "nobody.test", password: "wrong password" }, { origin: "https://evil.example" });
    expect(refused.status).toBe(403);
    expect(elsewhere.jar.get("atrium_lang")).toBeUndefined();
  });
});
