/**
 * What counting an app's activity costs createRecord (docs/decisions/0053; issue 32 asks for at most 5 % of server
 * CPU), two ways:
 * 1. The server: bench/repo-commit.ts's commits (single-record commits by an OAuth app on a repository of 10,000
 *    records, the server's CPU per commit over batches of 200) on two servers of the same build running side by side,
 *    one with ATRIUM_APP_ACTIVITY on and one with it off, their batches alternated (on, off, off, on, …) so that a busy
 *    shared machine weighs on both alike; the median batch of each.
 * 2. The count alone, where it is spent: the same commits made in this process by the repository store and writer
 *    (RepoWriter, SqlRepoStore) on a database the built server migrated, in pairs of small batches, one counted for an
 *    app and one not, alternated; the median of the pairs' differences, per commit. Two servers differ by more than
 *    that on a shared machine (two servers with counting off differed by 0.27 ms a commit, 8 %), one process's
 *    alternated batches far less; and on SQLite the statements run in the process, so this is all they cost it.
 * Alone: `npx tsx bench/app-activity.ts [--engine sqlite|postgresql|both] [--batches 8] [--pairs 60]` after
 * `npm run build`.
 */
import { pathToFileURL } from "node:url";
import { oauthApp } from "../app/.server/activity/activity-lines.ts";
import { PostgresDatabase } from "../app/.server/db/postgres-database.ts";
import type { Database } from "../app/.server/db/sql.ts";
import { SqliteDatabase } from "../app/.server/db/sqlite-database.ts";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { encryptionKey, KeyRing, sealedKeyId } from "../app/.server/accounts/key-encryption.ts";
import { generateSigningKey, SigningKeys } from "../app/.server/accounts/signing-key.ts";
import { at, run, sql } from "../app/.server/db/sql.ts";
import { RepoWriter } from "../app/.server/repo/repo-writer.ts";
import { SqlRepoStore } from "../app/.server/stores/sql-repo-store.ts";
import { startServer } from "./lib/server.ts";
import { parseArgs } from "node:util";
import { engineName, forEachEngine, type BenchEngine } from "./lib/engines.ts";
import type { BenchPostgres } from "./lib/postgres.ts";
import { startCommitServer, type CommitServer } from "./repo-commit.ts";
import { median, round } from "./lib/stats.ts";

export type ActivityCostResult = { engine: BenchEngine; onMs: number[]; offMs: number[]; onMedian: number; offMedian: number; costPercent: number };

export async function measureActivityCost(engine: BenchEngine, batches: number, postgres?: BenchPostgres): Promise<ActivityCostResult> {
  const servers: Partial<Record<"on" | "off", CommitServer>> = {};
  try {
    for (const mode of ["on", "off"] as const) {
      servers[mode] = await startCommitServer({ postgres, env: { ATRIUM_APP_ACTIVITY: mode === "on" ? "1" : "0" } });
    }
    const figures = { on: [] as number[], off: [] as number[] };
    for (let batch = 0; batch < batches; batch++) {
      // Off first in even batches, on first in odd ones: neither always runs on the warmer (or busier) machine.
      const order = batch % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
      for (const mode of order) figures[mode].push((await servers[mode]!.commitBatch()).server);
    }
    const onMedian = median([...figures.on].sort((a, b) => a - b));
    const offMedian = median([...figures.off].sort((a, b) => a - b));
    return {
      engine,
      onMs: figures.on.map((ms) => round(ms, 2)),
      offMs: figures.off.map((ms) => round(ms, 2)),
      onMedian: round(onMedian, 2),
      offMedian: round(offMedian, 2),
      costPercent: round(((onMedian - offMedian) / offMedian) * 100, 1),
    };
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
  }
}

/** Commits per batch of the in-process measure, and batches filled before (a repository of some size, and warm code). */
const PAIR_COMMITS = 40;
/** A collection without a lexicon here: what is measured is the commit and its count, not a record's check. */
const NOTE = "com.example.bench.note";
const WARM_BATCHES = 10;

export type CountCostResult = { engine: BenchEngine; pairs: number; commitMs: number; countMs: number; countMsQuartiles: [number, number] };

const DID = "did:plc:benchactivity2222222222222";

