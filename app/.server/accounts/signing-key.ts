import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";

/**
 * Each account has its own ES256 (P-256) signing key, used for service auth
 * tokens (com.atproto.server.getServiceAuth, proxied calls). The private JWK
 * is stored with the account.
 */
export async function generateSigningKey(): Promise<string> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(privateKey);
  return JSON.stringify({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d });
}

const imported = new Map<string, CryptoKey | Uint8Array>();

export async function importSigningKey(stored: string): Promise<CryptoKey | Uint8Array> {
  let key = imported.get(stored);
  if (!key) {
    key = await importJWK(JSON.parse(stored) as JWK, "ES256");
    if (imported.size > 1000) imported.clear();
    imported.set(stored, key);
  }
  return key;
}

