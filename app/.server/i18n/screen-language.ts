import { RemixI18Next } from "remix-i18next/server";
import type { Config } from "../config.ts";
import { cookieNames, readCookie, serializeCookie } from "../http/browser.ts";
import { DEFAULT_LANGUAGE, LANGUAGES, isLanguage, type Language } from "../../i18n/languages.ts";
import { translatorFor, type Translate } from "./translate.ts";

/**
 * Which language a screen speaks (docs/decisions/0019), first that applies:
 * 1. `lng` in the address: the language picker's links, on the page where the person just picked it;
 * 2. the authorization request's `ui_locales` (OIDC Core §3.1.2.1), on the screens of that request (the address
 *    carries its request_uri);
 * 3. the language the person picked earlier on this site, remembered in a cookie (`pickedOnThisSite`);
 * 4. the browser's Accept-Language;
 * 5. English.
 * Each candidate is matched against the shipped languages: exactly, then by its base language ("fr-CA" → French,
 * "pt" and "pt-PT" → Portuguese (Brazil)). remix-i18next's detector decides 1–3 (the cookie through the server's one
 * cookie mechanism, http/browser.ts); Accept-Language is read here (`fromAcceptLanguage`), because remix-i18next 6
 * tries only the header's first language the runtime knows ("it, es" would give English, though Spanish ships).
 */

/** What the screens need of the services to choose: the cookie's settings and the pending request's ui_locales. */
export type LanguageSources = {
  config: Pick<Config, "publicUrl">;
  authorize: { requestedLocales(requestUri: string | null): Promise<string[] | undefined> };
};

/** The picked language's cookie: a year, readable by the server only, `__Host-` over https like the screens' others. */
const YEAR_SECONDS = 365 * 24 * 60 * 60;

const UNDECIDED = "";

/**
 * The language this browser picked on this site: the cookie holds its tag. One set before docs/decisions/0032 holds
 * what Remix's createCookie wrote, the tag as a JSON string in base64 ("fr" → `ImZyIg==`): still read, so nobody's
 * pick is lost. Anything else, or a language no longer shipped, is nothing.
 */
export function rememberedLanguage(sources: Pick<LanguageSources, "config">, request: Request): Language | undefined {
  const value = readCookie(request, cookieNames(sources.config).language);
  if (value === undefined) return undefined;
  if (isLanguage(value)) return value;
  try {
    const legacy: unknown = JSON.parse(Buffer.from(value, "base64").toString("utf8"));
    return typeof legacy === "string" && isLanguage(legacy) ? legacy : undefined;
  } catch {
    return undefined;
  }
}

const detectors = new WeakMap<LanguageSources, RemixI18Next>();

function detectorOf(sources: LanguageSources): RemixI18Next {
  let detector = detectors.get(sources);
  if (!detector) {
    detector = new RemixI18Next({
      detection: {
        supportedLanguages: [...LANGUAGES],
        // Nothing found by the detector: Accept-Language is read next (below).
        fallbackLanguage: UNDECIDED,
        searchParamKey: "lng",
        order: ["searchParams", "custom"],
        // The request's ui_locales, then the remembered pick. A request that cannot be read (expired, a database
        // hiccup) chooses nothing: the next source decides.
        findLocale: async (request) => {
          const requested = await sources.authorize.requestedLocales(new URL(request.url).searchParams.get("request_uri")).catch(() => undefined);
          // In the app's order, each tag by itself ("de-CH fr" is German): remix-i18next would try every tag exactly first.
          return (requested && firstShipped(requested)) ?? rememberedLanguage(sources, request) ?? null;
        },
      },
    });
    detectors.set(sources, detector);
  }
  return detector;
}

export async function screenLanguage(sources: LanguageSources, request: Request): Promise<Language> {
  let language: string;
  try {
    language = await detectorOf(sources).getLocale(request);
  } catch {
    // A detector that fails chooses nothing: the next source decides.
    language = UNDECIDED;
  }
  if (isLanguage(language)) return language;
  return fromAcceptLanguage(request.headers.get("accept-language")) ?? DEFAULT_LANGUAGE;
}

/**
 * RFC 9110 §12.5.4: the shipped language the browser prefers most. Ranges are taken by their weight (q=0 means "not
 * this one"), then in their order; each matches a shipped language exactly, or by its base language.
 */
export function fromAcceptLanguage(header: string | null): Language | undefined {
  if (!header) return undefined;
  const ranges = header
    .split(",")
    .map((part, index) => {
      const [tag = "", ...parameters] = part.trim().split(";");
      const q = parameters.map((parameter) => /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(parameter)?.[1]).find(Boolean);
      return { tag: tag.trim().toLowerCase(), weight: q === undefined ? 1 : Number(q), index };
    })
    .filter((range) => /^[a-z]{1,8}(-[a-z0-9]{1,8})*$/.test(range.tag) && range.weight > 0 && range.weight <= 1)
    .sort((a, b) => b.weight - a.weight || a.index - b.index);
  return firstShipped(ranges.map((range) => range.tag));
}

/** The first of `tags`, in their order, that names a shipped language: exactly, or by its base language. */
export function firstShipped(tags: readonly string[]): Language | undefined {
  for (const tag of tags.map((one) => one.toLowerCase())) {
    const exact = LANGUAGES.find((language) => language.toLowerCase() === tag);
    if (exact) return exact;
    const base = tag.split("-")[0];
    const sameBase = LANGUAGES.find((language) => language.split("-")[0]!.toLowerCase() === base);
    if (sameBase) return sameBase;
  }
  return undefined;
}

export type ScreenLanguage = {
  language: Language;
  t: Translate;
  /** Set when the person picked, on this site, a language the cookie does not hold yet: remembers it. */
  setCookie?: string;
};

/**
 * Whether the request comes from a page of this origin: the picker's link, or a form of that page posting with its
 * `lng`. Any site can link here with `?lng=`; that shows the page in that language, but only a choice made on this
 * site is remembered for a year (issue 16, docs/decisions/0024).
 *
 * Fetch Metadata (W3C, "Sec-Fetch-Site"): "same-origin" when the navigation or form post started on a page of this
 * origin. "same-site" (a sibling host, which on a PDS may be anyone's), "cross-site" and "none" (typed, bookmarked,
 * or opened by another program) are not a pick made here. Browsers without Fetch Metadata send no such header: then
 * the `Origin` of a post, or the `Referer` of a link (the screens send it to their own origin only, docs/decisions/0004),
 * must be this origin. A request with none of them (a script, a link without a referrer) is not remembered.
 */
export function pickedOnThisSite(request: Request, origin: string): boolean {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null) return site === "same-origin";
  if (request.headers.get("origin") === origin) return true;
  const referer = request.headers.get("referer");
  if (!referer) return false;
  try {
    return new URL(referer).origin === origin;
  } catch {
    return false;
  }
}

/** The screen's language, its words, and the cookie that remembers a language just picked on this site. */
export async function screenI18n(sources: LanguageSources, request: Request): Promise<ScreenLanguage> {
  const language = await screenLanguage(sources, request);
  const picked = new URL(request.url).searchParams.get("lng");
  let setCookie: string | undefined;
  if (picked !== null && picked === language && pickedOnThisSite(request, sources.config.publicUrl.origin)) {
    // A pick remembered in the cookie's former encoding is written again in its own: the cookie then says it plainly.
    if (readCookie(request, cookieNames(sources.config).language) !== language) {
      setCookie = serializeCookie(sources.config, cookieNames(sources.config).language, language, YEAR_SECONDS);
    }
  }
  return { language, t: translatorFor(language), setCookie };
}
