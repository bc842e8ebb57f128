import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import type { RateLimiter } from "./rate-limiter.ts";

export type SignInThrottleOptions = {
  /** Failed attempts allowed before delays begin. */
  freeAttempts: number;
  /** Delays double from this after each further failure... */
  baseDelayMs: number;
  /** ...up to this. */
  maxDelayMs: number;
  /** Failures are forgotten this long after the last one. */
  memoryMs: number;
};

export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottleOptions = {
  freeAttempts: 5,
  baseDelayMs: SECOND,
  maxDelayMs: 15 * MINUTE,
  memoryMs: 15 * MINUTE,
};

/**
 * Password and passkey sign-in attempts, limited per account and per client
 * address with growing delays (DESIGN 4.5): after the free attempts, each
 * failure doubles the wait before the next attempt is even checked.
 */
export class SignInThrottle {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly options: SignInThrottleOptions = DEFAULT_SIGN_IN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  private keys(identifier: string, address: string | undefined): string[] {
    const keys = [`sign-in:account:${identifier.trim().toLowerCase().replace(/^@/, "")}`];
    if (address) keys.push(`sign-in:address:${address}`);
    return keys;
  }

  /** Throws TooManyRequestsError while any of the keys is in its waiting period. */
  assertAllowed(identifier: string, address: string | undefined): void {
    let wait = 0;
    for (const key of this.keys(identifier, address)) wait = Math.max(wait, this.waitFor(key));
    if (wait > 0) {
      const seconds = Math.ceil(wait / SECOND);
      throw new TooManyRequestsError(`Too many sign-in attempts. Wait ${formatWait(seconds)} and try again.`, seconds);
    }
  }

  recordFailure(identifier: string, address: string | undefined): void {
    for (const key of this.keys(identifier, address)) this.limiter.record(key, this.options.memoryMs);
  }

  /** A success clears the account's failures (not the address's: one person may try many accounts). */
  recordSuccess(identifier: string): void {
    this.limiter.reset(this.keys(identifier, undefined)[0]!);
  }

  private waitFor(key: string): number {
    const { count, windowEndsAt } = this.limiter.peek(key);
    const excess = count - this.options.freeAttempts;
    if (excess <= 0) return 0;
    const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (excess - 1));
    const lastFailureAt = windowEndsAt - this.options.memoryMs;
    return Math.max(0, lastFailureAt + delay - this.now());
  }
}

function formatWait(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}
