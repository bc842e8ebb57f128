import type { Keypair } from "@atproto/crypto";
import { jsonToLex } from "@atproto/lex-json";
import { BlockMap, blocksToCarFile, MemoryBlockstore, readCarWithRoot, Repo, verifyRepo, WriteOpAction, type VerifiedRepo } from "@atproto/repo";
import { parseCid } from "@atproto/lex-data";
import { randomBytes } from "node:crypto";
import { encryptionKey, KeyRing } from "../../app/.server/accounts/key-encryption.ts";
import { accountKeypair, generateSigningKey, SigningKeys } from "../../app/.server/accounts/signing-key.ts";
import type { Database } from "../../app/.server/db/sql.ts";
import { RepoWriter } from "../../app/.server/repo/repo-writer.ts";
import { SqlRepoStore } from "../../app/.server/stores/sql-repo-store.ts";
import { insertAccount } from "./store-fixtures.ts";

/**
 * Repositories for the store and domain tests: an account with a real signing key and its first commit, the store
 * and writer of one "process" (a handle on the database) with a clock the test moves, and the export of a
 * repository as a CAR checked by @atproto/repo's own verification (never Atrium's).
 */

export const GRACE_MS = 60_000;
export const RETENTION_MS = 72 * 3600_000;

export type Clock = { now: number };

/** The tests' accounts' signing keys, sealed under a key of this process (docs/decisions/0050). */
export const TEST_SIGNING_KEYS = new SigningKeys(new KeyRing(encryptionKey(randomBytes(32))));

export function repositoriesOn(db: Database, clock: Clock, settings = { blobGraceMs: GRACE_MS, eventRetentionMs: RETENTION_MS }) {
  const store = new SqlRepoStore(db, settings);
  const writer = new RepoWriter(store, TEST_SIGNING_KEYS, () => clock.now);
  return { store, writer };
}

/** A fresh signing key sealed for `did` (what its Account row stores), and its did:key. */
export async function sealedSigningKey(did: string): Promise<{ didKey: string; signingKey: string }> {
  const privateJwk = await generateSigningKey();
  return { didKey: (await accountKeypair(privateJwk)).did(), signingKey: TEST_SIGNING_KEYS.seal(did, privateJwk) };
}

/** Inserts an account with a fresh signing key and gives it its repository's first commit; its did:key. */
export async function accountWithRepository(db: Database, did: string, clock: Clock): Promise<{ didKey: string; signingKey: string }> {
  const { didKey, signingKey } = await sealedSigningKey(did);
  const account = await insertAccount(db, did, { signingKey });
  await repositoriesOn(db, clock).writer.createRepository({ did, signingKey, handle: account.handle });
  return { didKey, signingKey };
}

/** The whole repository as getRepo would send it: every block, rooted at the head, read page by page on one snapshot. */
export async function exportRepository(store: SqlRepoStore, did: string): Promise<Uint8Array> {
  const snapshot = await store.openSnapshot(did, { maxHoldMs: 60_000 });
  if (!snapshot) throw new Error(`${did} has no repository`);
  const blocks = new BlockMap();
  try {
    for (let page = await snapshot.blockPage("", { maxBytes: 64 * 1024 }); page.length > 0; page = await snapshot.blockPage(page.at(-1)!.cid, { maxBytes: 64 * 1024 })) {
      for (const block of page) blocks.set(parseCid(block.cid), block.bytes);
    }
  } finally {
    await snapshot.release();
  }
  return blocksToCarFile(parseCid(snapshot.head.cid), blocks);
}

/** @atproto/repo's verification of a repository CAR: signature by `didKey`, every MST node and record present. */
export async function verifiedRepository(car: Uint8Array, did: string, didKey: string): Promise<VerifiedRepo> {
  const { root, blocks } = await readCarWithRoot(car);
  return verifyRepo(blocks, root, did, didKey, { ensureLeaves: true });
}

export type ForeignRecord = { collection: string; rkey: string; value: Record<string, unknown> };

/**
 * A repository made elsewhere, as another PDS makes one (@atproto/repo's Repo.create): `did`'s records signed with
 * `keypair`, exported as com.atproto.sync.getRepo's CAR (every block, rooted at the commit).
 */
export async function foreignRepositoryCar(did: string, keypair: Keypair, records: readonly ForeignRecord[]): Promise<{ car: Uint8Array; commit: string; rev: string }> {
  const storage = new MemoryBlockstore();
  const creates = records.map((record) => ({ action: WriteOpAction.Create, collection: record.collection, rkey: record.rkey, record: jsonToLex(record.value as never) }));
  const repo = await Repo.create(storage, did, keypair, creates as never);
  return { car: await blocksToCarFile(repo.cid, storage.blocks), commit: repo.cid.toString(), rev: repo.commit.rev };
}

/** The CAR in pieces of `size` bytes, as a request body arrives. */
export async function* inPieces(car: Uint8Array, size = 64 * 1024): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < car.byteLength; start += size) yield car.subarray(start, start + size);
}
