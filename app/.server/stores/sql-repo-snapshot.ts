import type { ReadableBlockstore } from "@atproto/repo";
import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, BYTEWISE, get, sql, statementOf, type Database, type HeldSnapshot, type Program } from "../db/sql.ts";
import type { BlockCache } from "../repo/block-cache.ts";
import { CachedBlockstore } from "../repo/cached-blockstore.ts";
import type { BlockRow, BlockSize, RepoSnapshot } from "../repo/repo-store.ts";
import { accountStateOf, type AccountState } from "../accounts/account-status.ts";

/**
 * A repository read on one database snapshot held open while a client takes it at its own pace (docs/decisions/0042):
 * the head first, then the blocks in pages that a number of bytes bounds, never the whole repository at once.
 */

/**
 * How many blocks a page's sizes are read for at most, before the byte budget picks the page among them: the bound of
 * the statement that reads them (a CID and a number each), not of the page.
 */
const SIZED_PER_PAGE = 1000;

/** CIDs per statement when blocks are read by CID (getBlocks: up to 1,000 named), far below both engines' parameter limits. */
const CIDS_PER_STATEMENT = 50;

/**
 * A page is two statements, each a search of the primary key from the cursor: the sizes of the next blocks
 * (`length("content")` reads a value's size, not the value: SQLite from the record's header, PostgreSQL from the TOAST
 * pointer), and the content of those the budget takes, by their range of CIDs. `?` for each value: the account, the
 * cursor (and the range's last CID), then (`filter`) the revision, then the sizes' bound.
 */
function pageSql(columns: string, range: string, filter: string, tail: string): string {
  return `SELECT ${columns} FROM "RepoBlock" WHERE "did" = ? AND "cid" > ?${range}${filter} ORDER BY "cid"${tail}`;
}

/** The whole repository's page statements, whose plans the tests read (an index search on both engines). */
export const PAGE_SQL = {
  sizes: pageSql(`"cid", length("content") AS "size"`, "", "", " LIMIT ?"),
  contents: pageSql(`"cid", "content"`, ` AND "cid" <= ?`, "", ""),
};
/** With `since`: only the blocks added after that revision (revisions compare bytewise: BYTEWISE is a value here). */
const SINCE = ` AND "repoRev" ? > ?`;
const pageStatements = {
  whole: { sizes: statementOf(PAGE_SQL.sizes), contents: statementOf(PAGE_SQL.contents) },
  since: { sizes: statementOf(pageSql(`"cid", length("content") AS "size"`, "", SINCE, " LIMIT ?")), contents: statementOf(pageSql(`"cid", "content"`, ` AND "cid" <= ?`, SINCE, "")) },
};

const HEAD_ROW = shape({ deactivatedAt: "time?", takendownAt: "time?", cid: "string", rev: "string" });
const SIZE_ROW = shape({ cid: "string", size: "integer" });
const BLOCK_ROW = tables.RepoBlock.pick("cid", "content");

/**
 * Opens the snapshot and reads the head on it: undefined, with the snapshot released, when the account has no
 * repository (or no account).
 */
export async function openRepoSnapshot(db: Database, cache: BlockCache, did: string, maxHoldMs: number): Promise<RepoSnapshot | undefined> {
  const held = await db.holdSnapshot({ maxHoldMs });
  let found: { deactivatedAt: number | null; takendownAt: number | null; cid: string; rev: string } | undefined;
  try {
    found = await held.read(function* (): Program<{ deactivatedAt: number | null; takendownAt: number | null; cid: string; rev: string } | undefined> {
      return yield* get(HEAD_ROW, sql`SELECT a."deactivatedAt" AS "deactivatedAt", a."takendownAt" AS "takendownAt", r."cid" AS "cid", r."rev" AS "rev"
        FROM "Account" a JOIN "RepoRoot" r ON r."did" = a."did" WHERE a."did" = ${did}`);
    });
  } finally {
    if (!found) await held.release();
  }
  if (!found) return undefined;
  return new SqlRepoSnapshot(held, cache, did, { cid: found.cid, rev: found.rev }, accountStateOf(found));
}

class SqlRepoSnapshot implements RepoSnapshot {
  constructor(
    private readonly held: HeldSnapshot,
    private readonly cache: BlockCache,
    private readonly did: string,
    readonly head: { cid: string; rev: string },
    readonly state: AccountState,
  ) {}

