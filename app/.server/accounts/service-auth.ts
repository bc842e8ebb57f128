import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { importSigningKey } from "./signing-key.ts";

/** atproto service auth: a short-lived JWT signed with the account's own key (iss = the account DID). */
export type ServiceJwtRequest = { iss: string; aud: string; lxm?: string; expiresAt: number; signingKey: string };

export async function createServiceJwt(request: ServiceJwtRequest): Promise<string> {
  const payload: Record<string, string> = { jti: randomBytes(16).toString("hex") };
  if (request.lxm) payload.lxm = request.lxm;
  return new SignJWT(payload)
    .setProtectedHeader({ typ: "JWT", alg: "ES256" })
    .setIssuer(request.iss)
    .setAudience(request.aud)
    .setIssuedAt()
    .setExpirationTime(Math.floor(request.expiresAt / 1000))
    .sign(await importSigningKey(request.signingKey));
}
