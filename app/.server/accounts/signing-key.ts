import { P256Keypair, type Keypair } from "@atproto/crypto";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { createPrivateKey, sign, type KeyObject } from "node:crypto";

/**
 * Each account has its own ES256 (P-256) signing key: it signs the account's repository commits and its service-auth
 * tokens (com.atproto.server.getServiceAuth, proxied calls), and its DID document names it. The private JWK is stored
 * with the account.
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

const keypairs = new Map<string, AccountKeypair>();

/** The account's signing key (its stored private JWK), parsed once per key. */
export async function accountKeypair(stored: string): Promise<AccountKeypair> {
  let keypair = keypairs.get(stored);
  if (!keypair) {
    const jwk = JSON.parse(stored) as JWK;
    if (typeof jwk.d !== "string") throw new Error("The stored signing key has no private part");
    const didKey = (await P256Keypair.import(Buffer.from(jwk.d, "base64url"), { exportable: false })).did();
    const privateKey = createPrivateKey({ key: { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, d: jwk.d }, format: "jwk" });
    keypair = new AccountKeypair(privateKey, didKey);
    if (keypairs.size > 1000) keypairs.clear();
    keypairs.set(stored, keypair);
  }
  return keypair;
}
