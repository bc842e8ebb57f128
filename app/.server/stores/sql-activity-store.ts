import { expiredDay, MAX_TARGETS_PER_KIND, type ActivityApp, type ActivityCount, type ActivityKind, type ActivityRow } from "../activity/activity-lines.ts";
import type { ActivityStore } from "../activity/activity-store.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, lock, run, send, sql, statementOf, type Database, type Program, type SqlValue, type Statement } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

/** Expired counters deleted per cleanup, across all accounts: more than one day of one app's rows adds (the lazy-expiry convention). */
const ACTIVITY_CLEANUP_BATCH = 200;
const cleanupActivity = expiredRowsCleanup("AppActivity", ["accountDid", "app", "dayStart", "kind", "target"], "dayStart", ACTIVITY_CLEANUP_BATCH);

const ACTIVITY_ROW = tables.AppActivity.pick("dayStart", "kind", "target", "count", "lastAt");

/** The most counts one statement takes (a commit of 200 writes to distinct collections and actions): more go in further statements. */
const COUNTS_PER_STATEMENT = 50;

/**
 * The statement that adds `rows` counts to an app's counters of a day, on both engines. Each count keeps its target
 * when the day already has it, or when the kind's targets that day, with this count's place among the call's targets
 * of its kind, stay within the cap; otherwise it goes to the kind's overflow (target ""). Counts that meet on one row are summed first
 * (GROUP BY), so that the upsert touches each row once. The day's targets are read in the statement itself: the
 * caller holds the lock that takes counts of the app in turns (RepoStore.applyCommit's account lock, or this store's),
 * so the cap is exact. Times and integers are cast, so that PostgreSQL types the bound values as the columns'.
 * Nothing is counted for an account that is gone: folded into a commit's head swap on PostgreSQL (withCounts), the
 * counts are written even when the swap finds no head, and an account deleted just before would fail the statement on
 * its foreign key (a 500 where the commit is refused: account-deletion-race.test.ts).
 */
function countText(rows: number): string {
  const values = Array.from({ length: rows }, () => "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS INTEGER))").join(", ");
  return `INSERT INTO "AppActivity" ("accountDid", "app", "dayStart", "kind", "target", "count", "lastAt")
      SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TIMESTAMP(3)), v."kind", v."target", SUM(v."count"), CAST(? AS TIMESTAMP(3))
      FROM (SELECT c."column1" AS "kind", c."column3" AS "count",
          CASE WHEN EXISTS (SELECT 1 FROM "AppActivity" e WHERE e."accountDid" = ? AND e."app" = ? AND e."dayStart" = ? AND e."kind" = c."column1" AND e."target" = c."column2")
            OR (SELECT COUNT(*) FROM "AppActivity" n WHERE n."accountDid" = ? AND n."app" = ? AND n."dayStart" = ? AND n."kind" = c."column1" AND n."target" <> '')
              + c."column4" <= CAST(? AS INTEGER)
          THEN c."column2" ELSE '' END AS "target"
        FROM (VALUES ${values}) c) v
      WHERE EXISTS (SELECT 1 FROM "Account" a WHERE a."did" = CAST(? AS TEXT))
      GROUP BY v."kind", v."target"
      ON CONFLICT ("accountDid", "app", "dayStart", "kind", "target") DO UPDATE SET "count" = "AppActivity"."count" + excluded."count", "lastAt" = excluded."lastAt"`;
}

/** One statement per size (the engines prepare each once), made when first needed. */
const countStatements = new Map<number, ReturnType<typeof statementOf>>();

function countStatement(rows: number) {
  let statement = countStatements.get(rows);
  if (!statement) {
    statement = statementOf(countText(rows));
    countStatements.set(rows, statement);
  }
  return statement;
}

/** Counts of one statement: how many, and the values countText(rows) binds. */
export type CountChunk = { readonly rows: number; readonly values: readonly SqlValue[] };

/** A commit's or a call's counts, in statements of at most COUNTS_PER_STATEMENT. */
export function countChunks(accountDid: string, app: ActivityApp, day: number, counts: readonly ActivityCount[], now: number): CountChunk[] {
  // A count's place among the targets of its kind in this call, for the cap.
  const places = new Map<ActivityKind, number>();
  const numbered = counts.map((count) => {
    const place = count.target === "" ? 0 : (places.get(count.kind) ?? 0) + 1;
    if (count.target !== "") places.set(count.kind, place);
    return { ...count, place };
  });
  const chunks: CountChunk[] = [];
  for (let start = 0; start < numbered.length; start += COUNTS_PER_STATEMENT) {
    const chunk = numbered.slice(start, start + COUNTS_PER_STATEMENT);
    const values = chunk.flatMap((count) => [count.kind, count.target, count.count, count.place]);
    chunks.push({ rows: chunk.length, values: [accountDid, app, at(day), at(now), accountDid, app, at(day), accountDid, app, at(day), MAX_TARGETS_PER_KIND, ...values, accountDid] });
  }
  return chunks;
}

