import { parseCid } from "@atproto/lex-data";
import { readCar, ReadableBlockstore, verifyProofs } from "@atproto/repo";
import type { Cid } from "@atproto/lex-data";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES } from "../../../tests/helpers/databases.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { accountWithRepository, exportRepository, repositoriesOn, verifiedRepository, type Clock } from "../../../tests/helpers/repositories.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { NO_METRICS } from "../observability/metrics.ts";
import type { BlockRow, RepoSnapshot, RepoStore } from "../repo/repo-store.ts";
import type { RepoWriter } from "../repo/repo-writer.ts";
import { PAGE_SQL } from "../stores/sql-repo-snapshot.ts";
import type { SqlRepoStore } from "../stores/sql-repo-store.ts";
import { ExportEnded, ExportWatch } from "./export-watch.ts";
import { coalesced, pagesOf, RepoExports } from "./repo-exports.ts";

const ALICE = "did:plc:alice";
/**
 * Collections this server has no lexicon for: these tests are about the repository's blocks, not about records
 * checked against their lexicons.
 */
const POST = "com.example.post";
const NOTE = "com.example.note";
const LIMITS = { perAddress: 2, inAll: 3, idleMs: 60_000, maxMs: 900_000 };
/** Small pages, so that a small repository is many of them. */
const PAGE_BYTES = 8 * 1024;
/** Small chunks too, so that the client's first chunk asks for little of the CAR. */
const CHUNK_BYTES = 1024;
const FROM = "192.0.2.1";

/**
 * A blockstore that lets a real commit land (through the writer, which removes the blocks its new head no longer
 * reaches) just before each proof reads its first block: what two processes writing while getRecord reads do, every
 * time instead of by chance.
 */
class CommitBeforeEachRead extends ReadableBlockstore {
  private committed = false;
  constructor(
    private readonly inner: ReadableBlockstore,
    private readonly commit: () => Promise<void>,
  ) {
    super();
  }
  private async commitOnce(): Promise<void> {
    if (this.committed) return;
    this.committed = true;
    await this.commit();
  }
  async getBytes(cid: Cid): Promise<Uint8Array | null> {
    await this.commitOnce();
    return this.inner.getBytes(cid);
  }
  async has(cid: Cid): Promise<boolean> {
    return (await this.getBytes(cid)) !== null;
  }
  async getBlocks(cids: Cid[]) {
    await this.commitOnce();
    return this.inner.getBlocks(cids);
  }
}

/** What the snapshots of a store were asked: each page's bytes, the blocks read one at a time, the releases. */
type Reads = { pages: number[][]; blocksRead: number; blockPages: number; released: number };

