import { P256Keypair, parseDidKey, verifySignature } from "@atproto/crypto";
import { describe, expect, it } from "vitest";
import { didKeyOfP256Jwk, keyFileText, makeBrowserKey } from "./browser-key.ts";

/** The key the account page makes in the browser, checked against @atproto/crypto (what the PLC directory runs). */
describe("a rotation key made with Web Crypto", () => {
  it("its did:key is the one @atproto/crypto derives from the private key, and the file's key signs for it", async () => {
    for (let i = 0; i < 16; i++) {
      const key = await makeBrowserKey();
      expect(key.didKey).toMatch(/^did:key:zDn/);
      expect(parseDidKey(key.didKey).jwtAlg).toBe("ES256");
      const imported = await P256Keypair.import(key.privateKeyHex);
      expect(imported.did()).toBe(key.didKey);
      const data = new TextEncoder().encode("an operation");
      expect(await verifySignature(key.didKey, data, await imported.sign(data))).toBe(true);
    }
  });

  it("the file names the DID and the key, and holds the private key the page never sends", async () => {
    const key = await makeBrowserKey();
    const file = JSON.parse(keyFileText(key, { did: "did:plc:alice", handle: "alice.test", note: "Keep it safe" })) as Record<string, unknown>;
    expect(file).toMatchObject({ note: "Keep it safe", did: "did:plc:alice", handle: "alice.test", rotationKey: key.didKey, keyType: "P-256", privateKeyHex: key.privateKeyHex });
    expect((await P256Keypair.import(file.privateKeyHex as string)).did()).toBe(key.didKey);
  });

  it("refuses what is not a P-256 public key", () => {
    expect(() => didKeyOfP256Jwk({ kty: "EC", crv: "P-384", x: "AA", y: "AA" })).toThrow(/P-256/);
    expect(() => didKeyOfP256Jwk({ kty: "EC", crv: "P-256", x: "AA", y: "AA" })).toThrow(/P-256/);
  });
});
