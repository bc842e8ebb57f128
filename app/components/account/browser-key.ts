import { base58btc } from "multiformats/bases/base58";

/**
 * A rotation key made in the browser for "Keep a key of your own" (docs/decisions/0050): a P-256 key pair from the
 * platform's Web Crypto (its random source and its curve code, no library), which the did:plc specification accepts
 * beside secp256k1 (Web Crypto has no secp256k1). The private key goes into a file the person downloads; only the
 * did:key, the public half, is put in the form. Nothing here ever sends the private key anywhere.
 */

/** The multicodec varint of a P-256 public key (0x1200, "p256-pub"), as did:key prefixes it. */
const P256_PUB_MULTICODEC = [0x80, 0x24];

export type BrowserKey = {
  /** did:key:zDn…, the public key the DID's rotation keys will name. */
  didKey: string;
  /** The 32-byte private scalar, hex: what @atproto/crypto's P256Keypair.import and the usual tools take. */
  privateKeyHex: string;
  /** The private key as a JWK (RFC 7517), for tools that read those. */
  privateJwk: JsonWebKey;
};

/** The did:key of a P-256 public key given as a JWK: its compressed point (0x02/0x03 and x), multicodec, base58btc. */
export function didKeyOfP256Jwk(jwk: JsonWebKey): string {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || !jwk.x || !jwk.y) throw new Error("not a P-256 public key");
  const x = fromBase64url(jwk.x);
  const y = fromBase64url(jwk.y);
  if (x.length !== 32 || y.length !== 32) throw new Error("not a P-256 public key");
  // SEC 1 §2.3.3: the compressed form is 0x02 when y is even, 0x03 when odd, then x.
  const compressed = new Uint8Array([...P256_PUB_MULTICODEC, (y[31]! & 1) === 0 ? 0x02 : 0x03, ...x]);
  return `did:key:${base58btc.encode(compressed)}`;
}

/** A new P-256 key pair from Web Crypto, exported once for the file. */
export async function makeBrowserKey(subtle: SubtleCrypto = globalThis.crypto.subtle): Promise<BrowserKey> {
  const pair = await subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const privateJwk = await subtle.exportKey("jwk", pair.privateKey);
  if (!privateJwk.d) throw new Error("the browser did not export the private key");
  return { didKey: didKeyOfP256Jwk(privateJwk), privateKeyHex: toHex(fromBase64url(privateJwk.d)), privateJwk };
}

/** What the downloaded file holds: the key, what it is for, and what to do with it, as JSON a person can read. */
export function keyFileText(key: BrowserKey, context: { did: string; handle: string; note: string }): string {
  const { kty, crv, x, y, d } = key.privateJwk;
  return `${JSON.stringify(
    {
      note: context.note,
      did: context.did,
      handle: context.handle,
      rotationKey: key.didKey,
      keyType: "P-256",
      privateKeyHex: key.privateKeyHex,
      privateKeyJwk: { kty, crv, x, y, d },
    },
    null,
    2,
  )}\n`;
}

function fromBase64url(text: string): Uint8Array {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=");
  return Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
