import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import type { AttemptRule, AttemptStore } from "./attempt-store.ts";

export type SignInThrottleOptions = {
  /** Attempts evaluated at once; waiting begins after these. */
  freeAttempts: number;
  /** The first wait; each further attempt doubles it... */
  baseDelayMs: number;
  /** ...up to this. */
  maxDelayMs: number;
  /** Attempts are forgotten this long after the latest one. */
  memoryMs: number;
};

export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = {
  freeAttempts: 5,
  baseDelayMs: SECOND,
  maxDelayMs: 15 * MINUTE,
  memoryMs: 15 * MINUTE,
};

/** Who an attempt is for: an account (every alias of it), or what was typed when it names no account. */
export type SignInSubject = { account: string } | { typed: string } | { passkey: string };

/** An attempt that was counted before its credentials were checked; a success hands it back. */
export type ClaimedAttempt = { readonly keys: readonly string[] };

/**
 * Sign-in attempts, limited per account and per client address with growing
 * waits (docs/decisions/0009-sign-in-attempts-counted-first.md). Every attempt is counted
 * BEFORE its password or passkey is checked, in one atomic step that also
 * decides whether it may go on, and a success takes its own count back:
 * however many attempts arrive at once, in however many processes, at most
 * `freeAttempts` of them are ever checked before the waiting begins.
 */
export class SignInThrottle {
  private readonly rule: AttemptRule;

  constructor(
    private readonly store: AttemptStore,
    private readonly options: SignInThrottleOptions = DEFAULT_SIGN_IN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {
    this.rule = { memoryMs: options.memoryMs, delayAfter: (count) => this.delayAfter(count) };
  }

  /** Counts an attempt, or throws TooManyRequestsError (counting nothing) while a key is waiting. */
  claim(subject: SignInSubject, address: string | undefined): ClaimedAttempt {
    const keys = [subjectKey(subject)];
    if (address) keys.push(`sign-in:address:${address}`);
    const wait = this.store.claim(keys, this.now(), this.rule);
    if (wait > 0) {
      const seconds = Math.ceil(wait / SECOND);
      throw new TooManyRequestsError(`Too many sign-in attempts. Wait ${formatWait(seconds)} and try again.`, seconds);
    }
    return { keys };
  }

  /** The attempt proved the credentials: it no longer counts against the account or the address. */
  succeeded(attempt: ClaimedAttempt): void {
    for (const key of attempt.keys) this.store.forgive(key);
  }

  /** The wait after the latest of `count` attempts: none for the free ones, then 1 s, 2 s, 4 s, … */
  private delayAfter(count: number): number {
    const excess = count - this.options.freeAttempts;
    if (excess < 0) return 0;
    return Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** excess);
  }
}

function subjectKey(subject: SignInSubject): string {
  if ("account" in subject) return `sign-in:account:${subject.account}`;
  if ("passkey" in subject) return `sign-in:passkey:${subject.passkey}`;
  return `sign-in:typed:${subject.typed}`;
}

function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
