import type { Translate } from "../../i18n/translate.ts";

/**
 * A short, human description of a browser from its User-Agent ("Firefox on
 * macOS"), in the screen's language. Only for display: the full string is
 * shown beside it. Product names stay as they are.
 */
const BROWSERS: [RegExp, string][] = [
  [/Edg(e|A|iOS)?\//, "Edge"],
  [/OPR\/|Opera/, "Opera"],
  [/SamsungBrowser\//, "Samsung Internet"],
  [/Firefox\/|FxiOS\//, "Firefox"],
  [/HeadlessChrome\//, "headless"],
  [/Chrome\/|CriOS\//, "Chrome"],
  [/Chromium\//, "Chromium"],
  [/Safari\//, "Safari"],
  [/^curl\//, "curl"],
  [/node|undici/i, "program"],
];

const SYSTEMS: [RegExp, string][] = [
  [/iPhone|iPad|iPod/, "iOS"],
  [/Android/, "Android"],
  [/CrOS/, "ChromeOS"],
  [/Mac OS X|Macintosh/, "macOS"],
  [/Windows/, "Windows"],
  [/Linux/, "Linux"],
];

export function describeUserAgent(userAgent: string | null | undefined, t: Translate): string {
  if (!userAgent) return t("account:sessions.device.unknown");
  const found = BROWSERS.find(([pattern]) => pattern.test(userAgent))?.[1];
  const browser = found === "program" ? t("account:sessions.device.program") : found === "headless" ? t("account:sessions.device.headlessChrome") : found;
  const system = SYSTEMS.find(([pattern]) => pattern.test(userAgent))?.[1];
  if (browser && system) return t("account:sessions.device.browserOn", { browser, system });
  return browser ?? (system ? t("account:sessions.device.anyBrowserOn", { system }) : t("account:sessions.device.unknown"));
}
