import { createHash, randomInt } from "node:crypto";

const BASE32_RFC4648 = "abcdefghijklmnopqrstuvwxyz234567";
const BASE32_SORTABLE = "234567abcdefghijklmnopqrstuvwxyz";

function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_RFC4648[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_RFC4648[(value << (5 - bits)) & 31];
  return out;
}

/**
 * A CIDv1 string (multibase base32, raw codec 0x55, sha2-256). Records are
 * hashed as their JSON bytes, not DAG-CBOR: this is not a full atproto
 * repository (see README), but the value is a well-formed CID that changes
 * whenever the content does.
 */
export function rawCid(bytes: Uint8Array | string): string {
  const digest = createHash("sha256").update(bytes).digest();
  return `b${base32(Uint8Array.from([0x01, 0x55, 0x12, 0x20, ...digest]))}`;
}

let lastTimestamp = 0;
const clockId = randomInt(0, 1024);

/**
 * A TID record key (atproto): 53 bits of microseconds since the epoch and a
 * 10-bit clock identifier, in sortable base32, 13 characters; strictly
 * increasing within this process.
 */
export function nextTid(now = Date.now()): string {
  let micros = now * 1000;
  if (micros <= lastTimestamp) micros = lastTimestamp + 1;
  lastTimestamp = micros;
  let value = (BigInt(micros) << 10n) | BigInt(clockId);
  let out = "";
  for (let i = 0; i < 13; i++) {
    out = BASE32_SORTABLE[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

/** atproto NSID syntax (domain authority reversed + name). */
export function isNsid(value: string): boolean {
  return (
    value.length <= 317 &&
    /^[a-zA-Z]([a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?)+\.[a-zA-Z]([a-zA-Z0-9]{0,62})?$/.test(value) &&
    value.split(".").length >= 3
  );
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

/** atproto record key syntax. */
export function isRecordKey(value: string): boolean {
  return /^[A-Za-z0-9._:~-]{1,512}$/.test(value) && value !== "." && value !== "..";
}
