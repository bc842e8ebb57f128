import type { Keypair } from "@atproto/crypto";
import { randomBytes } from "node:crypto";

/** atproto service auth: a short-lived JWT signed with the account's own key (iss = the account DID). */
export type ServiceJwtRequest = { iss: string; aud: string; lxm?: string; expiresAt: number; signingKey: Keypair; now: number };

/**
 * Signed with the account's keypair (accounts/signing-key.ts, docs/decisions/0041), not jose: the network verifies
 * these tokens against the `#atproto` key of the DID document with atproto's rules, which refuse high-S ECDSA
 * signatures (https://atproto.com/specs/cryptography: "only the low-S signature is considered valid"); jose does not
 * normalise S.
 */
export async function createServiceJwt(request: ServiceJwtRequest): Promise<string> {
  const header = { typ: "JWT", alg: "ES256" };
  const payload: Record<string, string | number> = {
    iat: Math.floor(request.now / 1000),
    iss: request.iss,
    aud: request.aud,
    exp: Math.floor(request.expiresAt / 1000),
    jti: randomBytes(16).toString("hex"),
  };
  if (request.lxm) payload.lxm = request.lxm;
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = await request.signingKey.sign(new TextEncoder().encode(signingInput));
  return `${signingInput}.${Buffer.from(signature).toString("base64url")}`;
}

function base64url(text: string): string {
  return Buffer.from(text).toString("base64url");
}
