import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto";
import type { ChallengeBinding, ChallengePurpose, ChallengeStore } from "../accounts/challenge-store.ts";
import type { ReplayStore } from "../oauth/replay/replay-store.ts";
import { MINUTE } from "../util/time.ts";

/**
 * WebAuthn challenges that cost nothing to issue: the challenge itself
 * carries its purpose, expiry and a random part, MAC'ed together with what it
 * is bound to (docs/decisions/0012). Issuing writes no row, so anonymous
 * clients asking for passkey options cannot fill a table; only spending one
 * writes, a unique-constraint insert in the replay store that makes it single
 * use across every server process sharing the database.
 *
 * WebAuthn L3 §13.4.3: "the returned challenge value in the client's response
 * MUST match what was generated. This SHOULD be done in a fashion that does
 * not rely upon a client's behavior, e.g., the Relying Party SHOULD store the
 * challenge temporarily until the operation is complete." The MAC is that
 * memory: only a value this server generated verifies, and the client can
 * change nothing in it. "In order to prevent replay attacks, the challenges
 * MUST contain enough entropy to make guessing them infeasible. Challenges
 * SHOULD therefore be at least 16 bytes long": 16 random bytes, 56 in all.
 *
 * Layout: version (1) | purpose (1) | expiresAt, epoch ms (6, big-endian) |
 * random (16) | HMAC-SHA-256 over everything before it and the binding (32).
 */

const VERSION = 1;
const PURPOSE_CODES: Record<ChallengePurpose, number> = { authenticate: 1, register: 2 };
const HEADER_BYTES = 1 + 1 + 6;
const RANDOM_BYTES = 16;
const BODY_BYTES = HEADER_BYTES + RANDOM_BYTES;
const MAC_BYTES = 32;
const CHALLENGE_BYTES = BODY_BYTES + MAC_BYTES;
/** Longer than any challenge we issue, encoded; anything longer is not ours. */
const MAX_ENCODED_LENGTH = 128;

/**
 * A spent challenge is remembered this long past its expiry. The replay store
 * lets a new record take over an expired one; with the margin, that can only
 * happen once the challenge is refused as expired anyway, even when the
 * process checking expiry and the one recording disagree by a few seconds.
 */
const SPENT_RECORD_MARGIN_MS = MINUTE;

const REPLAY_NAMESPACE = "webauthn-challenge";

/**
 * The MAC key: derived from the cookie secret with HKDF (RFC 5869) under a
 * purpose-specific `info`, so it is independent of the CSRF tokens made
 * with that secret (RFC 5869 §3.2: info binds the key to its application).
 */
export function challengeMacKey(cookieSecret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", cookieSecret, Buffer.alloc(0), "atrium webauthn challenge mac v1", 32));
}

/** Every binding field in a fixed order, absent ones as null: equal bindings, equal bytes. */
function bindingBytes(binding: ChallengeBinding): Buffer {
  return Buffer.from(JSON.stringify([binding.requestIdHash ?? null, binding.accountDid ?? null, binding.sessionIdHash ?? null]), "utf8");
}

/** The bytes of a base64url challenge, only when it is exactly how we encode them (no padding, no stray characters). */
function decodeCanonical(challenge: string): Buffer | undefined {
  if (challenge.length > MAX_ENCODED_LENGTH || !/^[A-Za-z0-9_-]+$/.test(challenge)) return undefined;
  const bytes = Buffer.from(challenge, "base64url");
  return bytes.toString("base64url") === challenge ? bytes : undefined;
}

export class SignedChallengeStore implements ChallengeStore {
  constructor(
    private readonly key: Buffer,
    private readonly replay: ReplayStore,
    private readonly now: () => number = Date.now,
  ) {}

  issue(purpose: ChallengePurpose, binding: ChallengeBinding, lifetimeMs: number): string {
    const body = Buffer.alloc(BODY_BYTES);
    body.writeUInt8(VERSION, 0);
    body.writeUInt8(PURPOSE_CODES[purpose], 1);
    body.writeUIntBE(this.now() + lifetimeMs, 2, 6);
    randomBytes(RANDOM_BYTES).copy(body, HEADER_BYTES);
    return Buffer.concat([body, this.mac(body, binding)]).toString("base64url");
  }

  async consume(challenge: string, purpose: ChallengePurpose, binding: ChallengeBinding): Promise<boolean> {
    const bytes = decodeCanonical(challenge);
    if (bytes?.length !== CHALLENGE_BYTES) return false;
    const body = bytes.subarray(0, BODY_BYTES);
    // Timing-safe: a forger learns nothing from how long the refusal took.
    if (!timingSafeEqual(bytes.subarray(BODY_BYTES), this.mac(body, binding))) return false;
    if (body.readUInt8(0) !== VERSION || body.readUInt8(1) !== PURPOSE_CODES[purpose]) return false;
    const expiresAt = body.readUIntBE(2, 6);
    if (expiresAt <= this.now()) return false;
    // Authentic, live and for this purpose and binding: now spend it, once.
    const id = body.subarray(HEADER_BYTES).toString("base64url");
    return this.replay.recordUnique(REPLAY_NAMESPACE, id, expiresAt + SPENT_RECORD_MARGIN_MS);
  }

  private mac(body: Buffer, binding: ChallengeBinding): Buffer {
    return createHmac("sha256", this.key).update(body).update(bindingBytes(binding)).digest();
  }
}