/** An account with its repository's first commit, and the writer of its commits (the store's settings: the defaults'). */
async function benchRepository(db: Database, did: string): Promise<RepoWriter> {
  const keys = new SigningKeys(new KeyRing(encryptionKey(randomBytes(32))));
  const signingKey = keys.seal(did, await generateSigningKey());
  const now = Date.now();
  await db.execute(function* () {
    yield* run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "signingKeyEncryptedWith", "createdAt", "updatedAt")
      VALUES (${did}, ${"bench.test"}, ${"bench@example.com"}, ${"unused"}, ${signingKey}, ${sealedKeyId(signingKey)}, ${at(now)}, ${at(now)})`);
  });
  const writer = new RepoWriter(new SqlRepoStore(db, { blobGraceMs: 3600_000, eventRetentionMs: 72 * 3600_000 }), keys, Date.now);
  await writer.createRepository({ did, signingKey, handle: "bench.test" });
  return writer;
}

/**
 * The count's own CPU per commit in this process (2. above): `pairs` pairs of PAIR_COMMITS single-record commits, one
 * batch counted for an app and one not, in alternating order; process CPU (user + system) per commit.
 */
export async function measureCountCost(engine: BenchEngine, pairs: number, postgres?: BenchPostgres): Promise<CountCostResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-activity-count-"));
  const databaseUrl = postgres ? await postgres.createDatabase(`atrium_activity_count_${Date.now()}`) : `file:${path.join(dir, "atrium.db")}`;
  // The built server migrates the database as it starts.
  await (await startServer({ databaseUrl })).stop();
  const db: Database = postgres ? new PostgresDatabase(databaseUrl, { poolSize: 2 }) : new SqliteDatabase(databaseUrl.replace(/^file:/, ""));
  try {
    const writer = await benchRepository(db, DID);
    const app = oauthApp("https://bench.example/client-metadata.json");
    let next = 0;
    const batch = async (counted: boolean): Promise<number> => {
      const before = process.cpuUsage();
      for (let i = 0; i < PAIR_COMMITS; i++) {
        const n = next++;
        await writer.write(DID, [{ action: "create", collection: NOTE, rkey: `n${String(n).padStart(8, "0")}`, value: { $type: NOTE, text: `note ${n}` } }], counted ? { activity: app } : {});
      }
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000 / PAIR_COMMITS;
    };
    for (let i = 0; i < WARM_BATCHES; i++) await batch(i % 2 === 0);
    const differences: number[] = [];
    const plain: number[] = [];
    for (let pair = 0; pair < pairs; pair++) {
      // Alternated: the plain batch first in even pairs, the counted one first in odd ones.
      const counted = pair % 2 === 0 ? undefined : await batch(true);
      const uncounted = await batch(false);
      const countedAfter = counted ?? (await batch(true));
      plain.push(uncounted);
      differences.push(countedAfter - uncounted);
    }
    const sorted = [...differences].sort((a, b) => a - b);
    const quartile = (q: number) => sorted[Math.floor(q * (sorted.length - 1))]!;
    return { engine, pairs, commitMs: round(median([...plain].sort((a, b) => a - b)), 3), countMs: round(median(sorted), 3), countMsQuartiles: [round(quartile(0.25), 3), round(quartile(0.75), 3)] };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describeCountCost(result: CountCostResult): string {
  return (
    `the count alone, in process: ${result.countMs.toFixed(3)} ms of CPU per commit (median of ${result.pairs} pairs of ${PAIR_COMMITS} commits; ` +
    `quartiles ${result.countMsQuartiles[0].toFixed(3)} and ${result.countMsQuartiles[1].toFixed(3)}), beside ${result.commitMs.toFixed(2)} ms for the store's commit without it`
  );
}

export function describeActivityCost(result: ActivityCostResult): string {
  return (
    `createRecord's server CPU per commit with app activity counted ${result.onMedian.toFixed(2)} ms (batches ${result.onMs.join(", ")}), ` +
    `not counted ${result.offMedian.toFixed(2)} ms (batches ${result.offMs.join(", ")}): ${result.costPercent >= 0 ? "+" : ""}${result.costPercent} % (issue 32's bound: 5 %)`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "both" }, batches: { type: "string", default: "8" }, pairs: { type: "string", default: "60" } } });
  const batches = Number(values.batches);
  const pairs = Number(values.pairs);
  await forEachEngine(
    values.engine,
    async (engine, postgres) => {
      console.log(`${engineName(engine)}: ${describeCountCost(await measureCountCost(engine, pairs, postgres))}`);
      if (batches > 0) console.log(`${engineName(engine)}: ${describeActivityCost(await measureActivityCost(engine, batches, postgres))}`);
    },
    { plc: true },
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
