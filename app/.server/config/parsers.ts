import { z } from "zod";

/**
 * The shapes a setting in the environment takes, each parsed in one place (docs/configuration.md lists the settings;
 * config/environment.ts names them). A refusal is a phrase the start-up error puts after the variable's name.
 */

const FLAG_WORDS = ["", "0", "1", "false", "true", "off", "on", "no", "yes"] as const;
const TRUE_WORDS: readonly string[] = ["1", "true", "on", "yes"];

/** A boolean flag: on, off, or unset (off). */
export const booleanFlag = z
  .enum(FLAG_WORDS)
  .default("")
  .transform((value) => TRUE_WORDS.includes(value));

/** A boolean flag whose unset (or empty) value means "the default", decided later from other settings. */
export const optionalFlag = z
  .enum(FLAG_WORDS)
  .default("")
  .transform((value) => (value === "" ? undefined : TRUE_WORDS.includes(value)));

/** `text` as a whole number from `min` to `max`, or undefined: digits only, nothing a number parser would also take. */
export function wholeNumberIn(text: string, min: number, max: number): number | undefined {
  const number = /^\d+$/.test(text) ? Number(text) : NaN;
  return Number.isSafeInteger(number) && number >= min && number <= max ? number : undefined;
}

/** An optional whole number from the environment: unset or empty means the default; anything but digits is refused. */
export function integerVar(name: string, min: number, max: number, fallback: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return fallback;
      const number = wholeNumberIn(value.trim(), min, max);
      if (number !== undefined) return number;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)})` });
      return z.NEVER;
    });
}

/**
 * An optional setting: unset or blank is undefined; otherwise `parse` gives its value, or why it is refused (a
 * phrase that starts with "must", which the start-up error puts after the variable's name).
 */
export function optionalSetting<T>(parse: (text: string) => { value: T } | { refused: string }) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      const text = (value ?? "").trim();
      if (!text) return undefined;
      const parsed = parse(text);
      if ("value" in parsed) return parsed.value;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: parsed.refused });
      return z.NEVER;
    });
}

/** An optional whole number with no default (unset: undefined); `what` names it in the refusal ("a port number"). */
export function optionalWholeNumber(min: number, max: number, what: string) {
  return optionalSetting((text) => {
    const number = wholeNumberIn(text, min, max);
    return number === undefined ? { refused: `must be ${what} from ${min} to ${max} (got ${JSON.stringify(text)})` } : { value: number };
  });
}

/** `text` as a URL, or undefined when it is not one. */
export function parsedUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** What a URL setting may be besides an https URL without credentials. */
export type UrlRule = {
  /** Plain http too: to any host, or only to a loopback host (development and tests). */
  http?: "anywhere" | "loopback";
  /** A mailto: address too. */
  mailto?: boolean;
  /** Whether a query, a fragment, or a path other than "/" may be part of it (a base URL has none of them). */
  query?: boolean;
  fragment?: boolean;
  path?: boolean;
};

/** `text` as a URL that `rule` allows (never with a user or password), or undefined. Every URL setting is read here. */
export function urlAllowed(text: string, rule: UrlRule): URL | undefined {
  const url = parsedUrl(text);
  if (!url || url.username || url.password) return undefined;
  const http = url.protocol === "http:" && (rule.http === "anywhere" || (rule.http === "loopback" && isLoopbackHost(url.hostname)));
  if (url.protocol !== "https:" && !http && !(rule.mailto && url.protocol === "mailto:")) return undefined;
  if ((url.search && !(rule.query ?? true)) || (url.hash && !(rule.fragment ?? true))) return undefined;
  if (rule.path === false && url.pathname !== "/" && url.pathname !== "") return undefined;
  return url;
}
