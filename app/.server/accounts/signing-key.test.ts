import { verifySignature } from "@atproto/crypto";
import { compactVerify, importJWK, type JWK } from "jose";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { accountKeypair, generateSigningKey, lowS } from "./signing-key.ts";

/** P-256's group order (SEC 2, §2.4.2), written out again here so that the test does not borrow the code's. */
const N = BigInt("0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
const sOf = (signature: Uint8Array) => BigInt(`0x${Buffer.from(signature.subarray(32)).toString("hex")}`);

describe("an account's signing key", () => {
  it("is one key for jose and for @atproto/crypto (its did:key, the verification the network does)", async () => {
    const stored = await generateSigningKey();
    const keypair = await accountKeypair(stored);
    const jwk = JSON.parse(stored) as JWK;
    // The did:key names the same public key jose verifies with.
    const jwt = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).sign(await importJWK(jwk, "ES256"));
    await expect(compactVerify(jwt, await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, "ES256"))).resolves.toBeDefined();
    expect(keypair.did()).toMatch(/^did:key:zDn/);
    const data = new TextEncoder().encode("commit bytes");
    const signature = await keypair.sign(data);
    // verifySignature refuses high-S signatures by default: what @atproto/crypto makes is what atproto accepts.
    await expect(verifySignature(keypair.did(), data, signature)).resolves.toBe(true);
    await expect(verifySignature(keypair.did(), new TextEncoder().encode("other bytes"), signature)).resolves.toBe(false);
  });

  it("signs with low-S signatures only, which @atproto/crypto's strict verification accepts (docs/decisions/0041)", async () => {
    const keypair = await accountKeypair(await generateSigningKey());
    // OpenSSL's k is random: about half of its signatures come out high-S before the normalisation.
    for (let i = 0; i < 64; i++) {
      const data = new TextEncoder().encode(`commit ${i}`);
      const signature = await keypair.sign(data);
      expect(signature.byteLength).toBe(64);
      expect(sOf(signature) <= N / 2n).toBe(true);
      expect(await verifySignature(keypair.did(), data, signature)).toBe(true);
    }
  });

  it("lowS turns a high-S signature into its low-S twin and leaves a low-S one as it is", async () => {
    const keypair = await accountKeypair(await generateSigningKey());
    const data = new TextEncoder().encode("commit bytes");
    const signature = await keypair.sign(data);
    const high = new Uint8Array(64);
    high.set(signature.subarray(0, 32));
    high.set(Buffer.from((N - sOf(signature)).toString(16).padStart(64, "0"), "hex"), 32);
    // The twin is a valid signature that atproto refuses (malleable), until it is normalised.
    expect(await verifySignature(keypair.did(), data, high, { allowMalleableSig: true })).toBe(true);
    expect(await verifySignature(keypair.did(), data, high)).toBe(false);
    expect(Buffer.from(lowS(high))).toEqual(Buffer.from(signature));
    expect(lowS(signature)).toBe(signature);
    expect(() => lowS(signature.subarray(1))).toThrow(/64 bytes/);
  });
});
