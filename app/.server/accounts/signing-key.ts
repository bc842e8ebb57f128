import { exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import { P256Keypair } from "@atproto/crypto";

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


const keypairs = new Map<string, P256Keypair>();

/**
 * The account's signing key as an @atproto/crypto keypair: what signs its repository commits and, through the DID
 * document's `#atproto` verification method, what the network checks. @atproto/crypto signs with low-S ECDSA
 * signatures, which atproto requires (jose does not normalise S).
 */
export async function accountKeypair(stored: string): Promise<P256Keypair> {
  let keypair = keypairs.get(stored);
  if (!keypair) {
    const { d } = JSON.parse(stored) as JWK;
    if (typeof d !== "string") throw new Error("The stored signing key has no private part");
    keypair = await P256Keypair.import(Buffer.from(d, "base64url"), { exportable: false });
    if (keypairs.size > 1000) keypairs.clear();
    keypairs.set(stored, keypair);
  }
  return keypair;
}
