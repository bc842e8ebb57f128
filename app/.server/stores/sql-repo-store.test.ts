import { decode } from "@atproto/lex-cbor";
import { parseCid } from "@atproto/lex-data";
import { readCarWithRoot, verifyProofs, getRecords } from "@atproto/repo";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, rowsOf } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { accountWithRepository, exportRepository, GRACE_MS, repositoriesOn, RETENTION_MS, sealedSigningKey, verifiedRepository, type Clock } from "../../../tests/helpers/repositories.ts";
import { countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql } from "../db/sql.ts";
import { MAX_COMMIT_BYTES, RepoError, type WriteRequest } from "../repo/repo-writer.ts";
import { BLOB_CLEANUP_BATCH } from "./sql-blob-store.ts";
import { SqlAccountDeletionStore } from "./sql-account-deletion-store.ts";
import { EVENT_PRUNE_BATCH, SqlEventLog } from "./sql-event-log.ts";
import { COMMITS_PER_CLEANUP } from "./sql-repo-store.ts";
import { oauthApp } from "../activity/activity-lines.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
/** A collection this server has no lexicon for: these tests are about the repository, not about records checked against their lexicons (record-lexicons.test.ts). */
const NOTE = "com.example.note";

const create = (rkey: string, text = rkey): WriteRequest => ({ action: "create", collection: NOTE, rkey, value: { $type: NOTE, text } });
const put = (rkey: string, text: string, swapRecord?: string | null): WriteRequest => ({ action: "put", collection: NOTE, rkey, value: { $type: NOTE, text }, ...(swapRecord === undefined ? {} : { swapRecord }) });
const update = (rkey: string, text: string): WriteRequest => ({ action: "update", collection: NOTE, rkey, value: { $type: NOTE, text } });
const remove = (rkey: string, swapRecord?: string): WriteRequest => ({ action: "delete", collection: NOTE, rkey, ...(swapRecord === undefined ? {} : { swapRecord }) });

/** The XRPC name a refused write carries, or "ok". */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (error instanceof RepoError) return error.code;
    throw error;
  }
}

type CommitBody = { repo: string; commit: unknown; rev: string; since: string | null; ops: Array<{ action: string; path: string; cid: unknown; prev?: unknown }>; blocks: Uint8Array; prevData?: unknown; rebase: boolean; tooBig: boolean; blobs: unknown[] };

/**
 * Repositories on each engine (docs/decisions/0027): every call is one signed commit, applied with its record rows
 * and its event in one transaction that moves the head by compare-and-swap. What is produced is checked with
 * @atproto/repo's own verification.
 */
