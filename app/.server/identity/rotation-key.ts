import { Secp256k1Keypair } from "@atproto/crypto";
import { ConfigError } from "../config.ts";
import type { SecretStore } from "../security/secret-store.ts";

/**
 * The server's PLC rotation key: the secp256k1 key (as the reference PDS uses) that signs every did:plc operation
 * this server makes for the accounts hosted here, below any key of the person's own in their `rotationKeys`
 * (docs/decisions/0028a-plc-identity.md, 0050). ATRIUM_PLC_ROTATION_KEY (64 hex digits), which an https issuer
 * requires (config.ts); on plain http on loopback, when unset, generated once and kept with the server's secrets, so
 * that development needs nothing configured.
 *
 * A key generated into the database by an earlier start is what the accounts' DIDs name. Once the setting holds the
 * same key, the database's copy is forgotten (a copy of the database must not hold it: docs/operations.md, "Backups");
 * a setting that differs from it stops the start, since the DIDs registered with the generated key can be changed only
 * with it, and a new one would leave them frozen without a word.
 */
export async function loadRotationKey(configuredHex: string | undefined, secrets: SecretStore, now: number): Promise<Secp256k1Keypair> {
  if (!configuredHex) return keypairOf(Buffer.from(await secrets.loadOrCreate("plc_rotation_key", now), "base64url"));
  const configured = await keypairOf(Buffer.from(configuredHex, "hex"));
  const stored = await secrets.find("plc_rotation_key");
  if (stored === undefined) return configured;
  const generated = await keypairOf(Buffer.from(stored, "base64url"));
  if (generated.did() !== configured.did()) {
    throw new ConfigError(
      `ATRIUM_PLC_ROTATION_KEY (${configured.did()}) is not the rotation key this server generated into its database earlier (${generated.did()}), ` +
        "which the accounts' DIDs name: set ATRIUM_PLC_ROTATION_KEY to that key (docs/data-server.md, \"Identity\", says how to read it). " +
        "If every account has moved to the new key already, delete the old one: DELETE FROM \"ServerSecret\" WHERE \"name\" = 'plc_rotation_key'.",
    );
  }
  await secrets.remove("plc_rotation_key", stored);
  return configured;
}

async function keypairOf(privateKey: Buffer): Promise<Secp256k1Keypair> {
  return Secp256k1Keypair.import(privateKey, { exportable: true });
}
