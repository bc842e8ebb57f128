import { limitBucketOf } from "../http/forwarded-address.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { sha256Base64url } from "../util/crypto.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import type { AttemptRule, AttemptStore } from "./attempt-store.ts";

export type SignInThrottleOptions = {
  /** Attempts checked at once per account (or device, session, credential); waiting begins after these. */
  freeAttempts: number;
  /** The first wait; each further attempt doubles it... */
  baseDelayMs: number;
  /** ...up to this. */
  maxDelayMs: number;
  /** Attempts are forgotten this long after the latest failure. */
  memoryMs: number;
};

export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = {
  freeAttempts: 5,
  baseDelayMs: SECOND,
  maxDelayMs: 15 * MINUTE,
  memoryMs: 15 * MINUTE,
};

/** One client address may be many people (an office, a carrier's NAT): it fails this many times more freely than one account. */
const ADDRESS_ALLOWANCE = 4;

/**
 * Who an attempt is for, which decides the counters it is checked against:
 * - `account`: a known account (every alias of it), from a browser it has not signed in from: that account's counter
 *   and the client address's;
 * - `typed`: what was typed when it names no account (treated exactly alike);
 * - `device`: a known account from a browser that signed in to it before (docs/decisions/0009): that browser's own
 *   counter only, so nobody elsewhere can make its owner wait;
 * - `session`: confirming the password of the account a browser session is signed in to (a recent authentication, a
 *   password change): that session's own counter only;
 * - `passkey`: a passkey by its credential ID, and the client address;
 * - `unnamed`: in the place of an account's counter, text that names no account (a password sign-in claims one of
 *   the two quietly, so that known and unknown identifiers do the same work: `claimPassword`).
 */
export type SignInSubject =
  | { account: string }
  | { typed: string }
  | { device: { account: string; id: string } }
  | { session: string }
  | { passkey: string }
  | { unnamed: string };

/** A password attempt claimed by `claimPassword`: `capped` when the account's counter is waiting (the answer is a wrong password's). */
export type ClaimedPasswordAttempt = { attempt: ClaimedAttempt; capped: boolean };

/** An attempt that was counted before its credentials were checked; its outcome is told back. */
export type ClaimedAttempt = { readonly keys: readonly string[] };

/**
 * Sign-in attempts, limited with growing waits (docs/decisions/0009). Every
 * attempt is counted BEFORE its password or passkey is checked, in one atomic
 * step that also decides whether it may go on: however many attempts arrive
 * at once, in however many processes, at most `freeAttempts` of them are
 * checked before the waiting begins. A success takes its own count back; a
 * failure keeps the counters remembered for `memoryMs` after it.
 */
/** Whose counters these are: each purpose counts under its own keys (see the constructor). */
export type ThrottlePurpose = "sign-in" | "recovery" | "deletion" | "email-change" | "sign-in-code" | "plc-operation";

export class SignInThrottle {
  private readonly rule: AttemptRule;

  private readonly addressPrefix: string;

  /**
   * `purpose` names the counters: "sign-in" for sign-ins; password recovery (docs/decisions/0020) counts its
   * requests and resets with the same keys under its own name, so neither can make the other wait; so do the
   * emails of account-deletion codes (docs/decisions/0030) and of password sessions' sign-in codes (0047).
   */
  constructor(
    private readonly store: AttemptStore,
    private readonly options: SignInThrottleOptions = DEFAULT_SIGN_IN_THROTTLE,
    private readonly now: () => number = Date.now,
    private readonly purpose: ThrottlePurpose = "sign-in",
  ) {
    this.rule = { memoryMs: options.memoryMs, delayAfter: (key, count) => this.delayAfter(key, count) };
    this.addressPrefix = `${purpose}:address:`;
  }

  /** Counts an attempt, or throws TooManyRequestsError (counting nothing) while a counter is waiting. */
  async claim(subject: SignInSubject, address: string | undefined): Promise<ClaimedAttempt> {
    const keys = [subjectKey(subject, this.purpose)];
    if (address && countsAddress(subject)) keys.push(`${this.addressPrefix}${limitBucketOf(address)}`);
    return this.claimKeys(keys);
  }