describe.each(ENGINES)("SqlRepoStore and RepoWriter on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  let alice: { didKey: string };
  const main = () => repositoriesOn(shared.db, clock);

  beforeEach(async () => {
    clock.now = 1_800_000_000_000;
    alice = await accountWithRepository(shared.db, ALICE, clock);
    await accountWithRepository(shared.db, BOB, clock);
  });

  const verified = async (did = ALICE, didKey = alice.didKey) => verifiedRepository(await exportRepository(main().store, did), did, didKey);
  const paths = async (did = ALICE) => (await verified(did)).creates.map((op) => `${op.collection}/${op.rkey}`).sort();
  const events = async () => new SqlEventLog(shared.db, 3600_000).after(0, { events: 10_000, bytes: 2 ** 30 });

  it("a new account's repository is one empty signed commit, announced by #identity, #account and #commit", async () => {
    const repo = await verified();
    expect(repo.creates).toEqual([]);
    const own = (await events()).filter((event) => event.did === ALICE);
    expect(own.map((event) => event.type)).toEqual(["identity", "account", "commit"]);
    expect(decode(own[0]!.body)).toMatchObject({ did: ALICE, handle: "alice.test" });
    expect(decode(own[1]!.body)).toMatchObject({ did: ALICE, active: true });
    const commit = decode(own[2]!.body) as CommitBody;
    expect(commit).toMatchObject({ repo: ALICE, since: null, ops: [], rebase: false, tooBig: false, blobs: [] });
    expect(commit.prevData).toBeUndefined();
    expect(String(commit.commit)).toBe((await main().store.head(ALICE))!.cid);
  });

  it("creates a record: its CID is its DAG-CBOR block's, the JSON reads back as written, the repository verifies", async () => {
    const { writer, store } = main();
    const value = { $type: NOTE, text: "hello", langs: ["en"], reply: null, embed: { $type: "app.bsky.embed.external", n: 3 } };
    const committed = await writer.write(ALICE, [{ action: "create", collection: NOTE, rkey: "3k2a", value }]);
    const record = await store.getRecord(ALICE, NOTE, "3k2a");
    expect(record).toMatchObject({ cid: committed.results[0]!.cid, value });
    const repo = await verified();
    expect(repo.creates.map((op) => [op.collection, op.rkey, op.cid.toString()])).toEqual([[NOTE, "3k2a", record!.cid]]);
    expect(parseCid(record!.cid).code).toBe(0x71);
    expect(committed.commit).toEqual(await store.head(ALICE));
  });

  it("$link, $bytes, blob refs and null round-trip as JSON and are held as the data model's links and bytes", async () => {
    const { writer, store } = main();
    const link = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
    const blob = { $type: "blob", ref: { $link: "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" }, mimeType: "image/png", size: 3 };
    const value = { $type: NOTE, link: { $link: link }, bytes: { $bytes: "aGVsbG8" }, image: blob, none: null, deep: [[{ a: 1 }]] };
    await writer.write(ALICE, [{ action: "create", collection: NOTE, rkey: "data", value }]);
    expect((await store.getRecord(ALICE, NOTE, "data"))!.value).toEqual(value);
    const head = (await store.head(ALICE))!;
    const proof = await collect(getRecords(store.blockstore(ALICE), parseCid(head.cid), [{ collection: NOTE, rkey: "data" }]));
    const { blocks } = await readCarWithRoot(proof);
    const recordCid = parseCid((await store.getRecord(ALICE, NOTE, "data"))!.cid);
    const held = decode(blocks.get(recordCid)!) as Record<string, unknown>;
    expect(String(held.link)).toBe(link);
    expect(held.bytes).toEqual(new TextEncoder().encode("hello"));
    expect(held.none).toBeNull();
  });

  it("refuses records the data model cannot hold, with InvalidRecord, and writes nothing", async () => {
    const { writer } = main();
    const head = await main().store.head(ALICE);
    for (const value of [{ $type: NOTE, n: 1.5 }, { $type: NOTE, l: { $link: "not-a-cid" } }, { $type: NOTE, b: { $bytes: 5 } }, { $type: NOTE, i: { $type: "blob", ref: { $link: "x" } } }, { $type: "" }]) {
      expect(await outcome(writer.write(ALICE, [{ action: "create", collection: NOTE, rkey: "bad", value }]))).toBe("InvalidRecord");
    }
    expect(await main().store.head(ALICE)).toEqual(head);
    expect(await countRows(shared.db, "Record")).toBe(0);
  });

  it("create refuses a taken key, update a missing one; put is either; each call is one commit", async () => {
    const { writer, store } = main();
    await writer.write(ALICE, [create("a")]);
    expect(await outcome(writer.write(ALICE, [create("a", "again")]))).toBe("RecordAlreadyExists");
    expect(await outcome(writer.write(ALICE, [update("b", "x")]))).toBe("InvalidRequest");
    const batch = await writer.write(ALICE, [put("b", "new"), put("a", "changed"), update("a", "updated")]);
    expect(batch.results.map((result) => result.action)).toEqual(["create", "update", "update"]);
    expect(await store.getRecord(ALICE, NOTE, "a")).toMatchObject({ value: { text: "updated" } });
    const commits = (await events()).filter((event) => event.did === ALICE && event.type === "commit").map((event) => decode(event.body) as CommitBody);
    expect(commits).toHaveLength(3);
    expect(commits[2]!.ops.map((op) => [op.action, op.path, op.prev === undefined ? "-" : "prev"])).toEqual([
      ["create", `${NOTE}/b`, "-"],
      ["update", `${NOTE}/a`, "prev"],
      ["update", `${NOTE}/a`, "prev"],
    ]);
    expect(await paths()).toEqual([`${NOTE}/a`, `${NOTE}/b`]);
  });

  it("swapRecord and swapCommit: the write applies only over the named version, else InvalidSwap and nothing written", async () => {
    const { writer, store } = main();
    const first = await writer.write(ALICE, [create("a", "v1")]);
    const v1 = first.results[0]!.cid!;
    expect(await outcome(writer.write(ALICE, [put("a", "v2", null)]))).toBe("InvalidSwap");
    expect(await outcome(writer.write(ALICE, [put("a", "v2", "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm")]))).toBe("InvalidSwap");
    const second = await writer.write(ALICE, [put("a", "v2", v1)]);
    expect(await outcome(writer.write(ALICE, [put("c", "x")], { swapCommit: first.commit!.cid }))).toBe("InvalidSwap");
    expect(await outcome(writer.write(ALICE, [put("c", "x")], { swapCommit: second.commit!.cid }))).toBe("ok");
    expect(await outcome(writer.write(ALICE, [remove("a", v1)]))).toBe("InvalidSwap");
    expect(await outcome(writer.write(ALICE, [remove("a", second.results[0]!.cid)]))).toBe("ok");
    expect(await store.getRecord(ALICE, NOTE, "a")).toBeUndefined();
    expect(await paths()).toEqual([`${NOTE}/c`]);
  });

  it("deleting a record that is not there commits nothing; in a batch it refuses the batch", async () => {
    const { writer, store } = main();
    const head = await store.head(ALICE);
    expect((await writer.write(ALICE, [remove("nothing")])).commit).toBeUndefined();
    expect(await outcome(writer.write(ALICE, [create("x"), remove("nothing")]))).toBe("InvalidRequest");
    expect(await store.head(ALICE)).toEqual(head);
  });

  it("recordsSinceRev: the account's records of commits after a revision, oldest first, at most the limit; none for a revision older than all of them", async () => {
    const { writer, store } = main();
    const first = await writer.write(ALICE, [create("early"), create("a")]);
    await writer.write(BOB, [create("bob")]);
    await writer.write(ALICE, [create("b")]);
    await writer.write(ALICE, [update("a", "a again"), create("c")]);
    const since = (await store.recordsSinceRev(ALICE, first.commit!.rev, 10)).map((record) => `${record.rkey}: ${(record.value as { text: string }).text}`);
    // b's commit first; a and c share the last commit (their order within it is not specified).
    expect(since[0]).toBe("b: b");
    expect(since.slice(1).sort()).toEqual(["a: a again", "c: c"]);
    expect((await store.recordsSinceRev(ALICE, first.commit!.rev, 1)).map((record) => record.rkey)).toEqual(["b"]);
    const head = (await store.head(ALICE))!;
    expect(await store.recordsSinceRev(ALICE, head.rev, 10)).toEqual([]);
    // A revision older than every record the account has (one from before it came here): nothing, as the reference.
    expect(await store.recordsSinceRev(ALICE, "2222222222222", 10)).toEqual([]);
    // A record the operator took down is served to nobody, its owner's read-after-write included (docs/decisions/0051).
    await execute(shared.db, sql`UPDATE "Record" SET "takedownRef" = 'case-1' WHERE "did" = ${ALICE} AND "rkey" = 'b'`);
    expect((await store.recordsSinceRev(ALICE, first.commit!.rev, 10)).map((record) => record.rkey).sort()).toEqual(["a", "c"]);
  });

  it("a commit over 200 writes or 2 MB is refused and writes nothing", async () => {
    const { writer, store } = main();
    const head = await store.head(ALICE);
    expect(await outcome(writer.write(ALICE, Array.from({ length: 201 }, (_, i) => create(`k${i}`))))).toBe("InvalidRequest");
    const big = "x".repeat(100 * 1024);
    const many = Array.from({ length: Math.ceil(MAX_COMMIT_BYTES / big.length) + 1 }, (_, i) => create(`big${i}`, big));
    expect(await outcome(writer.write(ALICE, many))).toBe("InvalidRequest");
    expect(await store.head(ALICE)).toEqual(head);
    expect(await countRows(shared.db, "Record")).toBe(0);
  });

  it("a #commit event carries a CAR with the commit, new blocks and the covering proof of each op (verifyProofs)", async () => {
    const { writer } = main();
    for (let i = 0; i < 30; i++) await writer.write(ALICE, [create(`r${String(i).padStart(2, "0")}`)]);
    const committed = await writer.write(ALICE, [update("r07", "changed"), remove("r11"), create("r99")]);
    const last = decode((await events()).filter((event) => event.type === "commit").at(-1)!.body) as CommitBody;
    expect(String(last.commit)).toBe(committed.commit!.cid);
    const { root } = await readCarWithRoot(last.blocks);
    expect(root.toString()).toBe(committed.commit!.cid);
    const claims = [
      { collection: NOTE, rkey: "r07", cid: parseCid(committed.results[0]!.cid!) },
      { collection: NOTE, rkey: "r11", cid: null },
      { collection: NOTE, rkey: "r99", cid: parseCid(committed.results[2]!.cid!) },
    ];
    const { verified, unverified } = await verifyProofs(last.blocks, claims, ALICE, alice.didKey);
    expect(unverified).toEqual([]);
    expect(verified).toHaveLength(3);
  });

  it("each commit's since and prevData name the commit before it (sync v1.1's chain)", async () => {
    const { writer, store } = main();
    const revs = [(await store.head(ALICE))!.rev];
    for (let i = 0; i < 5; i++) revs.push((await writer.write(ALICE, [create(`c${i}`)])).commit!.rev);
    const commits = (await events()).filter((event) => event.did === ALICE && event.type === "commit").map((event) => decode(event.body) as CommitBody);
    expect(commits.map((commit) => commit.rev)).toEqual(revs);
    expect(commits.map((commit) => commit.since)).toEqual([null, ...revs.slice(0, -1)]);
    expect(commits.slice(1).every((commit) => commit.prevData !== undefined)).toBe(true);
  });

  it("blocks the head no longer reaches are removed; a record block shared by two records stays while one has it", async () => {
    const { writer } = main();
    await writer.write(ALICE, [create("same", "twin"), create("twin", "twin")]);
    await writer.write(ALICE, [remove("same")]);
    expect(await paths()).toEqual([`${NOTE}/twin`]);
    const blocks = await rowsOf<{ cid: string }>(shared.db, sql`SELECT "cid" FROM "RepoBlock" WHERE "did" = ${ALICE}`);
    // The commit, one MST node, one record: nothing the head does not reach.
    expect(blocks).toHaveLength(3);
  });

  it("a process whose last commit is no longer the head decides on the database's head: what another process deleted can be created, what it created can be deleted", async () => {
    const [here, there] = shared.others(2).map((db) => repositoriesOn(db, clock));
    await here!.writer.write(ALICE, [create("a"), create("b")]);
    await there!.writer.write(ALICE, [remove("a"), create("c")]);
    // Here, the last commit still has "a" and lacks "c" (docs/decisions/0037: a kept head is confirmed, never trusted).
    expect(await outcome(here!.writer.write(ALICE, [create("a", "again")]))).toBe("ok");
    await there!.writer.write(ALICE, [create("d")]);
    const removed = await here!.writer.write(ALICE, [remove("c")]);
    expect(removed.commit).toBeDefined();
    expect(await outcome(here!.writer.write(ALICE, [create("d")]))).toBe("RecordAlreadyExists");
    expect(await paths()).toEqual([`${NOTE}/a`, `${NOTE}/b`, `${NOTE}/d`]);
    const commits = (await events()).filter((event) => event.did === ALICE && event.type === "commit").map((event) => decode(event.body) as CommitBody);
    for (let i = 1; i < commits.length; i++) expect(commits[i]!.since).toBe(commits[i - 1]!.rev);
  });

  /** Events past the backfill window and blobs of BOB past their grace, as of the clock; how many of each are left. */
  async function expiredRows(events: number, blobs: number): Promise<void> {
    for (let i = 0; i < events; i++) {
      await execute(shared.db, sql`INSERT INTO "RepoEvent" ("did", "type", "body", "time") VALUES (${BOB}, 'account', ${Uint8Array.of(i)}, ${at(clock.now - RETENTION_MS - 1)})`);
    }
    for (let i = 0; i < blobs; i++) {
      await execute(shared.db, sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince")
        VALUES (${BOB}, ${`expired-${i}`}, 'image/png', 'image/png', 1, ${Uint8Array.of(i)}, ${at(clock.now - GRACE_MS - 1)}, ${at(clock.now - GRACE_MS - 1)})`);
    }
  }
  const expiredLeft = async () => ({
    events: (await rowsOf(shared.db, sql`SELECT "seq" FROM "RepoEvent" WHERE "time" < ${at(clock.now - RETENTION_MS)}`)).length,
    blobs: (await rowsOf(shared.db, sql`SELECT "cid" FROM "Blob" WHERE "unreferencedSince" < ${at(clock.now - GRACE_MS)}`)).length,
  });

  it(`a process's commits prune expired events and blobs, a batch of each, on its first commit and then on one in every ${COMMITS_PER_CLEANUP}`, async () => {
    await expiredRows(3 * EVENT_PRUNE_BATCH, 3 * BLOB_CLEANUP_BATCH);
    const { writer } = repositoriesOn(shared.others(1)[0]!, clock);
    const left: Array<{ events: number; blobs: number }> = [];
    for (let i = 0; i < 2 * COMMITS_PER_CLEANUP + 1; i++) {
      await writer.write(ALICE, [create(`p${i}`)]);
      left.push(await expiredLeft());
    }
    // Docs/decisions/0037 (amendment): pruned on commits 1, 1 + n and 1 + 2n of the process, never more than a batch.
    const batches = (pruned: number) => ({ events: (3 - pruned) * EVENT_PRUNE_BATCH, blobs: (3 - pruned) * BLOB_CLEANUP_BATCH });
    expect(left).toEqual(Array.from({ length: 2 * COMMITS_PER_CLEANUP + 1 }, (_, i) => batches(1 + Math.floor(i / COMMITS_PER_CLEANUP))));
  });

  it("each process's own commits bound how long expired rows wait: a pruning commit that lost the compare-and-swap makes the next one prune", async () => {
    const [here, there] = shared.others(2).map((db) => repositoriesOn(db, clock));
    // Here: its first commit prunes (nothing has expired), the next COMMITS_PER_CLEANUP - 1 do not, so the next is due.
    for (let i = 0; i < COMMITS_PER_CLEANUP; i++) await here!.writer.write(ALICE, [create(`h${i}`)]);
    // Another process moves the head (its own first commit prunes too, before anything has expired).
    await there!.writer.write(ALICE, [create("t")]);
    await expiredRows(2 * EVENT_PRUNE_BATCH, 2 * BLOB_CLEANUP_BATCH);
    // Here, the due commit is built on its own last head, loses the swap, and is built again: that one prunes.
    await here!.writer.write(ALICE, [create("after")]);
    expect(await expiredLeft()).toEqual({ events: EVENT_PRUNE_BATCH, blobs: BLOB_CLEANUP_BATCH });
  });

  it("RACE: 24 writers at once from four processes: every write is committed, each in its own commit, and the repository verifies", async () => {
    const sides = shared.others(4).map((db) => repositoriesOn(db, clock));
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => sides[i % 4]!.writer.write(ALICE, [create(`w${String(i).padStart(2, "0")}`)])));
    expect(new Set(results.map((result) => result.commit!.cid)).size).toBe(24);
    expect(await paths()).toEqual(Array.from({ length: 24 }, (_, i) => `${NOTE}/w${String(i).padStart(2, "0")}`));
    // Sequence order is commit order: the chain of since links runs through the log in order.
    const commits = (await events()).filter((event) => event.did === ALICE && event.type === "commit").map((event) => decode(event.body) as CommitBody);
    for (let i = 1; i < commits.length; i++) expect(commits[i]!.since).toBe(commits[i - 1]!.rev);
    expect(commits).toHaveLength(25);
  });

  it("RACE: 20 creates of one key at once from four processes: one commit, the others told it exists", async () => {
    const sides = shared.others(4).map((db) => repositoriesOn(db, clock));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => outcome(sides[i % 4]!.writer.write(ALICE, [create("contested", `try ${i}`)]))));
    expect(results.filter((result) => result === "ok")).toHaveLength(1);
    expect(results.filter((result) => result === "RecordAlreadyExists")).toHaveLength(19);
    expect(await countRows(shared.db, "Record")).toBe(1);
    expect(await paths()).toEqual([`${NOTE}/contested`]);
  });

  it("RACE: commits of an app from four processes count each write once, with its commit: none lost, none kept of a refused or rebuilt commit (docs/decisions/0053)", async () => {
    const sides = shared.others(4).map((db) => repositoriesOn(db, clock));
    const app = oauthApp("https://app.example/client-metadata.json");
    const written = await Promise.all(
      Array.from({ length: 16 }, (_, i) => outcome(sides[i % 4]!.writer.write(ALICE, [create(i < 8 ? `c${i}` : "contested")], { activity: app }))),
    );
    // Eight distinct keys and one contested: nine commits kept, seven refused (each after losing swaps, rebuilt).
    expect(written.filter((result) => result === "ok")).toHaveLength(9);
    // A commit refused by the deactivated account's swap counts nothing either.
    await execute(shared.db, sql`UPDATE "Account" SET "deactivatedAt" = ${at(clock.now)} WHERE "did" = ${ALICE}`);
    await expect(main().writer.write(ALICE, [create("late")], { activity: app })).rejects.toMatchObject({ code: "AccountDeactivated" });
    const counted = await rowsOf<{ kind: string; target: string; count: number | string }>(
      shared.db,
      sql`SELECT "kind", "target", "count" FROM "AppActivity" WHERE "accountDid" = ${ALICE} AND "app" = ${app}`,
    );
    expect(counted.map((row) => ({ ...row, count: Number(row.count) }))).toEqual([{ kind: "create", target: NOTE, count: 9 }]);
  });

  it("the repository migration gives an account's existing records (raw-JSON CIDs) one commit, and is idempotent", async () => {
    const carol = "did:plc:carol";
    const { signingKey, didKey } = await sealedSigningKey(carol);
    await insertAccount(shared.db, carol, { signingKey });
    const old = [
      ["one", JSON.stringify({ $type: NOTE, text: "one" })],
      ["two", JSON.stringify({ $type: NOTE, text: "two", link: { $link: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" } })],
      ["float", JSON.stringify({ $type: NOTE, n: 0.5 })],
    ];
    for (const [rkey, value] of old) {
      await execute(shared.db, sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "createdAt", "updatedAt") VALUES (${carol}, ${NOTE}, ${rkey!}, ${"bafkreiold"}, ${value!}, ${at(1)}, ${at(1)})`);
    }
    const { store, writer } = main();
    expect((await store.accountsWithoutRepository(10)).map((account) => account.did)).toEqual([carol]);
    const outcomeOf = await writer.migrateAccount({ did: carol, signingKey });
    expect(outcomeOf).toEqual({ migrated: true, dropped: [{ path: `${NOTE}/float`, reason: expect.stringContaining("non-integer") }] });
    expect((await writer.migrateAccount({ did: carol, signingKey })).migrated).toBe(false);
    const repo = await verified(carol, didKey);
    expect(repo.creates.map((op) => op.rkey).sort()).toEqual(["one", "two"]);
    const rows = await store.listRecords(carol, NOTE, { limit: 10, reverse: true });
    expect(rows.map((row) => [row.rkey, row.cid])).toEqual(repo.creates.map((op) => [op.rkey, op.cid.toString()]).sort());
    expect((await events()).filter((event) => event.did === carol).map((event) => event.type)).toEqual(["sync"]);
  });
});

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

/**
 * docs/decisions/0028a: a handle change is announced by #identity, with the handle as it is when the event is
 * appended; the account's deletion removes its events and ends them with #account (deleted). The announcement is
 * read and appended under the lock the deletion takes, so that no #identity of a deleted account follows it.
 */
describe.each(ENGINES)("SqlRepoStore.announceIdentity on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  const identityEvents = async (did: string) =>
    (await new SqlEventLog(shared.db, 3600_000).after(0, { events: 1000, bytes: 2 ** 30 })).filter((event) => event.did === did && event.type === "identity").map((event) => decode(event.body));

  it("appends #identity with the handle the account has now, and nothing once the account is gone", async () => {
    await accountWithRepository(shared.db, ALICE, clock);
    await execute(shared.db, sql`UPDATE "Account" SET "handle" = 'alice-renamed.test' WHERE "did" = ${ALICE}`);
    const { store } = repositoriesOn(shared.db, clock);
    expect(await store.announceIdentity(ALICE, clock.now)).toBe(true);
    expect((await identityEvents(ALICE)).at(-1)).toMatchObject({ did: ALICE, handle: "alice-renamed.test" });
    await new SqlAccountDeletionStore(shared.db, RETENTION_MS).removeByOperator(ALICE, clock.now);
    expect(await store.announceIdentity(ALICE, clock.now)).toBe(false);
    expect(await identityEvents(ALICE)).toEqual([]);
  });
});

describe("SqlRepoStore.announceIdentity on postgresql, racing the account's deletion", () => {
  const shared = useSharedDatabase("postgresql");
  const clock: Clock = { now: 1_800_000_000_000 };
  const identityEvents = async (did: string) => (await new SqlEventLog(shared.db, 3600_000).after(0, { events: 1000, bytes: 2 ** 30 })).filter((event) => event.did === did && event.type === "identity");

  it("RACE (two connections): an announcement made while the account is being deleted waits, and appends nothing", async () => {
    await accountWithRepository(shared.db, ALICE, clock);
    const { store } = repositoriesOn(shared.db, clock);
    const [deleted, announced] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      // The deletion's own transaction, held open after its writes (its lock on the account's data taken).
      (gated) => new SqlAccountDeletionStore(gated, RETENTION_MS).removeByOperator(ALICE, clock.now),
      () => store.announceIdentity(ALICE, clock.now),
    );
    expect(deleted).toBeDefined();
    expect(announced).toBe(false);
    expect(await identityEvents(ALICE)).toEqual([]);
  });
});
