import { z } from "zod";
import { isUsableDidKey, MAX_ROTATION_KEYS } from "./rotation-keys.ts";

/**
 * What com.atproto.identity.signPlcOperation and submitPlcOperation take (their lexicons), checked before anything is
 * signed or sent: the reference PDS signs whatever it is given (its code leaves the check for later), so that a malformed
 * change is only found by the directory after this server's key signed it. The bounds are the did:plc
 * specification's (1 to 5 rotation keys, did:keys the directory reads) and generous ones of this server's where it
 * sets none (10 entries, short strings): an operation is a few hundred bytes.
 */

const MAX_ENTRIES = 10;
const MAX_TEXT = 512;

const didKey = z.string().refine(isUsableDidKey, "must be a did:key of a P-256 or secp256k1 public key");
const name = z.string().regex(/^[a-zA-Z0-9._~-]{1,32}$/, "must be a short name of letters, digits, '.', '_', '~' or '-'");
const text = z.string().min(1).max(MAX_TEXT);

const rotationKeys = z
  .array(didKey)
  .min(1, "must name at least one rotation key")
  .max(MAX_ROTATION_KEYS, `may name at most ${MAX_ROTATION_KEYS} rotation keys`)
  .refine((keys) => new Set(keys).size === keys.length, "must not name a key twice");
const alsoKnownAs = z.array(text).max(MAX_ENTRIES);
const verificationMethods = z.record(name, didKey).refine((methods) => Object.keys(methods).length <= MAX_ENTRIES, `may name at most ${MAX_ENTRIES} methods`);
const services = z
  .record(name, z.object({ type: text, endpoint: text }).strict())
  .refine((entries) => Object.keys(entries).length <= MAX_ENTRIES, `may name at most ${MAX_ENTRIES} services`);

/** signPlcOperation's input: the emailed code, and the fields to change (each absent one stays as it is). */
export const signPlcOperationInput = z.object({
  token: z.string().max(64).optional(),
  rotationKeys: rotationKeys.optional(),
  alsoKnownAs: alsoKnownAs.optional(),
  verificationMethods: verificationMethods.optional(),
  services: services.optional(),
});

export type PlcOperationChange = z.infer<typeof signPlcOperationInput>;

/** A signed did:plc operation as submitPlcOperation takes it (never a tombstone: that is not a change of a live DID). */
export const submittedOperation = z
  .object({
    type: z.literal("plc_operation"),
    rotationKeys,
    verificationMethods,
    alsoKnownAs,
    services,
    prev: z.string().max(128).nullable(),
    sig: z.string().max(256),
  })
  .strict();

export const submitPlcOperationInput = z.object({ operation: z.unknown() });
