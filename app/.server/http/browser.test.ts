import { createCookie } from "@remix-run/node";
import { describe, expect, it } from "vitest";
import { rememberedLanguage } from "../i18n/screen-language.ts";
import { cookieNames, readCookie, serializeCookie } from "./browser.ts";

/**
 * The one cookie mechanism (docs/decisions/0032): every cookie of the server through the `cookie` package. Browsers
 * signed in before it must stay signed in: the names, the attributes and the encoding of the values are the ones
 * the hand-written serializer and Remix's createCookie wrote, and what they wrote is read.
 */

const HTTPS = { publicUrl: new URL("https://pds.example") };
const HTTP = { publicUrl: new URL("http://localhost:3000") };

function withCookies(header: string): Request {
  return new Request("https://pds.example/account", { headers: { cookie: header } });
}

/** What the hand-written serializer of before wrote, byte for byte (its code: name=encodeURIComponent(value) and the attributes in this order). */
function oldSerializeCookie(config: { publicUrl: URL }, name: string, value: string, maxAgeSeconds?: number): string {
  const secure = config.publicUrl.protocol === "https:" ? "; Secure" : "";
  const maxAge = maxAgeSeconds === undefined ? "" : `; Max-Age=${maxAgeSeconds}`;
  return `${name}=${encodeURIComponent(value)}; Path=/; HttpOnly; SameSite=Lax${maxAge}${secure}`;
}

/** A Set-Cookie's attributes as a browser keeps them: the pair, then the attributes in any order. */
function attributesOf(setCookie: string): { pair: string; attributes: string[] } {
  const [pair, ...attributes] = setCookie.split("; ");
  return { pair: pair!, attributes: attributes.sort() };
}

/** Values as the screens write them: session ids joined by "~", a DID, a device entry list, a path with its query. */
const VALUES = {
  session: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ~bcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQa",
  account: "did:plc:abcdefghijklmnopqrstuvwx",
  device: "ZGlkOnBsYzphbGljZQ.id-1.mac_-1~ZGlkOnBsYzpib2I.id-2.mac_-2",
  recoveryReturn: "/oauth/authorize?client_id=https%3A%2F%2Fapp.example%2Fclient.json&request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3Areq-abc",
  csrf: "Yk9xQ2V5d3l6dGZ1a3B4cWVyc3R1",
} as const;

describe("one cookie mechanism", () => {
  it("keeps every name, __Host- over https and none over http", () => {
    expect(cookieNames(HTTPS)).toEqual({
      session: "__Host-atrium_session",
      keptSession: "__Host-atrium_session_kept",
      account: "__Host-atrium_account",
      csrf: "__Host-atrium_csrf",
      device: "__Host-atrium_device",
      language: "__Host-atrium_lang",
      recoveryReturn: "__Host-atrium_recovery_return",
      admin: "__Host-atrium_admin",
    });
    expect(cookieNames(HTTP).session).toBe("atrium_session");
  });

  it("writes the same pair and the same attributes as the code before it, with and without Max-Age, over https and http", () => {
    for (const config of [HTTPS, HTTP]) {
      for (const [key, value] of Object.entries(VALUES)) {
        const name = cookieNames(config)[key as keyof typeof VALUES];
        for (const maxAge of [undefined, 0, 2_592_000]) {
          expect(attributesOf(serializeCookie(config, name, value, maxAge)), `${name} ${maxAge}`).toEqual(attributesOf(oldSerializeCookie(config, name, value, maxAge)));
        }
      }
    }
  });

  it("reads what the code before it wrote: a browser signed in before stays signed in", () => {
    const names = cookieNames(HTTPS);
    const header = Object.entries(VALUES)
      .map(([key, value]) => oldSerializeCookie(HTTPS, names[key as keyof typeof VALUES], value).split(";")[0])
      .join("; ");
    const request = withCookies(header);
    for (const [key, value] of Object.entries(VALUES)) expect(readCookie(request, names[key as keyof typeof VALUES]), key).toBe(value);
  });

  it("reads the language Remix's createCookie remembered, and writes it plainly from now on", async () => {
    const name = cookieNames(HTTPS).language;
    const old = createCookie(name, { path: "/", httpOnly: true, sameSite: "lax", secure: true, maxAge: 365 * 24 * 60 * 60 });
    const oldSetCookie = await old.serialize("de");
    expect(rememberedLanguage({ config: HTTPS }, withCookies(oldSetCookie.split(";")[0]!))).toBe("de");
    const setCookie = serializeCookie(HTTPS, name, "de", 365 * 24 * 60 * 60);
    // The same attributes in the same order as createCookie's (both are the `cookie` package's serializer).
    expect(setCookie.replace(/^[^;]*/, "")).toBe(oldSetCookie.replace(/^[^;]*/, ""));
    expect(rememberedLanguage({ config: HTTPS }, withCookies(setCookie.split(";")[0]!))).toBe("de");
    // Neither a language no longer shipped nor a value nobody wrote chooses anything.
    expect(rememberedLanguage({ config: HTTPS }, withCookies((await old.serialize("tlh")).split(";")[0]!))).toBeUndefined();
    expect(rememberedLanguage({ config: HTTPS }, withCookies(`${name}=%%%`))).toBeUndefined();
  });

  it("a malformed escape is a cookie this server never set: absent; of two cookies of one name, the first counts", () => {
    expect(readCookie(withCookies("__Host-atrium_account=%E0%A4%A"), "__Host-atrium_account")).toBeUndefined();
    expect(readCookie(withCookies("__Host-atrium_account=first; __Host-atrium_account=second"), "__Host-atrium_account")).toBe("first");
    expect(readCookie(withCookies("other=1"), "__Host-atrium_account")).toBeUndefined();
    expect(readCookie(new Request("https://pds.example/"), "__Host-atrium_account")).toBeUndefined();
  });
});
