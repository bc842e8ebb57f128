import { Secp256k1Keypair, type Keypair } from "@atproto/crypto";
import { BlockMap, blocksToCarFile, readCarWithRoot } from "@atproto/repo";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, rowsOf } from "../../../tests/helpers/databases.ts";
import { accountWithRepository, exportRepository, foreignRepositoryCar, inPieces, repositoriesOn, TEST_SIGNING_KEYS, verifiedRepository, type Clock, type ForeignRecord } from "../../../tests/helpers/repositories.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { at, sql, type Database } from "../db/sql.ts";
import { SqlTakedownStore } from "../stores/sql-takedown-store.ts";
import { SqlRepoImportStore } from "../stores/sql-repo-import-store.ts";
import { HOUR } from "../util/time.ts";
import { decode } from "@atproto/lex-cbor";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { AccountStatusManager } from "../accounts/account-status.ts";
import { RepoImporter, RepoImportError } from "./repo-import.ts";
import type { RepoImportStore } from "./repo-import-store.ts";

const ALICE = "did:plc:alice";
const NOTE = "com.example.note";
const BLOB = "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy";

const note = (rkey: string, text = rkey): ForeignRecord => ({ collection: NOTE, rkey, value: { $type: NOTE, text } });
const withBlob = (rkey: string): ForeignRecord => ({
  collection: NOTE,
  rkey,
  value: { $type: NOTE, text: rkey, image: { $type: "blob", ref: { $link: BLOB }, mimeType: "image/png", size: 1234 } },
});

const STAGING = ["RepoImport", "RepoImportBlock", "RepoImportNode", "RepoImportRecord", "RepoImportBlobRef"] as const;

/**
 * com.atproto.repo.importRepo's domain and store on each engine (docs/decisions/0055): a repository made elsewhere
 * (@atproto/repo's Repo.create, as the reference PDS makes one) is taken in whole and re-signed here, checked
 * afterwards by @atproto/repo's own verification; anything refused or interrupted leaves the account as it was and no
 * staged rows behind.
 */