/** Sends counts' statements (ActivityStore.count; RepoStore.applyCommit on SQLite, or the counts a fold left). */
export function* sendCounts(chunks: readonly CountChunk[]): Program<void> {
  for (const chunk of chunks) yield* send(countStatement(chunk.rows)(...chunk.values));
}

/**
 * Adds counts to an app's counters of a day, as a program (ActivityStore.count's; a commit sends its own chunks:
 * RepoStore.applyCommit, with countChunks, sendCounts and withCounts), with `send`, so that on PostgreSQL counting adds
 * no round trip (docs/decisions/0053).
 */
function* countActivity(accountDid: string, app: ActivityApp, day: number, counts: readonly ActivityCount[], now: number): Program<void> {
  yield* sendCounts(countChunks(accountDid, app, day, counts, now));
}

const foldedStatements = new Map<string, ReturnType<typeof statementOf>>();

/**
 * PostgreSQL only: `text` (one statement with `?` parameters, `values` bound to them) with a chunk of counts written in
 * the same statement, ahead of it in a data-modifying WITH, which SQLite lacks. A statement is atomic: the counts land
 * with what it writes, in its transaction, or not at all; and the process makes, binds and reads one statement where it
 * made two, which is what counting cost the commit on PostgreSQL (docs/decisions/0053). PostgreSQL, "Data-Modifying
 * Statements in WITH": they are "executed exactly once, and always to completion, independently of whether the primary
 * query reads all (or indeed any) of their output", and the primary statement's row count is its own. The main
 * statement must not read "AppActivity" (both parts see the snapshot the statement started with).
 */
export function withCounts(text: string, values: readonly SqlValue[], chunk: CountChunk): Statement {
  const key = `${chunk.rows} ${text}`;
  let statement = foldedStatements.get(key);
  if (!statement) {
    statement = statementOf(`WITH "counted" AS (${countText(chunk.rows)}) ${text}`);
    foldedStatements.set(key, statement);
  }
  return statement(...chunk.values, ...values);
}

/** Deletes a batch of counters, of any app, of days no longer kept (those up to `expiredDay`). */
export function* cleanupExpiredActivity(expiredDay: number): Program<void> {
  yield* send(cleanupActivity(expiredDay));
}

/** Deletes an app's whole history: a step of ending its access (the consent store's forget, an app password's revocation). */
export function* forgetActivity(accountDid: string, app: ActivityApp): Program<void> {
  yield* run(sql`DELETE FROM "AppActivity" WHERE "accountDid" = ${accountDid} AND "app" = ${app}`);
}

/** Every app's counters (docs/decisions/0053). */
export class SqlActivityStore implements ActivityStore {
  constructor(private readonly db: Database) {}

  async count(accountDid: string, app: ActivityApp, day: number, counts: readonly ActivityCount[], now: number, cleanup: boolean) {
    if (counts.length === 0 && !cleanup) return;
    return this.db.transaction(function* (): Program<void> {
      // Counts of one app take turns, so that the day's cap of targets holds (countActivity reads it in its statement).
      yield* lock(`activity:${accountDid}:${app}`);
      yield* countActivity(accountDid, app, day, counts, now);
      if (cleanup) yield* cleanupExpiredActivity(expiredDay(now));
    });
  }

  async history(accountDid: string, app: ActivityApp, before: number) {
    return this.db.execute(function* (): Program<ActivityRow[]> {
      const rows = yield* all(ACTIVITY_ROW, sql`SELECT "dayStart", "kind", "target", "count", "lastAt" FROM "AppActivity"
        WHERE "accountDid" = ${accountDid} AND "app" = ${app} AND "dayStart" > ${at(before)} ORDER BY "dayStart" DESC`);
      return rows.map(({ dayStart, kind, target, count, lastAt }) => ({ day: dayStart, kind: kind as ActivityKind, target, count, lastAt }));
    });
  }

  async dropExpired(accountDid: string, before: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "AppActivity" WHERE "accountDid" = ${accountDid} AND "dayStart" <= ${at(before)}`);
    });
  }
}
