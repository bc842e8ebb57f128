import { parseDidKey } from "@atproto/crypto";

/**
 * did:plc specification (https://web.plc.directory/spec/v0.1/did-plc): `rotationKeys` is a "priority-ordered list"
 * of "at least 1 key and at most 5 keys", each a did:key of a curve the directory accepts (P-256 or secp256k1:
 * @did-plc/lib's assureValidOp refuses anything @atproto/crypto's parseDidKey does not read).
 */
export const MAX_ROTATION_KEYS = 5;

/** The longest did:key text taken (a compressed secp256k1 or P-256 did:key is 57 characters). */
const MAX_DID_KEY_LENGTH = 100;

/** A did:key as a person may paste it (spaces around it taken off), or why it is not one. */
export function parseRecoveryKey(text: string): { ok: true; didKey: string } | { ok: false; reason: string } {
  const didKey = text.trim();
  if (!didKey.startsWith("did:key:z") || didKey.length > MAX_DID_KEY_LENGTH) return { ok: false, reason: "must be a did:key (did:key:z…)" };
  try {
    const { jwtAlg } = parseDidKey(didKey);
    if (jwtAlg !== "ES256" && jwtAlg !== "ES256K") return { ok: false, reason: "must be a P-256 or secp256k1 did:key" };
  } catch {
    return { ok: false, reason: "is not a did:key of a P-256 or secp256k1 public key" };
  }
  return { ok: true, didKey };
}

/** Whether `didKey` is a did:key the directory accepts as a rotation or verification key. */
export function isUsableDidKey(didKey: string): boolean {
  const parsed = parseRecoveryKey(didKey);
  return parsed.ok && parsed.didKey === didKey;
}

/**
 * The rotation keys with `ownKey` placed first, above this server's and any other (a key already in the list moves
 * to the top rather than appearing twice): the person's key then outranks this server's, so that within the
 * directory's recovery window it can undo what this server's key signed (did:plc specification, "Key Rotation &
 * Account Recovery").
 */
export function withOwnKeyFirst(rotationKeys: readonly string[], ownKey: string): string[] {
  return [ownKey, ...rotationKeys.filter((key) => key !== ownKey)];
}
