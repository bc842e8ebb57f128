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
  const illFormed = illFormedStringIn(value);
  if (illFormed !== undefined) throw new RecordDataError(`${illFormed} is not well-formed Unicode (it holds a lone surrogate)`);
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

/** A lone surrogate: with the `u` flag, a surrogate pair is one code point and only an unpaired half matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/** A node of the walk below, with how it was reached: the path is spelled out only for the one refused. */
type Visit = { node: unknown; parent?: Visit; step?: string };

/**
 * Where a value holds a string, as a value or as an object key at any depth, that is not well-formed Unicode, or
 * undefined. atproto data model: strings are Unicode, "UTF-8 encoded" in DAG-CBOR; a lone surrogate (`"\ud800"` in
 * JSON) has no UTF-8 form, so the encoder writes U+FFFD in its place and the signed block no longer says what the
 * JSON kept for getRecord says. Such a record is refused rather than stored twice differently (issue 28, item 10).
 * An explicit stack, as in blob-refs.ts: nesting costs memory, not call stack.
 */
export function illFormedStringIn(value: unknown): string | undefined {
  const pending: Visit[] = [{ node: value }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const { node } = visit;
    if (typeof node === "string") {
      if (LONE_SURROGATE.test(node)) return `the string at ${pathOf(visit)}`;
      continue;
    }
    if (node === null || typeof node !== "object") continue;
    if (Array.isArray(node)) {
      node.forEach((item, index) => pending.push({ node: item, parent: visit, step: `[${index}]` }));
      continue;
    }
    for (const [key, child] of Object.entries(node)) {
      if (LONE_SURROGATE.test(key)) return `a key of ${pathOf(visit)}`;
      pending.push({ node: child, parent: visit, step: `.${key}` });
    }
  }
  return undefined;
}

/** `$.embed.images[0].alt`: JSONPath, `$` the record. */
function pathOf(visit: Visit): string {
  const steps: string[] = [];
  for (let at: Visit | undefined = visit; at?.step !== undefined; at = at.parent) steps.push(at.step);
  return `$${steps.reverse().join("")}`;
}
