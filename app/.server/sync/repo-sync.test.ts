import { parseCid } from "@atproto/lex-data";
import { ReadableBlockstore, verifyProofs } from "@atproto/repo";
import type { Cid } from "@atproto/lex-data";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES } from "../../../tests/helpers/databases.ts";
import { accountWithRepository, repositoriesOn, type Clock } from "../../../tests/helpers/repositories.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { RepoStore } from "../repo/repo-store.ts";
import type { RepoWriter } from "../repo/repo-writer.ts";
import { recordProofCar } from "./repo-sync.ts";

const ALICE = "did:plc:alice";
/** A collection this server has no lexicon for: these tests are about the repository, not about records checked against their lexicons (record-lexicons.test.ts). */
const NOTE = "com.example.note";

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

/** com.atproto.sync.getRecord's proof while the repository is written (docs/decisions/0027, amendment), on each engine. */
describe.each(ENGINES)("a record's proof under writes on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  let didKey: string;
  let store: RepoStore;
  let writer: RepoWriter;
  let edits: number;

  beforeEach(async () => {
    ({ didKey } = await accountWithRepository(shared.db, ALICE, clock));
    ({ store, writer } = repositoriesOn(shared.db, clock));
    edits = 0;
    await writer.write(ALICE, [{ action: "create", collection: NOTE, rkey: "kept", value: { $type: NOTE, text: "edit 0" } }]);
  });

  /**
   * A reader's store (a process of its own, nothing in its block cache), except that a commit by another process,
   * editing the proven record, lands between reading the head and reading its blocks.
   */
  const underWrites = (): RepoStore => {
    const reader = repositoriesOn(shared.db, clock).store;
    const other = repositoriesOn(shared.db, clock).writer;
    return Object.assign(Object.create(reader) as RepoStore, {
      blockstore: (did: string) => new CommitBeforeEachRead(reader.blockstore(did), () => other.write(ALICE, [{ action: "update", collection: NOTE, rkey: "kept", value: { $type: NOTE, text: `edit ${++edits}` } }]).then(() => undefined)),
    });
  };

  it("is built from one snapshot when every attempt's head moved: it answers, and @atproto/repo verifies it", async () => {
    const car = await recordProofCar(underWrites(), ALICE, NOTE, "kept");
    // Every block-by-block attempt lost its head to a commit; the proof is of the head after the last of them.
    expect(edits).toBe(3);
    const record = await store.getRecord(ALICE, NOTE, "kept");
    const { verified, unverified } = await verifyProofs(car, [{ collection: NOTE, rkey: "kept", cid: parseCid(record!.cid) }], ALICE, didKey);
    expect(unverified).toEqual([]);
    expect(verified).toHaveLength(1);
  });

  it("without writes, is read block by block from the head", async () => {
    const car = await recordProofCar(store, ALICE, NOTE, "kept");
    const record = await store.getRecord(ALICE, NOTE, "kept");
    const { unverified } = await verifyProofs(car, [{ collection: NOTE, rkey: "kept", cid: parseCid(record!.cid) }], ALICE, didKey);
    expect(unverified).toEqual([]);
  });
});