  /**
   * A password sign-in from a browser the account does not know (docs/decisions/0009, 0023a). Only counters keyed on
   * what was typed and on the client address refuse visibly (a 429 with its wait); the account's counter, which
   * every alias shares, caps quietly. A visible refusal from it would tell which email belongs to a public handle:
   * a few wrong passwords on the handle, then one with a guessed email, refused only when the email is the
   * account's (found in review, issue 16). `capped`: the account is waiting, so the caller must not check the
   * password and answers as for a wrong one; the attempt still counts on what was typed and the address.
   * `account` is the DID the text names, or undefined when it names nobody (then a counter of the text stands in).
   */
  async claimPassword(typed: string, account: string | undefined, address: string | undefined): Promise<ClaimedPasswordAttempt> {
    const visible = await this.claim({ typed }, address);
    const quiet = await this.claimQuietly(account === undefined ? { unnamed: typed } : { account });
    return { attempt: { keys: [...visible.keys, ...(quiet?.keys ?? [])] }, capped: quiet === undefined };
  }

  /** Counts an attempt against the client address alone, or throws TooManyRequestsError while it is waiting. */
  async claimAddress(address: string | undefined): Promise<ClaimedAttempt> {
    return this.claimKeys(address ? [`${this.addressPrefix}${limitBucketOf(address)}`] : []);
  }

  /**
   * Counts an attempt against `subject` alone, without a refusal anyone sees: undefined (and nothing counted) while
   * its counter is waiting. Password recovery caps its emails per account this way, so that a refusal cannot tell
   * which handle and which email belong to one account (docs/decisions/0020).
   */
  async claimQuietly(subject: SignInSubject): Promise<ClaimedAttempt | undefined> {
    const keys = [subjectKey(subject, this.purpose)];
    return (await this.store.claim(keys, this.now(), this.rule)) > 0 ? undefined : { keys };
  }

  private async claimKeys(keys: string[]): Promise<ClaimedAttempt> {
    if (keys.length === 0) return { keys };
    const wait = await this.store.claim(keys, this.now(), this.rule);
    if (wait > 0) {
      const seconds = Math.ceil(wait / SECOND);
      const what = {
        "sign-in": "sign-in attempts",
        recovery: "password reset attempts",
        deletion: "requests for a deletion code",
        "email-change": "requests for an email-change code",
        "sign-in-code": "requests for a sign-in code",
        "plc-operation": "requests for an identity operation code",
      }[this.purpose];
      throw new TooManyRequestsError(`Too many ${what}. Wait ${formatWait(seconds)} and try again.`, seconds, waitWords(this.purpose, seconds));
    }
    return { keys };
  }

  /** The attempt proved the credentials: it no longer counts. */
  async succeeded(attempt: ClaimedAttempt): Promise<void> {
    for (const key of attempt.keys) await this.store.forgive(key);
  }

  /** The attempt failed: it stays counted, and its counters are remembered from now. */
  async failed(attempt: ClaimedAttempt): Promise<void> {
    const now = this.now();
    for (const key of attempt.keys) await this.store.failed(key, now, this.options.memoryMs);
  }

  /** The wait after the latest of `count` attempts: none for the free ones, then 1 s, 2 s, 4 s, … */
  private delayAfter(key: string, count: number): number {
    const free = key.startsWith(this.addressPrefix) ? this.options.freeAttempts * ADDRESS_ALLOWANCE : this.options.freeAttempts;
    const excess = count - free;
    if (excess < 0) return 0;
    return Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** excess);
  }
}

/** A browser that proved itself (a known device, a signed-in session) is not held up by its address's other users. */
function countsAddress(subject: SignInSubject): boolean {
  return !("device" in subject) && !("session" in subject);
}

function subjectKey(subject: SignInSubject, purpose: string): string {
  if ("account" in subject) return `${purpose}:account:${subject.account}`;
  if ("device" in subject) return `${purpose}:device:${subject.device.account}:${subject.device.id}`;
  if ("session" in subject) return `${purpose}:session:${subject.session}`;
  if ("passkey" in subject) return `${purpose}:passkey:${sha256Base64url(subject.passkey)}`;
  if ("unnamed" in subject) return `${purpose}:unnamed:${sha256Base64url(subject.unnamed)}`;
  // What was typed can be anything, of any length: its counter is named by its hash.
  return `${purpose}:typed:${sha256Base64url(subject.typed)}`;
}

/** The same refusal in the catalogue (errors:signIn.waitSeconds / waitMinutes, or errors:recovery.…), for the screens. */
function waitWords(purpose: ThrottlePurpose, seconds: number) {
  const section = {
    "sign-in": "signIn",
    recovery: "recovery",
    deletion: "deletion",
    "email-change": "emailChange",
    "sign-in-code": "signInCode",
    "plc-operation": "plcOperation",
  }[purpose];
  return seconds < 60
    ? { messageKey: `errors:${section}.waitSeconds`, messageValues: { count: seconds } }
    : { messageKey: `errors:${section}.waitMinutes`, messageValues: { count: Math.ceil(seconds / 60) } };
}

function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