/** The store, with every snapshot it opens watched (the snapshots' own behaviour is unchanged). */
function watched(store: RepoStore, reads: Reads): RepoStore {
  return Object.assign(Object.create(store) as RepoStore, {
    openSnapshot: async (did: string, options: { maxHoldMs: number }) => {
      const snapshot = await store.openSnapshot(did, options);
      if (!snapshot) return undefined;
      const record = (page: BlockRow[]) => {
        reads.pages.push(page.map((block) => block.bytes.byteLength));
        return page;
      };
      return {
        head: snapshot.head,
        state: snapshot.state,
        blockPage: async (after, pageOptions) => {
          reads.blockPages++;
          return record(await snapshot.blockPage(after, pageOptions));
        },
        blockSizes: (cids) => snapshot.blockSizes(cids),
        blocks: async (cids) => record(await snapshot.blocks(cids)),
        blockstore: () => {
          const inner = snapshot.blockstore();
          return Object.assign(Object.create(inner) as ReadableBlockstore, {
            getBytes: (cid: Cid) => {
              reads.blocksRead++;
              return inner.getBytes(cid);
            },
          });
        },
        release: async () => {
          reads.released++;
          await snapshot.release();
        },
      } satisfies RepoSnapshot;
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Repository exports read page by page from one snapshot (docs/decisions/0042), on each engine. */
describe.each(ENGINES)("repository exports on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  let didKey: string;
  let store: RepoStore;
  let writer: RepoWriter;
  let reads: Reads;
  let watch: ExportWatch;
  let exports: RepoExports;

  beforeEach(async () => {
    ({ didKey } = await accountWithRepository(shared.db, ALICE, clock));
    ({ store, writer } = repositoriesOn(shared.db, clock));
    reads = { pages: [], blocksRead: 0, blockPages: 0, released: 0 };
    watch = new ExportWatch(LIMITS, () => clock.now);
    exports = new RepoExports(watched(store, reads), watch, NO_METRICS, { maxHoldMs: LIMITS.maxMs, pageBytes: PAGE_BYTES, chunkBytes: CHUNK_BYTES });
    // Small posts and a few records larger than a page.
    const posts = Array.from({ length: 60 }, (_, i) => ({ action: "create" as const, collection: POST, rkey: `p${String(i).padStart(3, "0")}`, value: { $type: POST, text: `post ${i}` } }));
    const notes = [20_000, 3_000, 12_000].map((size, i) => ({ action: "create" as const, collection: NOTE, rkey: `n${i}`, value: { $type: NOTE, text: "x".repeat(size) } }));
    await writer.write(ALICE, [...posts, ...notes]);
  });

  describe("getRepo", () => {
    it("reads the repository in pages of at most the budget (a larger block alone), and the CAR verifies with @atproto/repo", async () => {
      const car = await readAll(await exports.repository(ALICE, undefined, FROM));
      const verified = await verifiedRepository(car, ALICE, didKey);
      expect(verified.creates).toHaveLength(63);
      expect(reads.pages.length).toBeGreaterThan(3);
      for (const page of reads.pages) {
        const bytes = page.reduce((sum, size) => sum + size, 0);
        expect(page.length === 1 || bytes <= PAGE_BYTES, `a page of ${page.length} blocks, ${bytes} bytes`).toBe(true);
      }
      // Every block once: the pages' blocks are the CAR's.
      const { blocks } = await readCar(car);
      expect(reads.pages.flat().length).toBe(blocks.size);
      expect(reads.released).toBe(1);
      expect(watch.state()).toMatchObject({ open: 0, heldBytes: 0 });
    });

    it("reads each page by searches of the primary key from its cursor, never a scan of the table", async () => {
      const pages = [
        { text: PAGE_SQL.sizes, values: [ALICE, "bafy", 1000], sqlite: "(did=? AND cid>?)", postgresql: /cid > 'bafy'/ },
        { text: PAGE_SQL.contents, values: [ALICE, "bafy", "bafz"], sqlite: "(did=? AND cid>? AND cid<?)", postgresql: /cid > 'bafy'.*cid <= 'bafz'/ },
      ];
      for (const page of pages) {
        if (engine === "sqlite") {
          const plan = sqlitePlan(shared.db, page.text, ...page.values);
          expect(plan).toEqual([`SEARCH RepoBlock USING INDEX sqlite_autoindex_RepoBlock_1 ${page.sqlite}`]);
          continue;
        }
        const plan = await postgresPlan(shared.db, page.text, page.values);
        expect(plan).toEqual(expect.arrayContaining([expect.objectContaining({ index: "RepoBlock_pkey", indexCond: expect.stringMatching(page.postgresql) as unknown })]));
        expect(plan.filter((node) => node.nodeType === "Seq Scan" || node.nodeType === "Sort")).toEqual([]);
      }
    });

    it("reads nothing past the page its client has not taken", async () => {
      const stream = await exports.repository(ALICE, undefined, FROM);
      const reader = stream.getReader();
      await reader.read();
      // The first chunk (the CAR's header and a kilobyte of blocks) took the first page: nothing more is read, however
      // long the client waits, until it asks.
      expect(reads.blockPages).toBe(1);
      for (let tick = 0; tick < 20; tick++) await new Promise((resolve) => setImmediate(resolve));
      expect(reads.blockPages).toBe(1);
      expect(watch.state().bytesRead).toBeLessThanOrEqual(PAGE_BYTES);
      expect(watch.state().heldBytes).toBeLessThanOrEqual(PAGE_BYTES);
      await reader.read();
      expect(reads.blockPages).toBeLessThanOrEqual(2);
      await reader.cancel();
      expect(reads.released).toBe(1);
      expect(watch.state().open).toBe(0);
    });

    it("is one commit's repository while commits land between its pages and remove the blocks of the head it began at", async () => {
      const stream = await exports.repository(ALICE, undefined, FROM);
      const reader = stream.getReader();
      const chunks: Uint8Array[] = [(await reader.read()).value!];
      const exportedHead = (await store.head(ALICE))!;
      // Every record edited, most deleted: nearly every block the export's head reaches is removed.
      await writer.write(ALICE, Array.from({ length: 60 }, (_, i) => ({ action: "delete" as const, collection: POST, rkey: `p${String(i).padStart(3, "0")}` })));
      await writer.write(ALICE, [{ action: "update", collection: NOTE, rkey: "n0", value: { $type: NOTE, text: "short now" } }]);
      for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
      const verified = await verifiedRepository(Buffer.concat(chunks), ALICE, didKey);
      expect(verified.commit.cid.toString()).toBe(exportedHead.cid);
      expect(verified.creates).toHaveLength(63);
    });

    it("with since: only the blocks added after that revision", async () => {
      const before = (await store.head(ALICE))!;
      await writer.write(ALICE, [{ action: "create", collection: POST, rkey: "later", value: { $type: POST, text: "later" } }]);
      const { roots, blocks } = await readCar(await readAll(await exports.repository(ALICE, before.rev, FROM)));
      expect(roots.map(String)).toEqual([(await store.head(ALICE))!.cid]);
      const record = await store.getRecord(ALICE, POST, "later");
      expect(blocks.has(parseCid(record!.cid))).toBe(true);
      expect(blocks.size).toBeLessThan(10);
    });

    it("ended by the watch (idle), errors its stream and releases its snapshot", async () => {
      const stream = await exports.repository(ALICE, undefined, FROM);
      const reader = stream.getReader();
      await reader.read();
      clock.now += LIMITS.idleMs;
      watch.sweep();
      await expect(reader.read()).rejects.toBeInstanceOf(ExportEnded);
      await expect.poll(() => reads.released).toBe(1);
      expect(watch.state().open).toBe(0);
    });

    it("past a cap, answers RateLimitExceeded with Retry-After before opening a snapshot", async () => {
      const open = [await exports.repository(ALICE, undefined, FROM), await exports.repository(ALICE, undefined, FROM)];
      await expect(exports.repository(ALICE, undefined, FROM)).rejects.toMatchObject({ status: 429, xrpcName: "RateLimitExceeded", retryAfterSeconds: 10 });
      expect(reads.released).toBe(0);
      await Promise.all(open.map((stream) => stream.cancel()));
      expect(reads.released).toBe(2);
    });

    it("answers RepoNotFound for an unknown DID, with nothing held", async () => {
      await expect(exports.repository("did:plc:nobody", undefined, FROM)).rejects.toMatchObject({ xrpcName: "RepoNotFound" });
      expect(watch.state().open).toBe(0);
    });
  });

  describe("getBlocks", () => {
    it("reads the named blocks in pages of the budget; BlockNotFound, before anything is sent, for one the repository lacks", async () => {
      const notes = await Promise.all(["n0", "n1", "n2"].map(async (rkey) => (await store.getRecord(ALICE, NOTE, rkey))!.cid));
      const post = (await store.getRecord(ALICE, POST, "p000"))!.cid;
      const { blocks } = await readCar(await readAll(await exports.blocks(ALICE, [...notes, post, notes[0]!], FROM)));
      expect([...notes, post].every((cid) => blocks.has(parseCid(cid)))).toBe(true);
      expect(blocks.size).toBe(4);
      for (const page of reads.pages) expect(page.length === 1 || page.reduce((sum, size) => sum + size, 0) <= PAGE_BYTES).toBe(true);
      const missing = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
      await expect(exports.blocks(ALICE, [post, missing], FROM)).rejects.toMatchObject({ xrpcName: "BlockNotFound", message: expect.stringContaining(missing) as unknown });
      expect(reads.released).toBe(2);
      expect(watch.state().open).toBe(0);
    });
  });

  describe("getRecord", () => {
    let edits: number;
    beforeEach(async () => {
      edits = 0;
      await writer.write(ALICE, [{ action: "create", collection: POST, rkey: "kept", value: { $type: POST, text: "edit 0" } }]);
    });

    /**
     * A reader's store (a process of its own, nothing in its block cache), except that a commit by another process,
     * editing the proven record, lands between reading the head and reading its blocks.
     */
    const underWrites = (): RepoStore => {
      const reader = watched(repositoriesOn(shared.db, clock).store, reads);
      const other = repositoriesOn(shared.db, clock).writer;
      return Object.assign(Object.create(reader) as RepoStore, {
        blockstore: (did: string) => new CommitBeforeEachRead(reader.blockstore(did), () => other.write(ALICE, [{ action: "update", collection: POST, rkey: "kept", value: { $type: POST, text: `edit ${++edits}` } }]).then(() => undefined)),
      });
    };

    it("is read from a snapshot when every attempt's head moved, block by block along the proof: it answers, and @atproto/repo verifies it", async () => {
      const car = await new RepoExports(underWrites(), watch, NO_METRICS, { maxHoldMs: LIMITS.maxMs }).recordProof(ALICE, POST, "kept", FROM);
      // Every block-by-block attempt lost its head to a commit; the proof is of the head after the last of them.
      expect(edits).toBe(3);
      const record = await store.getRecord(ALICE, POST, "kept");
      const { verified, unverified } = await verifyProofs(car, [{ collection: POST, rkey: "kept", cid: parseCid(record!.cid) }], ALICE, didKey);
      expect(unverified).toEqual([]);
      expect(verified).toHaveLength(1);
      // The proof's blocks only (the commit, the MST path, the record; the walk asks for each twice), never a page of
      // the repository's blocks, nor the repository's count of them.
      const { blocks: proof } = await readCar(car);
      const { blocks: repository } = await readCar(await exportRepository(store as SqlRepoStore, ALICE));
      expect(reads.blockPages).toBe(0);
      expect(reads.blocksRead).toBeGreaterThanOrEqual(proof.size);
      expect(reads.blocksRead).toBeLessThanOrEqual(2 * proof.size);
      expect(proof.size * 5).toBeLessThan(repository.size);
      expect(reads.released).toBe(1);
      expect(watch.state().open).toBe(0);
    });

    it("without writes, is read block by block from the head, with no snapshot", async () => {
      const car = await exports.recordProof(ALICE, POST, "kept", FROM);
      const record = await store.getRecord(ALICE, POST, "kept");
      const { unverified } = await verifyProofs(car, [{ collection: POST, rkey: "kept", cid: parseCid(record!.cid) }], ALICE, didKey);
      expect(unverified).toEqual([]);
      expect(reads.released).toBe(0);
    });
  });
});

describe("pagesOf", () => {
  it("groups CIDs in order into pages whose sizes add up to the budget at most, a larger one alone", () => {
    const sizes = new Map([
      ["a", 4],
      ["b", 4],
      ["c", 3],
      ["d", 20],
      ["e", 1],
    ]);
    expect(pagesOf(["a", "b", "c", "d", "e"], sizes, 10)).toEqual([["a", "b"], ["c"], ["d"], ["e"]]);
    expect(pagesOf([], sizes, 10)).toEqual([]);
  });
});

describe("coalesced", () => {
  async function* pieces(sizes: number[]): AsyncGenerator<Uint8Array> {
    for (const [i, size] of sizes.entries()) yield new Uint8Array(size).fill(i);
  }
  it("gathers small pieces into chunks of about the size asked, passes a large one as it is, and keeps every byte in order", async () => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of coalesced(pieces([3, 3, 3, 20, 2, 1]), 8)) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.byteLength)).toEqual([9, 20, 3]);
    expect([...Buffer.concat(chunks)]).toEqual([0, 0, 0, 1, 1, 1, 2, 2, 2, ...Array(20).fill(3), 4, 4, 5]);
  });
});
