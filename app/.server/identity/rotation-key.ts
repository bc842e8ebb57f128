import { Secp256k1Keypair } from "@atproto/crypto";
import type { Database } from "../db/sql.ts";
import { loadOrCreateSecret } from "../stores/secrets.ts";

/**
 * The server's PLC rotation key: the secp256k1 key (as the reference PDS uses) that signs every did:plc operation
 * of the accounts hosted here, and the only key in their `rotationKeys`. ATRIUM_PLC_ROTATION_KEY (64 hex digits)
 * when set; otherwise generated once and kept in the database with the other server secrets, so that nothing else
 * must be configured. Losing it means the accounts' DID documents can no longer be changed by this server
 * (docs/data-server.md, "Identity": back it up).
 */
export async function loadRotationKey(configuredHex: string | undefined, db: Database, now: number): Promise<Secp256k1Keypair> {
  const privateKey = configuredHex ? Buffer.from(configuredHex, "hex") : Buffer.from(await loadOrCreateSecret(db, "plc_rotation_key", now), "base64url");
  return Secp256k1Keypair.import(privateKey, { exportable: true });
}
