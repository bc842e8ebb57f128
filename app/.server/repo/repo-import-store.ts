import type { BlockRow, RepoHead } from "./repo-store.ts";

/** A record an import's commit reaches: its path, its block's CID, its JSON (as Record holds it), the blobs it names. */
export type StagedRecord = { collection: string; rkey: string; cid: string; json: string; blobCids: readonly string[] };

/** What applying an import does: its account, the head it was read against, and the commit that replaces it. */
export type ImportedHead = {
  did: string;
  /** The head when the import began (none before the account's first commit): the compare-and-swap's expected value. */
  base: RepoHead | undefined;
  /** This server's commit of the imported tree, signed with the account's key. */
  head: RepoHead;
  commitBlock: Uint8Array;
};

/**
 * "imported"; "head-moved" when another import of the account landed since this one began; "active" when the
 * account is not deactivated (imports are for accounts being moved here, before activateAccount); "no-account".
 */
export type ImportOutcome = "imported" | "head-moved" | "active" | "no-account";

/** What checkAccountStatus reports of a repository and its blobs (the reference PDS's counts). */
export type ImportStatus = {
  head: RepoHead | undefined;
  blocks: number;
  records: number;
  /** Distinct blobs the records reference, and those of them stored here. */
  expectedBlobs: number;
  importedBlobs: number;
};

/** A blob a record references and this server does not have yet: its CID and one record naming it. */
export type MissingBlob = { cid: string; collection: string; rkey: string };

/**
 * Repositories being moved here (com.atproto.repo.importRepo, docs/decisions/0055). An import's blocks, MST nodes and
 * records are staged in rows of their own, batch by batch as the CAR is read and checked, so that neither the CAR nor
 * its tree is held in memory; applying it is one transaction that replaces the account's repository with the staged
 * one. Nothing of an import the account's rows never saw is visible anywhere.
 */
export interface RepoImportStore {
  /** A new import for the account, kept until `expiresAt` at most; removes a batch of expired ones first. */
  begin(did: string, now: number, expiresAt: number): Promise<string>;
  /** Stages blocks as they arrive (a block staged twice is kept once). */
  stageBlocks(importId: string, blocks: ReadonlyArray<{ cid: string; bytes: Uint8Array }>): Promise<void>;
  /** The staged blocks among `cids`. */
  stagedBlocks(importId: string, cids: readonly string[]): Promise<BlockRow[]>;
  /** Stages what the walk of the tree found: the MST nodes it read, and the records of its leaves. */
  stageTree(importId: string, nodes: readonly string[], records: readonly StagedRecord[]): Promise<void>;
  /**
   * One transaction, under the lock every commit of the account takes: if the account is still deactivated and its
   * head is still `base`, its blocks, records and blob references are replaced by the import's (only the blocks its
   * tree reaches, and the new commit's), its blobs' grace periods follow their references, and its head moves to
   * `head`. Nothing is written otherwise.
   */
  apply(importId: string, head: ImportedHead, now: number): Promise<ImportOutcome>;
  /** Deletes the import's staged rows (after it was applied, or refused). */
  discard(importId: string): Promise<void>;
  /** The account's repository and blobs as checkAccountStatus reports them; undefined when there is no such account. */
  status(did: string): Promise<ImportStatus | undefined>;
  /** Referenced blobs not stored here, in CID order after `cursor` (listMissingBlobs). */
  missingBlobs(did: string, options: { cursor?: string; limit: number }): Promise<MissingBlob[]>;
}
