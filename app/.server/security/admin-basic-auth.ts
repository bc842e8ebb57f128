import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { AtriumError } from "../errors/atrium-error.ts";
import { limitBucketOf } from "../http/forwarded-address.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import type { AttemptRule, AttemptStore } from "./attempt-store.ts";

/**
 * The operator's credential on the admin /xrpc methods the invite codes need (docs/decisions/0052): HTTP Basic
 * `admin:<ATRIUM_ADMIN_PASSWORD>`, as the reference PDS takes it (its auth verifier's adminToken), so that the
 * reference's `pdsadmin` works unmodified (`pdsadmin account create` makes its invite code this way). Unset: refused.
 *
 * The password is compared in constant time (HMACs of both sides under a key of this process, compared with
 * timingSafeEqual: equal lengths whatever was sent), and every attempt is counted before it is checked
 * (docs/decisions/0009), on the client address's counter (its IPv6 /64) and on one of the whole server, so that a guess
 * spread over many addresses gets no further than one address would. A right password takes its count back.
 */

/** The one user name Basic auth accepts, as the reference's. */
export const ADMIN_USER = "admin";

/** The challenge of a refused admin call (RFC 7617 §2). */
export const ADMIN_CHALLENGE = 'Basic realm="admin", charset="UTF-8"';

export type AdminThrottleRule = { perAddress: number; global: number; baseDelayMs: number; maxDelayMs: number; memoryMs: number };

/** Ten wrong passwords per address, a hundred in all, then 1 s, 2 s, 4 s… up to 15 minutes, forgotten 15 minutes after the last. */
export const DEFAULT_ADMIN_THROTTLE: AdminThrottleRule = { perAddress: 10, global: 100, baseDelayMs: SECOND, maxDelayMs: 15 * MINUTE, memoryMs: 15 * MINUTE };

const GLOBAL_KEY = "admin:global";
const ADDRESS_PREFIX = "admin:address:";

/** A refused admin credential: the reference's 401 `AuthenticationRequired`, with a Basic challenge. */
export class AdminAuthError extends AtriumError {
  constructor(message = "Authentication Required") {
    super("admin_auth_required", message, { status: 401, xrpcName: "AuthenticationRequired", challenge: ADMIN_CHALLENGE });
  }
}

export class AdminBasicAuth {
  /** Both sides of the comparison are MACed under this process's own key: equal lengths, nothing to learn from time. */
  private readonly compareKey = randomBytes(32);
  private readonly expected: Buffer | undefined;
  private readonly rule: AttemptRule;

  constructor(
    password: string | undefined,
    private readonly attempts: AttemptStore,
    private readonly throttle: AdminThrottleRule = DEFAULT_ADMIN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {
    this.expected = password === undefined ? undefined : this.mac(password);
    this.rule = { memoryMs: throttle.memoryMs, delayAfter: (key, count) => this.delayAfter(key, count) };
  }

  /**
   * `Authorization: Basic base64(admin:<password>)`, or AdminAuthError for anything else (no header, another scheme,
   * another user, a wrong password); TooManyRequestsError while the address or the server waits.
   */
  async verifyBasic(authorization: string | null, address: string | undefined): Promise<void> {
    if (this.expected === undefined) throw new AdminAuthError("Admin calls are turned off on this server: it has no admin password (ATRIUM_ADMIN_PASSWORD)");
    const credentials = basicCredentials(authorization);
    if (!credentials) throw new AdminAuthError();
    const keys = address ? [`${ADDRESS_PREFIX}${limitBucketOf(address)}`, GLOBAL_KEY] : [GLOBAL_KEY];
    const wait = await this.attempts.claim(keys, this.now(), this.rule);
    if (wait > 0) {
      const seconds = Math.ceil(wait / SECOND);
      throw new TooManyRequestsError(`Too many admin sign-in attempts. Wait ${seconds} seconds and try again.`, seconds);
    }
    // Another user name costs the same comparison.
    const given = this.mac(credentials.user === ADMIN_USER ? credentials.password : "");
    if (credentials.user === ADMIN_USER && timingSafeEqual(given, this.expected)) {
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
    const excess = count - (key === GLOBAL_KEY ? this.throttle.global : this.throttle.perAddress);
    return excess < 0 ? 0 : Math.min(this.throttle.maxDelayMs, this.throttle.baseDelayMs * 2 ** excess);
  }
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