  /**
   * The sizes of the next SIZED_PER_PAGE blocks after `after`, then the content of as many as the budget takes (at
   * least one), on the snapshot. The order is the column's own, which the primary key's index keeps on both engines
   * (bytewise on SQLite, the database's collation on PostgreSQL): any total order serves a keyset, and a CAR's blocks
   * may come in any order; the range's last CID is the one the database listed, never compared here.
   */
  blockPage(after: string, options: { since?: string; maxBytes: number }): Promise<BlockRow[]> {
    const { did } = this;
    const { since, maxBytes } = options;
    return this.held.read(function* (): Program<BlockRow[]> {
      const sized =
        since === undefined
          ? yield* all(SIZE_ROW, pageStatements.whole.sizes(did, after, SIZED_PER_PAGE))
          : yield* all(SIZE_ROW, pageStatements.since.sizes(did, after, BYTEWISE, since, SIZED_PER_PAGE));
      const last = lastWithin(sized, maxBytes);
      if (last === undefined) return [];
      const rows =
        since === undefined
          ? yield* all(BLOCK_ROW, pageStatements.whole.contents(did, after, last))
          : yield* all(BLOCK_ROW, pageStatements.since.contents(did, after, last, BYTEWISE, since));
      return rows.map((row) => ({ cid: row.cid, bytes: row.content }));
    });
  }

  async blockSizes(cids: readonly string[]): Promise<BlockSize[]> {
    const { did } = this;
    const sizes: BlockSize[] = [];
    for (const part of inParts(cids)) {
      sizes.push(...(await this.held.read(() => all(SIZE_ROW, sizesStatement(part.length)(did, ...part)))));
    }
    return sizes;
  }

  async blocks(cids: readonly string[]): Promise<BlockRow[]> {
    const { did } = this;
    const found: BlockRow[] = [];
    for (const part of inParts(cids)) {
      const rows = await this.held.read(() => all(BLOCK_ROW, contentsStatement(part.length)(did, ...part)));
      for (const row of rows) found.push({ cid: row.cid, bytes: row.content });
    }
    return found;
  }

  blockstore(): ReadableBlockstore {
    return new SnapshotBlockstore(this.held, this.cache, this.did);
  }

  release(): Promise<void> {
    return this.held.release();
  }
}

/**
 * The snapshot's blocks one at a time, for @atproto/repo's walk of a record's path (a proof): the process's cache
 * first, which what the walk reads here does not fill, so that a proof read from a snapshot leaves the commits' cache
 * as it was.
 */
class SnapshotBlockstore extends CachedBlockstore {
  constructor(
    private readonly held: HeldSnapshot,
    cache: BlockCache,
    private readonly did: string,
  ) {
    super(cache, false);
  }

  protected async readBlock(cid: string): Promise<Uint8Array | undefined> {
    const { did } = this;
    const row = await this.held.read(function* (): Program<{ content: Uint8Array } | undefined> {
      return yield* get(tables.RepoBlock.pick("content"), sql`SELECT "content" FROM "RepoBlock" WHERE "did" = ${did} AND "cid" = ${cid}`);
    });
    return row?.content;
  }
}

/** The CID of the last block whose running sum of sizes is within the budget (the first, whatever its size); none for no blocks. */
function lastWithin(sized: readonly BlockSize[], maxBytes: number): string | undefined {
  let bytes = 0;
  let last: string | undefined;
  for (const block of sized) {
    bytes += block.size;
    if (last !== undefined && bytes > maxBytes) break;
    last = block.cid;
  }
  return last;
}

function inParts(cids: readonly string[]): string[][] {
  const parts: string[][] = [];
  for (let start = 0; start < cids.length; start += CIDS_PER_STATEMENT) parts.push(cids.slice(start, start + CIDS_PER_STATEMENT));
  return parts;
}

const sizesStatements = new Map<number, ReturnType<typeof statementOf>>();
const contentsStatements = new Map<number, ReturnType<typeof statementOf>>();

/** One statement per number of CIDs (the engines prepare each once), made when first needed. */
function sizesStatement(count: number) {
  let statement = sizesStatements.get(count);
  if (!statement) {
    statement = statementOf(`SELECT "cid", length("content") AS "size" FROM "RepoBlock" WHERE "did" = ? AND "cid" IN (${placeholders(count)})`);
    sizesStatements.set(count, statement);
  }
  return statement;
}

function contentsStatement(count: number) {
  let statement = contentsStatements.get(count);
  if (!statement) {
    statement = statementOf(`SELECT "cid", "content" FROM "RepoBlock" WHERE "did" = ? AND "cid" IN (${placeholders(count)})`);
    contentsStatements.set(count, statement);
  }
  return statement;
}

function placeholders(count: number): string {
  return Array.from({ length: count }, () => "?").join(", ");
}
