import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { AtriumError } from "../errors/atrium-error.ts";
import { limitBucketOf } from "../http/forwarded-address.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import type { AttemptRule, AttemptStore } from "../security/attempt-store.ts";
import { MINUTE, SECOND } from "../util/time.ts";

/**
 * The operator's credential (docs/decisions/0051): HTTP Basic `admin:<ATRIUM_ADMIN_PASSWORD>`, as the reference PDS
 * takes it (its auth-verifier's adminToken), so that its `pdsadmin` scripts work unmodified; the operator page, /admin,
 * signs in with the same password. Unset, every admin call is refused.
 *
 * The password is compared in constant time (HMACs of both under a key of this process, compared with
 * timingSafeEqual: equal lengths whatever was sent), and every attempt is counted before it is checked
 * (docs/decisions/0009), on two counters: the client address's (its IPv6 /64) and one for the whole server, so that a
 * guess spread over many addresses gets no further than one address would. A right password takes its count back.
 */

/** The one user name Basic auth accepts, as the reference's. */
export const ADMIN_USER = "admin";

/** The challenge of a refused admin call (RFC 7617 §2). */
export const ADMIN_CHALLENGE = 'Basic realm="admin", charset="UTF-8"';

export type AdminThrottleRule = {
  /** Attempts one address may fail at once before it waits. */
  perAddress: number;
  /** Attempts every address together may fail at once before each further attempt waits. */
  global: number;
  /** The first wait; each further attempt doubles it, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Failures are forgotten this long after the latest. */
  memoryMs: number;
};

/**
 * Ten wrong passwords per address, a hundred in all (every operator's tools together make far fewer mistakes), then
 * 1 s, 2 s, 4 s… up to 15 minutes between guesses, forgotten 15 minutes after the last: a distributed guess of a
 * password of 16 characters or more gets nowhere (docs/decisions/0051).
 */
export const DEFAULT_ADMIN_THROTTLE: AdminThrottleRule = { perAddress: 10, global: 100, baseDelayMs: SECOND, maxDelayMs: 15 * MINUTE, memoryMs: 15 * MINUTE };

const GLOBAL_KEY = "admin:global";
const ADDRESS_PREFIX = "admin:address:";

/** A refused admin credential: the reference's AuthRequiredError (401 `AuthenticationRequired`), with a Basic challenge. */
export class AdminAuthError extends AtriumError {
  constructor(message = "Authentication Required") {
    super("admin_auth_required", message, { status: 401, xrpcName: "AuthenticationRequired", challenge: ADMIN_CHALLENGE, messageKey: "admin:signIn.wrong" });
  }
}

export class AdminAuth {
  /** Both sides of the comparison are MAC'ed under this process's own key: equal lengths, nothing to learn from time. */
  private readonly compareKey = randomBytes(32);
  private readonly expected: Buffer | undefined;
  private readonly rule: AttemptRule;

  constructor(
    private readonly password: string | undefined,
    private readonly attempts: AttemptStore,
    private readonly throttle: AdminThrottleRule = DEFAULT_ADMIN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {
    this.expected = password === undefined ? undefined : this.mac(password);
    this.rule = { memoryMs: throttle.memoryMs, delayAfter: (key, count) => this.delayAfter(key, count) };
  }

  /** Whether an admin password is set: without one, every admin call and the operator page are refused. */
  get enabled(): boolean {
    return this.expected !== undefined;
  }

  /**
   * The admin credential of an /xrpc call: `Authorization: Basic base64(admin:<password>)`. Throws AdminAuthError for
   * anything else (no header, another scheme, another user, a wrong password), TooManyRequestsError while the
   * address or the server is waiting.
   */
  async verifyBasic(authorization: string | null, address: string | undefined): Promise<void> {
    if (!this.enabled) throw disabled();
    const credentials = basicCredentials(authorization);
    if (!credentials) throw new AdminAuthError();
    await this.check(credentials.user === ADMIN_USER ? credentials.password : undefined, address);
  }

  /** The operator page's sign-in: the admin password alone, on the same counters. */
  async verifyPassword(password: string, address: string | undefined): Promise<void> {
    if (!this.enabled) throw disabled();
    await this.check(password, address);
  }

  /**
   * A MAC of the admin password under `key` (the operator page's sessions record it: a session signed in with another
   * password, before the setting changed, is refused).
   */
  passwordTag(key: string): string {
    if (this.password === undefined) throw disabled();
    // Of the password itself, not of this process's MAC of it: every process, and the next start, agree.
    return createHmac("sha256", key).update(this.password, "utf8").digest("base64url");
  }

  /** Counts the attempt first, then compares; a wrong one stays counted, a right one is taken back. */
  private async check(password: string | undefined, address: string | undefined): Promise<void> {
    const keys = address ? [`${ADDRESS_PREFIX}${limitBucketOf(address)}`, GLOBAL_KEY] : [GLOBAL_KEY];
    const wait = await this.attempts.claim(keys, this.now(), this.rule);
    if (wait > 0) {
      const seconds = Math.ceil(wait / SECOND);
      throw new TooManyRequestsError(`Too many admin sign-in attempts. Wait ${seconds} seconds and try again.`, seconds, { messageKey: "admin:signIn.wait", messageValues: { count: seconds } });
    }
    // A user other than "admin" costs the same comparison.
    const given = this.mac(password ?? "");
    if (password !== undefined && timingSafeEqual(given, this.expected!)) {
      for (const key of keys) await this.attempts.forgive(key);
      return;
    }
    const now = this.now();
    for (const key of keys) await this.attempts.failed(key, now, this.throttle.memoryMs);
    throw new AdminAuthError();
  }

  private mac(value: string): Buffer {
    return createHmac("sha256", this.compareKey).update(value, "utf8").digest();
  }

  private delayAfter(key: string, count: number): number {
    const free = key === GLOBAL_KEY ? this.throttle.global : this.throttle.perAddress;
    const excess = count - free;
    if (excess < 0) return 0;
    return Math.min(this.throttle.maxDelayMs, this.throttle.baseDelayMs * 2 ** excess);
  }
}

function disabled(): AdminAuthError {
  return new AdminAuthError("Admin calls are turned off on this server: it has no admin password (ATRIUM_ADMIN_PASSWORD)");
}

/**
 * The user and password of `Authorization: Basic <base64>` (RFC 7617 §2): the scheme in any case, the password
 * everything after the first colon (it may hold colons); undefined for anything else.
 */
export function basicCredentials(authorization: string | null): { user: string; password: string } | undefined {
  const match = /^basic +([A-Za-z0-9+/]+={0,2})$/i.exec(authorization?.trim() ?? "");
  if (!match || match[1]!.length > 4096) return undefined;
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon === -1) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
