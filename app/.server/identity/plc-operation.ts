import { cidForLex, encode, type LexValue } from "@atproto/lex-cbor";
import type { Keypair } from "@atproto/crypto";
import { base32 } from "multiformats/bases/base32";
import { sha256 } from "multiformats/hashes/sha2";

/**
 * did:plc operations, written as the did:plc specification (https://web.plc.directory/spec/v0.1/did-plc) defines
 * them: "the operation is encoded in DAG-CBOR, the bytes are signed, and the signature is added to the operation as
 * a base64url string (no padding)"; "the DID itself is derived from the hash of the first operation in the log,
 * called the genesis operation: sha256 of the DAG-CBOR bytes of the signed genesis operation, base32 encoded
 * (lower case, no padding), truncated to 24 characters"; `prev` is "the CID of the previous operation" (DAG-CBOR,
 * sha-256, CIDv1), null in the genesis operation.
 */

export type PlcService = { type: string; endpoint: string };

export type UnsignedPlcOperation = {
  type: "plc_operation";
  rotationKeys: string[];
  verificationMethods: Record<string, string>;
  alsoKnownAs: string[];
  services: Record<string, PlcService>;
  prev: string | null;
};

export type PlcOperation = UnsignedPlcOperation & { sig: string };

/**
 * The end of a DID. did:plc specification: "plc_tombstone: … the DID is tombstoned, and the DID document can no
 * longer be resolved"; it carries only `prev` and the signature of one of the last operation's rotation keys, and no
 * operation may follow it.
 */
export type UnsignedPlcTombstone = { type: "plc_tombstone"; prev: string };

export type PlcTombstone = UnsignedPlcTombstone & { sig: string };

/** What an atproto account's DID document says: its handle, its signing key, its PDS, who may change it. */
export type AtprotoIdentity = {
  handle: string;
  /** did:key of the account's signing key (the #atproto verification method). */
  signingKey: string;
  /** PUBLIC_URL exactly (the #atproto_pds service). */
  pdsEndpoint: string;
  /** did:keys allowed to sign the next operations, most authoritative first. */
  rotationKeys: string[];
};

export function atprotoOperation(identity: AtprotoIdentity, prev: string | null): UnsignedPlcOperation {
  return {
    type: "plc_operation",
    rotationKeys: identity.rotationKeys,
    verificationMethods: { atproto: identity.signingKey },
    alsoKnownAs: [`at://${identity.handle}`],
    services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: identity.pdsEndpoint } },
    prev,
  };
}

export async function signOperation<T extends UnsignedPlcOperation | UnsignedPlcTombstone>(operation: T, rotationKey: Keypair): Promise<T & { sig: string }> {
  const signature = await rotationKey.sign(encode(operation as LexValue));
  return { ...operation, sig: Buffer.from(signature).toString("base64url") };
}

/** The DID a signed genesis operation names. */
export async function didOfGenesis(operation: PlcOperation): Promise<string> {
  const digest = await sha256.digest(encode(operation as LexValue));
  return `did:plc:${base32.baseEncode(digest.digest).slice(0, 24)}`;
}

/** The CID of a signed operation: the next operation's `prev`. */
export async function operationCid(operation: object): Promise<string> {
  return (await cidForLex(operation as LexValue)).toString();
}
