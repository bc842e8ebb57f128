import { createHash } from "node:crypto";
import { TID } from "@atproto/common-web";
import { isValidNsid, isValidRecordKey } from "@atproto/syntax";
import { CID } from "multiformats/cid";
import { create as digestOf } from "multiformats/hashes/digest";

/** Multicodec codes (multiformats' table): a blob's CID names its raw bytes, hashed with SHA-256. */
const RAW_CODEC = 0x55;
const SHA2_256 = 0x12;

/**
 * The CID of a blob (atproto data model, "Blob"): CIDv1, raw codec, SHA-256, written in base32 by multiformats.
 * Records are not hashed here: their CID is that of their DAG-CBOR block (record-data.ts).
 */
export function rawCid(bytes: Uint8Array | string): string {
  return rawCidOfDigest(createHash("sha256").update(bytes).digest());
}

/** The same CID from the SHA-256 digest of the bytes, hashed as they streamed (an upload: docs/decisions/0043). */
export function rawCidOfDigest(digest: Uint8Array): string {
  return CID.createV1(RAW_CODEC, digestOf(SHA2_256, digest)).toString();
}

/**
 * Whether a string is a CID that multiformats can parse (any codec). A test, not a parser: where a CID is needed, the
 * code parses it with @atproto/lex-data's parseCid, which throws on anything else.
 */
export function isCidString(value: string): boolean {
  try {
    CID.parse(value);
    return true;
  } catch {
    return false;
  }
}

let lastMicros = 0;
const clockId = Math.floor(Math.random() * 1024);

/**
 * A TID record key (atproto "Record Key Type: tid"): microseconds since the epoch from the injected clock and a
 * random clock identifier, strictly increasing within this process. @atproto/common-web writes it.
 */
export function nextTid(now: number): string {
  let micros = now * 1000;
  if (micros <= lastMicros) micros = lastMicros + 1;
  lastMicros = micros;
  return TID.fromTime(micros, clockId).toString();
}

/** atproto NSID syntax, as @atproto/syntax checks it (the one validator: issue 17). */
export function isNsid(value: string): boolean {
  return isValidNsid(value);
}

/**
 * The one spelling of an NSID that every permission, blocklist and routing
 * decision compares. atproto NSID spec: the domain authority is
 * case-insensitive (it is a reversed domain name), the name segment is
 * case-sensitive; so the authority is lower-cased and the name kept, and
 * `CHAT.BSKY.convo.sendMessage` is `chat.bsky.convo.sendMessage`.
 */
export function canonicalNsid(nsid: string): string {
  const nameStart = nsid.lastIndexOf(".") + 1;
  return nsid.slice(0, nameStart).toLowerCase() + nsid.slice(nameStart);
}

/** atproto record key syntax, as @atproto/syntax checks it. */
export function isRecordKey(value: string): boolean {
  return isValidRecordKey(value);
}