describe.each(ENGINES)("RepoImporter on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  let alice: { didKey: string };
  let foreign: Keypair;

  const importerOn = (db: Database, imports: RepoImportStore = new SqlRepoImportStore(db)) =>
    new RepoImporter(
      {
        repo: repositoriesOn(db, clock).store,
        imports,
        signingKeypair: (did, stored) => TEST_SIGNING_KEYS.keypair(did, stored),
        // The DID document's key: the old PDS's, which signed the CAR.
        trustedKeys: async () => [foreign.did()],
        now: () => clock.now,
      },
      { stagedForMs: HOUR },
    );
  const deactivate = () => execute(shared.db, sql`UPDATE "Account" SET "deactivatedAt" = ${at(clock.now)} WHERE "did" = ${ALICE}`);
  const repository = async () => verifiedRepository(await exportRepository(repositoriesOn(shared.db, clock).store, ALICE), ALICE, alice.didKey);
  const paths = async () => (await repository()).creates.map((op) => `${op.collection}/${op.rkey}`).sort();
  const stagedRows = async () => Promise.all(STAGING.map((table) => countRows(shared.db, table)));
  const refusal = async (promise: Promise<unknown>) =>
    promise.then(
      () => "imported",
      (error: unknown) => (error instanceof RepoImportError ? `${error.status} ${error.xrpcName}: ${error.message}` : Promise.reject(error)),
    );

  beforeEach(async () => {
    clock.now = 1_800_000_000_000;
    foreign = await Secp256k1Keypair.create();
    alice = await accountWithRepository(shared.db, ALICE, clock);
    await repositoriesOn(shared.db, clock).writer.write(ALICE, [{ action: "create", collection: NOTE, rkey: "before", value: { $type: NOTE, text: "here before" } }]);
    await deactivate();
  });

  it("takes in a repository signed elsewhere, re-signed with the account's key, that @atproto/repo verifies with every record and blob reference", async () => {
    const made = await foreignRepositoryCar(ALICE, foreign, [note("a"), note("b"), withBlob("c")]);
    const result = await importerOn(shared.db).import(ALICE, inPieces(made.car, 100));

    expect(result.records).toBe(3);
    expect(result.head.rev > made.rev).toBe(true);
    const verified = await repository();
    // The same records, block for block, as @atproto/repo reads them from the CAR the old server signed.
    const source = await verifiedRepository(made.car, ALICE, foreign.did());
    const cids = (repo: typeof source) => repo.creates.map((op) => `${op.collection}/${op.rkey} ${op.cid.toString()}`).sort();
    expect(cids(verified)).toEqual(cids(source));
    expect(verified.creates.map((op) => `${op.collection}/${op.rkey}`).sort()).toEqual([`${NOTE}/a`, `${NOTE}/b`, `${NOTE}/c`]);
    expect(await rowsOf(shared.db, sql`SELECT "collection", "rkey", "blobCid" FROM "RecordBlob" WHERE "did" = ${ALICE}`)).toEqual([{ collection: NOTE, rkey: "c", blobCid: BLOB }]);
    const head = await rowsOf<{ cid: string; rev: string }>(shared.db, sql`SELECT "cid", "rev" FROM "RepoRoot" WHERE "did" = ${ALICE}`);
    expect(head).toEqual([{ cid: result.head.cid, rev: result.head.rev }]);
    expect(await stagedRows()).toEqual([0, 0, 0, 0, 0]);
  });

  it("refuses a CAR whose commit another key signed, and leaves the repository as it was", async () => {
    const before = await paths();
    const forged = await foreignRepositoryCar(ALICE, await Secp256k1Keypair.create(), [note("forged")]);
    expect(await refusal(importerOn(shared.db).import(ALICE, inPieces(forged.car)))).toMatch(/^400 InvalidRequest: The repository's commit is not signed by the key/);
    expect(await paths()).toEqual(before);
    expect(await stagedRows()).toEqual([0, 0, 0, 0, 0]);
  });

  it("refuses another DID's repository, an active account, and a CAR without one of its records", async () => {
    const before = await paths();
    const bobs = await foreignRepositoryCar("did:plc:bob", foreign, [note("x")]);
    expect(await refusal(importerOn(shared.db).import(ALICE, inPieces(bobs.car)))).toMatch(/is did:plc:bob's, not this account's/);

    const made = await foreignRepositoryCar(ALICE, foreign, [note("a"), note("b")]);
    const { root, blocks } = await readCarWithRoot(made.car);
    const recordCid = (await verifiedRepository(made.car, ALICE, foreign.did())).creates[0]!.cid;
    const without = new BlockMap();
    blocks.forEach((bytes, cid) => (cid.equals(recordCid) ? undefined : without.set(cid, bytes)));
    expect(await refusal(importerOn(shared.db).import(ALICE, inPieces(await blocksToCarFile(root, without))))).toMatch(/does not hold the record/);

    await execute(shared.db, sql`UPDATE "Account" SET "deactivatedAt" = NULL WHERE "did" = ${ALICE}`);
    expect(await refusal(importerOn(shared.db).import(ALICE, inPieces(made.car)))).toMatch(/^400 InvalidRequest: Only an account being moved here/);
    expect(await paths()).toEqual(before);
    expect(await stagedRows()).toEqual([0, 0, 0, 0, 0]);
  });

  it("an upload interrupted halfway changes nothing and leaves no staged rows", async () => {
    const before = await paths();
    const made = await foreignRepositoryCar(ALICE, foreign, Array.from({ length: 200 }, (_, i) => note(`n${i}`)));
    async function* cutOff() {
      let sent = 0;
      for await (const piece of inPieces(made.car, 1024)) {
        if (sent > made.car.byteLength / 2) throw new Error("The client went away");
        sent += piece.byteLength;
        yield piece;
      }
    }
    await expect(importerOn(shared.db).import(ALICE, cutOff())).rejects.toThrow(/client went away|could not be read/);
    expect(await paths()).toEqual(before);
    expect(await stagedRows()).toEqual([0, 0, 0, 0, 0]);
  });

  it("holds a bounded part of a large CAR at any moment: the bytes read and not yet staged, and the bytes read back at once", async () => {
    const records = Array.from({ length: 3000 }, (_, i) => note(`r${String(i).padStart(5, "0")}`, "x".repeat(2000) + i));
    const made = await foreignRepositoryCar(ALICE, foreign, records);
    const store = new SqlRepoImportStore(shared.db);
    let received = 0;
    let staged = 0;
    let mostHeld = 0;
    let mostReadBack = 0;
    const measured: RepoImportStore = Object.assign(Object.create(store) as RepoImportStore, {
      stageBlocks: async (id: string, blocks: ReadonlyArray<{ cid: string; bytes: Uint8Array }>) => {
        await store.stageBlocks(id, blocks);
        staged += blocks.reduce((sum, block) => sum + block.bytes.byteLength, 0);
      },
      stagedBlocks: async (id: string, cids: readonly string[]) => {
        const rows = await store.stagedBlocks(id, cids);
        mostReadBack = Math.max(mostReadBack, rows.reduce((sum, row) => sum + row.bytes.byteLength, 0));
        return rows;
      },
    });
    async function* counted() {
      for await (const piece of inPieces(made.car, 64 * 1024)) {
        received += piece.byteLength;
        mostHeld = Math.max(mostHeld, received - staged);
        yield piece;
      }
    }
    const result = await importerOn(shared.db, measured).import(ALICE, counted());

    expect(result.records).toBe(3000);
    expect(made.car.byteLength).toBeGreaterThan(6 * 1024 * 1024);
    // One staging batch (1 MiB), the piece being read and the CAR reader's own buffer: not the repository.
    expect(mostHeld).toBeLessThan(1.5 * 1024 * 1024);
    // The leaves of one batch of MST nodes at most, read back to decode their records.
    expect(mostReadBack).toBeLessThan(made.car.byteLength / 3);
    console.info(`importRepo of a ${made.car.byteLength} byte CAR: at most ${mostHeld} bytes read and not yet staged, ${mostReadBack} bytes read back at once`);
  }, 120_000);

  it("two imports of one account racing on two connections: one lands whole, the other is refused with ImportConflict", async () => {
    const [one, two] = shared.others(2);
    const first = await foreignRepositoryCar(ALICE, foreign, [note("first-1"), note("first-2")]);
    const second = await foreignRepositoryCar(ALICE, foreign, [note("second-1")]);
    // An import reads the account's head before its CAR, and applies after the CAR's end: neither CAR ends before both
    // imports have begun reading theirs, so both read the same head and race to apply (on a busy machine one could
    // otherwise land whole before the other began, and both would rightly succeed).
    let reading = 0;
    let bothReading!: () => void;
    const bothRead = new Promise<void>((resolve) => (bothReading = resolve));
    async function* meetingAtTheEnd(pieces: AsyncIterable<Uint8Array>) {
      if (++reading === 2) bothReading();
      yield* pieces;
      await bothRead;
    }
    const outcomes = await Promise.all([
      refusal(importerOn(one!).import(ALICE, meetingAtTheEnd(inPieces(first.car, 50)))),
      refusal(importerOn(two!).import(ALICE, meetingAtTheEnd(inPieces(second.car, 50)))),
    ]);

    expect(outcomes.filter((outcome) => outcome === "imported")).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.startsWith("409 ImportConflict"))).toHaveLength(1);
    const landed = outcomes[0] === "imported" ? ["first-1", "first-2"] : ["second-1"];
    expect(await paths()).toEqual(landed.map((rkey) => `${NOTE}/${rkey}`));
    expect(await stagedRows()).toEqual([0, 0, 0, 0, 0]);
  });

  it.runIf(engine === "postgresql")("an activation racing an import announces the imported head in its #sync, not the one it read first", async () => {
    const made = await foreignRepositoryCar(ALICE, foreign, [note("imported")]);
    const plain = new SqlRepoImportStore(shared.db);
    const activation = new AccountStatusManager(repositoriesOn(shared.db, clock).store, new SqlTakedownStore(shared.db, 3600_000), async () => "alice.test", () => clock.now);
    const [imported, activated] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      // The import's last transaction (apply) is held before its COMMIT, the account's lock taken.
      (gated) => {
        const applyGated = new SqlRepoImportStore(gated);
        const imports: RepoImportStore = Object.assign(Object.create(plain) as RepoImportStore, { apply: applyGated.apply.bind(applyGated) });
        return importerOn(shared.db, imports).import(ALICE, inPieces(made.car));
      },
      // The activation reads the head before the import commits, then waits for the account's lock.
      () => activation.activate(ALICE),
    );
    expect(activated).toBe(true);
    const syncs = await rowsOf<{ body: Uint8Array }>(shared.db, sql`SELECT "body" FROM "RepoEvent" WHERE "did" = ${ALICE} AND "type" = 'sync'`);
    expect(syncs).toHaveLength(1);
    const { root } = await readCarWithRoot((decode(syncs[0]!.body) as { blocks: Uint8Array }).blocks);
    expect(root.toString()).toBe(imported.head.cid);
  });
});
