import { XrpcError } from "../xrpc/xrpc-error.ts";
import { isNsid } from "./identifiers.ts";

/**
 * The app.bsky preferences' two rules of the reference PDS (docs/decisions/0045-hardening-handles-budgets-preferences-input.md):
 *
 * - The birth date (`personalDetailsPref`) is the account holder's alone: only a full-access session reads it or sets
 *   it. An OAuth app never is one, whatever its scope; when such an app replaces the preferences, the stored birth
 *   date stays as it was.
 * - The declared age (`declaredAgePref`) is never stored from a write: it is computed on each read from the birth date
 *   (over 13, 16, 18), and given to whoever may read preferences, the OAuth apps included.
 *
 * Whether the caller is a full-access session is the caller's to say (`fullAccess`), not these rules'.
 */
export const PERSONAL_DETAILS_PREF = "app.bsky.actor.defs#personalDetailsPref";
export const DECLARED_AGE_PREF = "app.bsky.actor.defs#declaredAgePref";

/** Preferences are app.bsky.* lexicon objects: an NSID in that namespace, with or without a `#name` (the lexicon's $type). */
const NAMESPACE = "app.bsky";
const DEF_NAME = /^[a-zA-Z][a-zA-Z0-9]{0,127}$/;

export type Preference = Record<string, unknown> & { $type: string };
export type PreferenceAccess = { fullAccess: boolean };

/** Whether `type` is a preference's $type: `app.bsky.<…>` as an NSID, and a definition name after `#` when one is given. */
export function isPreferenceType(type: string): boolean {
  const [nsid = "", name, ...more] = type.split("#");
  return more.length === 0 && nsid.startsWith(`${NAMESPACE}.`) && isNsid(nsid) && (name === undefined || DEF_NAME.test(name));
}

function typeOf(preference: unknown): string | undefined {
  const type = (preference as { $type?: unknown } | null)?.$type;
  return typeof type === "string" ? type : undefined;
}

/** Only a full-access session sees or sets these (the reference's `isFullAccessOnlyPref`). */
function isFullAccessOnly(type: string | undefined): boolean {
  return type === PERSONAL_DETAILS_PREF;
}

/**
 * What getPreferences answers: the stored preferences without any declared age stored before these rules, a declared
 * age computed from the birth date as of `now` when there is one, and without the birth date unless `fullAccess`.
 */
export function preferencesToRead(stored: readonly unknown[], access: PreferenceAccess, now: number): unknown[] {
  const preferences = stored.filter((preference) => typeOf(preference) !== DECLARED_AGE_PREF);
  const birthDate = (preferences.find((preference) => typeOf(preference) === PERSONAL_DETAILS_PREF) as { birthDate?: unknown } | undefined)?.birthDate;
  if (typeof birthDate === "string" && birthDate !== "") preferences.push(declaredAge(birthDate, now));
  return access.fullAccess ? preferences : preferences.filter((preference) => !isFullAccessOnly(typeOf(preference)));
}

/**
 * What putPreferences stores in place of the account's preferences: `written` without any declared age (computed, never
 * stored), and `keep`, the stored types the write leaves as they are (the birth date, for a caller who may not set it).
 * A caller who is not a full-access session and sends a birth date is refused (400 InvalidRequest, as the reference).
 */
export function preferencesToWrite(incoming: readonly Preference[], access: PreferenceAccess): { written: Preference[]; keep: string[] } {
  const forbidden = access.fullAccess ? [] : incoming.filter((preference) => isFullAccessOnly(preference.$type));
  if (forbidden.length > 0) {
    throw new XrpcError(400, "InvalidRequest", `Do not have authorization to set preferences: ${[...new Set(forbidden.map((preference) => preference.$type))].join(", ")}`);
  }
  return {
    written: incoming.filter((preference) => preference.$type !== DECLARED_AGE_PREF),
    keep: access.fullAccess ? [] : [PERSONAL_DETAILS_PREF],
  };
}

/** app.bsky.actor.defs#declaredAgePref for a birth date (a datetime), as of `now`: an unreadable date declares no age. */
function declaredAge(birthDate: string, now: number): Preference {
  const age = ageOn(new Date(birthDate), new Date(now));
  return { $type: DECLARED_AGE_PREF, isOverAge13: age >= 13, isOverAge16: age >= 16, isOverAge18: age >= 18 };
}

/** Whole years from `birth` to `today` (UTC calendar dates); NaN for an invalid date, which is over no age. */
function ageOn(birth: Date, today: Date): number {
  const years = today.getUTCFullYear() - birth.getUTCFullYear();
  const beforeBirthday = today.getUTCMonth() < birth.getUTCMonth() || (today.getUTCMonth() === birth.getUTCMonth() && today.getUTCDate() < birth.getUTCDate());
  return beforeBirthday ? years - 1 : years;
}
