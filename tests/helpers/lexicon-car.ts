import { P256Keypair, type Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { blocksToCarFile, concatBytesAsync, getRecords, MemoryBlockstore, readCarWithRoot, Repo, WriteOpAction } from "@atproto/repo";
import { CarWriter } from "@ipld/car";
import { encode, type LexValue } from "@atproto/lex-cbor";
import { CID } from "multiformats/cid";
import { sha256 } from "multiformats/hashes/sha2";

/**
 * Builds what a PDS answers to com.atproto.sync.getRecord for a lexicon record (collection
 * com.atproto.lexicon.schema, rkey = the NSID): a real atproto repository made with the reference's own
 * @atproto/repo, its commit signed with the authority's key, and the proof CAR @atproto/repo's getRecords writes
 * (the signed commit, the MST nodes on the path to the record, the record). Options break one part of it, as a
 * dishonest or broken PDS would.
 */

export const CAR_CONTENT_TYPE = "application/vnd.ipld.car";
export const LEXICON_COLLECTION = "com.atproto.lexicon.schema";

export type Block = { cid: CID; bytes: Uint8Array };

/** The multicodec of DAG-CBOR, which a CIDv1 of a block names. */
const DAG_CBOR = 0x71;

/** A DAG-CBOR block with its CIDv1 (sha256). */
export async function encodeBlock(value: unknown): Promise<Block> {
  const bytes = encode(value as LexValue);
  const digest = await sha256.digest(bytes);
  return { cid: CID.createV1(DAG_CBOR, digest), bytes };
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

/** A lexicon authority: its DID and the key its DID document names as #atproto. */
export type LexiconAuthority = { did: string; key: Keypair };

export type LexiconCarOptions = {
  authority: LexiconAuthority;
  /** The record key (the lexicon's NSID). */
  nsid: string;
  /** The lexicon document; `$type: "com.atproto.lexicon.schema"` is added. Its `id` is used as given. */
  document: Record<string, unknown>;
  /** Sign the commit with this key instead of the authority's. */
  signWith?: Keypair;
  /** Flip a byte of the record block while keeping its CID, so its hash no longer matches. */
  tamperRecord?: boolean;
  /**
   * The signed repository holds another record, not this one; the CAR carries the (absence) proof for this key and
   * the record block beside it, outside the proof.
   */
  recordOutsideProof?: boolean;
};

export async function buildLexiconCar(options: LexiconCarOptions): Promise<Uint8Array> {
  const record = { $type: LEXICON_COLLECTION, ...options.document };
  const rkey = options.recordOutsideProof ? `${options.nsid}Other` : options.nsid;
  const storage = new MemoryBlockstore();
  const repo = await Repo.create(storage, options.authority.did, options.signWith ?? options.authority.key, [
    { action: WriteOpAction.Create, collection: LEXICON_COLLECTION, rkey, record },
  ]);
  let car = await concatBytesAsync(getRecords(storage, repo.cid, [{ collection: LEXICON_COLLECTION, rkey: options.nsid }]));
  if (options.recordOutsideProof) car = await withBlock(car, await encodeBlock(record));
  if (options.tamperRecord) car = await withTamperedRecord(car, (await encodeBlock(record)).cid);
  return car;
}

async function withBlock(car: Uint8Array, block: Block): Promise<Uint8Array> {
  const { root, blocks } = await readCarWithRoot(car);
  blocks.set(block.cid as never, block.bytes);
  return blocksToCarFile(root, blocks);
}

/** The same CAR with the record block's last byte flipped (its CID kept), written without @atproto/repo's checks. */
async function withTamperedRecord(car: Uint8Array, recordCid: CID): Promise<Uint8Array> {
  const { root, blocks } = await readCarWithRoot(car);
  const out: Block[] = [];
  blocks.forEach((bytes, cid) => {
    const copy = Uint8Array.from(bytes);
    if (cid.toString() === recordCid.toString()) copy[copy.length - 1] = copy[copy.length - 1]! ^ 0x01;
    out.push({ cid: CID.parse(cid.toString()), bytes: copy });
  });
  return writeCar([CID.parse(root.toString())], out);
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

/** A did:web authority's DID document: its #atproto_pds service is `pdsEndpoint`, its #atproto key `key` (Multikey). */
export function atprotoDidDocument(did: string, pdsEndpoint: string, key?: Keypair): Record<string, unknown> {
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
    id: did,
    alsoKnownAs: [],
    verificationMethod: key ? [{ id: `${did}#atproto`, type: "Multikey", controller: did, publicKeyMultibase: key.did().slice("did:key:".length) }] : [],
    service: [{ id: "#atproto_pds", type: "AtprotoPersonalDataServer", serviceEndpoint: pdsEndpoint }],
  };
}

/** A fresh P-256 key for an authority. */
export function newAuthorityKey(): Promise<P256Keypair> {
  return P256Keypair.create({ exportable: false });
}

/**
 * A did:plc authority registered at a real PLC directory (the test run's, tests/helpers/postgres-global-setup.ts):
 * its document names `key` as #atproto and `pdsEndpoint` as its PDS. Registered with @did-plc/lib, the
 * reference's own client.
 */
export async function registerPlcAuthority(directoryUrl: string, pdsEndpoint: string, handle = "lexicons.example.com"): Promise<LexiconAuthority> {
  const key = await newAuthorityKey();
  const rotation = await P256Keypair.create({ exportable: false });
  const { op, did } = await plc.createOp({ signingKey: key.did(), handle, pds: pdsEndpoint, rotationKeys: [rotation.did()], signer: rotation });
  await new plc.Client(directoryUrl).sendOperation(did, op);
  return { did, key };
}
