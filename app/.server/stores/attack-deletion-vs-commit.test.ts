import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execute, openTestDatabase, rowOf, rowsOf, type TestDatabase } from "../../../tests/helpers/databases.ts";
import { at, sql } from "../db/sql.ts";
import { SqlAccountDeletionStore } from "./sql-account-deletion-store.ts";
import { SqlRepoStore } from "./sql-repo-store.ts";

/**
 * Security review (review branch): a commit that lands while an account is being deleted leaves its #commit event in
 * the firehose log on PostgreSQL. removeAccount (sql-account-deletion-store.ts) deletes "RepoEvent" rows first and the
 * "Account" row after, without the lock every commit takes (lockAccountData): a commit transaction that is in flight
 * (it holds a FOR KEY SHARE on the account row through its RepoBlock/Record inserts) makes the DELETE of the account
 * wait; the commit then appends its event and commits; the deletion resumes, cascades away the records — and the
 * event, which has no foreign key, survives: subscribeRepos backfill replays a deleted account's commit.
 *
 * Here a third connection holds the FOR KEY SHARE so that the interleaving is deterministic; in production the commit
 * transaction itself holds it (its first FK-checked INSERT precedes the deletion's DELETE "RepoEvent").
 */

const T = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const DAY = 24 * 60 * 60 * 1000;

describe("deletion racing a commit on postgresql", () => {
  let test: TestDatabase;

  beforeEach(async () => {
    test = await openTestDatabase("postgresql");
    await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${ALICE}, 'alice.test', 'alice@example.com', 'scrypt$alice', '{}', ${at(T)}, ${at(T)})`);
    await execute(test.db, sql`INSERT INTO "RepoRoot" ("did", "cid", "rev", "updatedAt") VALUES (${ALICE}, 'bafycommit1', '3kaaaaaaaaaaa', ${at(T)})`);
    await execute(test.db, sql`INSERT INTO "RepoBlock" ("did", "cid", "repoRev", "content") VALUES (${ALICE}, 'bafycommit1', '3kaaaaaaaaaaa', ${new Uint8Array([1])})`);
    await execute(test.db, sql`INSERT INTO "RepoEvent" ("did", "type", "body", "time") VALUES (${ALICE}, 'commit', ${new Uint8Array([6])}, ${at(T)})`);
  });
  afterEach(() => test.close());

  it("no #commit event of the deleted account survives a commit that landed during the deletion", async () => {
    const holder = new pg.Client({ connectionString: test.url });
    await holder.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "Account" WHERE "did" = $1 FOR KEY SHARE`, [ALICE]);

      const deletion = new SqlAccountDeletionStore(test.connect(), 72 * 60 * 60 * 1000);
      const removing = deletion.removeByOperator(ALICE, T + 2000);
      // Wait until the deletion has run DELETE "RepoEvent" and waits at DELETE "Account".
      for (let i = 0; i < 600; i++) {
        const waiting = await holder.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM "Account"%'`);
        if (waiting.rows[0].n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }

      const repo = new SqlRepoStore(test.connect(), { blobGraceMs: DAY, eventRetentionMs: 72 * 60 * 60 * 1000 });
      const applied = await repo.applyCommit(
        {
          did: ALICE,
          base: { cid: "bafycommit1", rev: "3kaaaaaaaaaaa" },
          head: { cid: "bafycommit2", rev: "3kaaaaaaaaaab" },
          newBlocks: [{ cid: "bafycommit2", bytes: new Uint8Array([2]) }],
          removedCids: [],
          records: [{ action: "create", collection: "app.bsky.feed.post", rkey: "3kpost", cid: "bafyrecord", json: '{"text":"posted while deleting"}', blobCids: [] }],
          events: [{ did: ALICE, type: "commit", body: new Uint8Array([7]) }],
        },
        T + 1000,
      );
      expect(applied).toBe(true);

      await holder.query("COMMIT");
      expect(await removing).toBeTypeOf("number");
    } finally {
      await holder.end();
    }

    expect(await rowOf(test.db, sql`SELECT "did" FROM "Account" WHERE "did" = ${ALICE}`)).toBeUndefined();
    expect(await rowOf(test.db, sql`SELECT "rkey" FROM "Record" WHERE "did" = ${ALICE}`)).toBeUndefined();
    const events = await rowsOf<{ type: string }>(test.db, sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${ALICE} ORDER BY "seq"`);
    console.log("RepoEvent rows left for the deleted DID:", JSON.stringify(events));
    expect(events).toEqual([{ type: "account" }]);
  });
});
