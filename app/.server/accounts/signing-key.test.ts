import { verifySignature } from "@atproto/crypto";
import { compactVerify, importJWK, type JWK } from "jose";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { accountKeypair, generateSigningKey, importSigningKey } from "./signing-key.ts";

describe("an account's signing key", () => {
  it("is one key for jose (service auth) and @atproto/crypto (commits, the DID document)", async () => {
    const stored = await generateSigningKey();
    const keypair = await accountKeypair(stored);
    const jwk = JSON.parse(stored) as JWK;
    // The did:key names the same public key jose verifies with.
    const jwt = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).sign(await importSigningKey(stored));
    await expect(compactVerify(jwt, await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, "ES256"))).resolves.toBeDefined();
    expect(keypair.did()).toMatch(/^did:key:zDn/);
    const data = new TextEncoder().encode("commit bytes");
    const signature = await keypair.sign(data);
    // verifySignature refuses high-S signatures by default: what @atproto/crypto makes is what atproto accepts.
    await expect(verifySignature(keypair.did(), data, signature)).resolves.toBe(true);
    await expect(verifySignature(keypair.did(), new TextEncoder().encode("other bytes"), signature)).resolves.toBe(false);
  });
});
