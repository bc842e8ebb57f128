import { CarWriter } from "@ipld/car";
import * as dagCbor from "@ipld/dag-cbor";
import { CID } from "multiformats/cid";
import { sha256 } from "multiformats/hashes/sha2";

/**
 * Builds what a PDS answers to com.atproto.sync.getRecord for a lexicon
 * record (collection com.atproto.lexicon.schema, rkey = the NSID): a CAR
 * file whose root is a repo commit, holding the commit, a one-entry MST node
 * and the DAG-CBOR record. The commit's signature is a placeholder (nothing
 * in Atrium verifies it).
 */

export const CAR_CONTENT_TYPE = "application/vnd.ipld.car";
export const LEXICON_COLLECTION = "com.atproto.lexicon.schema";

export type Block = { cid: CID; bytes: Uint8Array };

/** A DAG-CBOR block with its CIDv1 (sha256). */
export async function encodeBlock(value: unknown): Promise<Block> {
  const bytes = dagCbor.encode(value);
  const digest = await sha256.digest(bytes);
  return { cid: CID.createV1(dagCbor.code, digest), bytes };
}

/** A lexicon document `{lexicon: 1, id, defs: {main: {type: "permission-set", ...}}}`. */
export function permissionSetLexicon(
  nsid: string,
  permissions: Array<Record<string, unknown>>,
  main: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    lexicon: 1,
    id: nsid,
    defs: { main: { type: "permission-set", ...main, permissions: permissions.map((p) => ({ type: "permission", ...p })) } },
  };
}

export type LexiconCarOptions = {
  did: string;
  /** The record key (the lexicon's NSID). */
  nsid: string;
  /** The lexicon document; `$type: "com.atproto.lexicon.schema"` is added. Its `id` is used as given. */
  document: Record<string, unknown>;
  /** More blocks to put in the CAR. */
  extraBlocks?: Block[];
  /** Flip a byte of the record block while keeping its CID, so its hash no longer matches. */
  tamperRecord?: boolean;
};

export async function buildLexiconCar(options: LexiconCarOptions): Promise<Uint8Array> {
  const record = await encodeBlock({ $type: LEXICON_COLLECTION, ...options.document });
  const mst = await encodeBlock({
    l: null,
    e: [{ p: 0, k: new TextEncoder().encode(`${LEXICON_COLLECTION}/${options.nsid}`), v: record.cid, t: null }],
  });
  const commit = await encodeBlock({
    did: options.did,
    version: 3,
    data: mst.cid,
    rev: "3l5q5s2qzbk2a",
    prev: null,
    sig: new Uint8Array(64),
  });
  if (options.tamperRecord) {
    const bytes = Uint8Array.from(record.bytes);
    const last = bytes.length - 1;
    bytes[last] = bytes[last]! ^ 0x01;
    record.bytes = bytes;
  }
  return writeCar([commit.cid], [commit, mst, record, ...(options.extraBlocks ?? [])]);
}

export async function writeCar(roots: CID[], blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create(roots);
  const chunks: Uint8Array[] = [];
  const collecting = (async () => {
    for await (const chunk of out) chunks.push(chunk);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await collecting;
  return Buffer.concat(chunks);
}

/** A DID document whose #atproto_pds service is `pdsEndpoint`. */
export function atprotoDidDocument(did: string, pdsEndpoint: string): Record<string, unknown> {
  return {
    "@context": ["https://www.w3.org/ns/did/v1"],
    id: did,
    alsoKnownAs: [],
    verificationMethod: [],
    service: [{ id: "#atproto_pds", type: "AtprotoPersonalDataServer", serviceEndpoint: pdsEndpoint }],
  };
}
