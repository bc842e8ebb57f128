import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { encryptionKey, KeyEncryptionError, KeyRing, sealedKeyId } from "./key-encryption.ts";

const key = () => encryptionKey(randomBytes(32));

describe("signing keys sealed under a key from the environment (docs/decisions/0050)", () => {
  it("opens what it sealed, for the same account only, and never shows the plaintext", () => {
    const ring = new KeyRing(key());
    const sealed = ring.seal('{"kty":"EC","d":"secret"}', "did:plc:alice");
    expect(sealed).not.toContain("secret");
    expect(sealedKeyId(sealed)).toBe(ring.current.id);
    expect(ring.open(sealed, "did:plc:alice")).toBe('{"kty":"EC","d":"secret"}');
    // Moved to another account's row, it does not open: the DID is authenticated with it.
    expect(() => ring.open(sealed, "did:plc:bob")).toThrow(KeyEncryptionError);
    // Two seals of one key differ (a fresh nonce each).
    expect(ring.seal("same", "did:plc:alice")).not.toBe(ring.seal("same", "did:plc:alice"));
  });

  it("refuses a sealed value changed in any byte", () => {
    const ring = new KeyRing(key());
    const sealed = ring.seal("a signing key", "did:plc:alice");
    const [scheme, id, nonce, body] = sealed.split(":") as [string, string, string, string];
    const bytes = Buffer.from(body, "base64url");
    for (let i = 0; i < bytes.byteLength; i++) {
      const changed = Buffer.from(bytes);
      changed[i]! ^= 1;
      expect(() => ring.open(`${scheme}:${id}:${nonce}:${changed.toString("base64url")}`, "did:plc:alice")).toThrow(/does not open/);
    }
  });

  it("a key it does not hold opens nothing; an earlier key still opens what it sealed", () => {
    const old = key();
    const sealedByOld = new KeyRing(old).seal("a signing key", "did:plc:alice");
    expect(() => new KeyRing(key()).open(sealedByOld, "did:plc:alice")).toThrow(/neither ATRIUM_KEY_ENCRYPTION_KEY/);
    const rotated = new KeyRing(key(), [old]);
    expect(rotated.knows(old.id)).toBe(true);
    expect(rotated.open(sealedByOld, "did:plc:alice")).toBe("a signing key");
    expect(sealedKeyId(rotated.seal("a signing key", "did:plc:alice"))).toBe(rotated.current.id);
  });

  it("a value stored before keys were sealed is not opened: it is sealed at start first", () => {
    const ring = new KeyRing(key());
    expect(sealedKeyId('{"kty":"EC"}')).toBeNull();
    expect(() => ring.open('{"kty":"EC"}', "did:plc:alice")).toThrow(/not sealed/);
  });

  it("key ids differ between keys and say nothing of the key", () => {
    const bytes = randomBytes(32);
    expect(encryptionKey(bytes).id).toBe(encryptionKey(Buffer.from(bytes)).id);
    expect(encryptionKey(bytes).id).not.toBe(encryptionKey(randomBytes(32)).id);
    expect(encryptionKey(bytes).id).not.toContain(bytes.toString("base64url").slice(0, 8));
    expect(() => encryptionKey(randomBytes(16))).toThrow(/32 bytes/);
  });
});
