import { P256Keypair, type Keypair } from "@atproto/crypto";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { createPrivateKey, sign, type KeyObject } from "node:crypto";
import type { KeyRing } from "./key-encryption.ts";

/**
 * Each account has its own ES256 (P-256) signing key: it signs the account's repository commits and its service-auth
 * tokens (com.atproto.server.getServiceAuth, proxied calls), and its DID document names it. Its private JWK is stored
 * with the account, sealed under ATRIUM_KEY_ENCRYPTION_KEY (SigningKeys, docs/decisions/0050); this returns it in the
 * clear, to be sealed once the account's DID is known.
 */
export async function generateSigningKey(): Promise<string> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(privateKey);
  return JSON.stringify({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d });
}

/**
 * P-256's group order n (SEC 2, §2.4.2). An ECDSA signature (r, s) and (r, n − s) verify alike; atproto accepts only
 * the one with s ≤ n/2 (https://atproto.com/specs/cryptography: "only the low-S signature is considered valid").
 */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const P256_HALF_ORDER = P256_ORDER >> 1n;

/** A 64-byte r‖s P-256 signature in its low-S form: s replaced by n − s when it is in the upper half. */
export function lowS(signature: Uint8Array): Uint8Array {
  if (signature.byteLength !== 64) throw new Error(`A P-256 signature is 64 bytes (r‖s); got ${signature.byteLength}`);
  const s = BigInt(`0x${Buffer.from(signature.subarray(32)).toString("hex")}`);
  if (s <= P256_HALF_ORDER) return signature;
  const normalized = new Uint8Array(64);
  normalized.set(signature.subarray(0, 32));
  normalized.set(Buffer.from((P256_ORDER - s).toString(16).padStart(64, "0"), "hex"), 32);
  return normalized;
}

/**
 * An account's signing key for what the network verifies: its repository commits and its service-auth tokens
 * (docs/decisions/0041). It signs with the platform's OpenSSL (about a tenth of the CPU of @atproto/crypto's
 * JavaScript P-256, which a commit otherwise spends most on) and normalises S as atproto requires; its did:key is
 * @atproto/crypto's. Tests verify its signatures with @atproto/crypto's strict verifySignature.
 */
export class AccountKeypair implements Keypair {
  readonly jwtAlg = "ES256";

  constructor(
    private readonly privateKey: KeyObject,
    private readonly didKey: string,
  ) {}

  did(): string {
    return this.didKey;
  }

  async sign(message: Uint8Array): Promise<Uint8Array> {
    // "ieee-p1363": the 64-byte r‖s form atproto uses, rather than DER. SHA-256 of the message, as ES256 and @atproto/crypto do.
    return lowS(sign("sha256", message, { key: this.privateKey, dsaEncoding: "ieee-p1363" }));
  }
}

/** The signing key of a private JWK in the clear (generateSigningKey's, or one SigningKeys opened). */
export async function accountKeypair(privateJwk: string): Promise<AccountKeypair> {
  const jwk = JSON.parse(privateJwk) as JWK;
  if (typeof jwk.d !== "string") throw new Error("The stored signing key has no private part");
  const didKey = (await P256Keypair.import(Buffer.from(jwk.d, "base64url"), { exportable: false })).did();
  const privateKey = createPrivateKey({ key: { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, d: jwk.d }, format: "jwk" });
  return new AccountKeypair(privateKey, didKey);
}

/** What a sealed key is bound to: the account's DID (a sealed key copied to another account's row does not open). */
function sealContext(did: string): string {
  return `atrium account signing key v1\n${did}`;
}

const MAX_CACHED_KEYPAIRS = 1000;

/**
 * The accounts' signing keys as stored: sealed under the key ring's current key (docs/decisions/0050), opened only
 * to sign. Opened keys are kept per sealed value (at most 1,000), so a commit does not pay for the AES and the key
 * import each time; a sealed value names its account, so one cached entry never serves another.
 */
export class SigningKeys {
  private readonly opened = new Map<string, AccountKeypair>();

  constructor(readonly ring: KeyRing) {}

  /** A private JWK in the clear, sealed for the account `did`: what the Account row stores. */
  seal(did: string, privateJwk: string): string {
    return this.ring.seal(privateJwk, sealContext(did));
  }

  /** The private JWK in the clear (to seal it again: under a newer key, or for a new DID). */
  open(did: string, stored: string): string {
    return this.ring.open(stored, sealContext(did));
  }

  /** The account's signing key, from what its row stores. */
  async keypair(did: string, stored: string): Promise<AccountKeypair> {
    const cacheKey = `${did}\n${stored}`;
    let keypair = this.opened.get(cacheKey);
    if (!keypair) {
      keypair = await accountKeypair(this.open(did, stored));
      if (this.opened.size >= MAX_CACHED_KEYPAIRS) this.opened.clear();
      this.opened.set(cacheKey, keypair);
    }
    return keypair;
  }
}
