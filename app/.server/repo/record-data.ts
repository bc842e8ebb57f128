import { encode } from "@atproto/lex-cbor";
import { cidForCbor, type Cid, type LexMap } from "@atproto/lex-data";
import { jsonToLex } from "@atproto/lex-json";

/**
 * Records between JSON (what clients write and read) and the atproto data model (what the repository holds, as
 * DAG-CBOR). atproto data model, "JSON Representation": `{"$link": …}` is a CID link, `{"$bytes": …}` bytes,
 * `{"$type": "blob", …}` a blob reference; null and nesting as in JSON; "Floats are not allowed" and integers are
 * 64-bit. @atproto/lex-json converts, strictly: a value the model cannot hold is refused, never rounded or dropped.
 */
export class RecordDataError extends Error {}

/** A record as the repository stores it: its DAG-CBOR block, the block's CID (and its string form), its size. */
export type RecordData = { lex: LexMap; block: Uint8Array; cidOf: Cid; cid: string; bytes: number };

/** The data-model form of a JSON record, or RecordDataError naming what the model cannot hold. */
export function recordToLex(value: Record<string, unknown>): LexMap {
  try {
    return jsonToLex(value as never, { strict: true }) as LexMap;
  } catch (error) {
    throw new RecordDataError(error instanceof Error ? error.message : String(error));
  }
}

/**
 * The record's data-model form, its block, CID (dag-cbor, sha2-256) and encoded size. Encoded once: the commit
 * stores this very block (commit-builder.ts) rather than encoding the record again (docs/decisions/0037).
 */
export async function recordData(value: Record<string, unknown>): Promise<RecordData> {
  const lex = recordToLex(value);
  const block = encode(lex);
  const cidOf = await cidForCbor(block);
  return { lex, block, cidOf, cid: cidOf.toString(), bytes: block.byteLength };
}
