/**
 * createRecord on a repository of 10,000 records (docs/decisions/0027): the server's CPU per single-record commit,
 * next to the floor of the same work done by @atproto/repo alone in this process (load the repository, apply one
 * write, sign, diff), measured in the same run; on PostgreSQL also the cluster's CPU and the statements per commit.
 * Between the commits' batches, batches of getSession on the same server: a commit less a getSession is the commit's
 * own work, what issue 28 holds to 1.5× the floor (the request around it, whose cost the HTTP floor's targets cover,
 * left out: bench/README.md, "Speed against the HTTP floor").
 * Part of `npm run bench` (bench/run.ts); alone: `npx tsx bench/repo-commit.ts [--engine sqlite|postgresql|both]
 * [--cpu-prof-dir /tmp/prof-repo]` after `npm run build`.
 */
import { TID } from "@atproto/common-web";
import { P256Keypair } from "@atproto/crypto";
import { MemoryBlockstore, Repo, WriteOpAction } from "@atproto/repo";
import { readdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { getSessionCase } from "./lib/cases.ts";
import { clockTicksPerSecond, processCpuNanos } from "./lib/cpu.ts";
import { Driver, send } from "./lib/driver.ts";
import { timedRequest, type Counters } from "./lib/measure.ts";
import { engineName, forEachEngine } from "./lib/engines.ts";
import { statementDelta, type BenchPostgres } from "./lib/postgres.ts";
import { startServer } from "./lib/server.ts";
import { median, round } from "./lib/stats.ts";
import { summarize, type ProfileWindow } from "./profile-summary.ts";

const RECORDS = 10_000;
const FILL_BATCH = 200;
const WARMUP = 50;
/**
 * Measured commits: BATCHES batches of BATCH_COMMITS, the median batch reported (as bench/README.md explains). A batch's
 * CPU is read in clock ticks (10 ms): over 200 commits that is a step of 0.05 ms a commit (0.17 ms over the 60 of
 * the first version, as much as the changes it had to tell apart).
 */
const BATCHES = 5;
const BATCH_COMMITS = 200;
/** getSession's warm-up on the repository's server (its path is mostly the commits' own request path, already warm). */
const GET_SESSION_WARMUP = 1000;
/** getSession requests a batch, between two batches of commits. */
const BATCH_GET_SESSIONS = 300;
const POST = "app.bsky.feed.post";
const KEY_EPOCH_MICROS = 1_795_000_000_000_000;

const record = (i: number) => ({ $type: POST, text: `benchmark post ${i}`, createdAt: "2026-11-26T00:00:00.000Z" });
/** The i-th record key: a TID (posts' lexicon key type, which createRecord checks: docs/decisions/0049), in order. */
const key = (i: number) => TID.fromTime(KEY_EPOCH_MICROS + i, 0).toString();

export type RepoCommitResult = {
  engine: "sqlite" | "postgresql";
  records: number;
  commits: number;
  /** Server CPU per commit, median batch, and each batch's. */
  serverCpuMs: number;
  batchServerCpuMs: number[];
  /** Server CPU per getSession on the same server, median batch (a batch after each batch of commits), and each batch's. */
  getSessionCpuMs: number;
  batchGetSessionCpuMs: number[];
  /** A commit less a getSession: the median over the batches of each commit batch's figure less the getSession batch after it. */
  ownWorkMs: number;
  wallMs: number;
  /** @atproto/repo alone in this process: before the server, after it, and their mean. */
  floorMs: { before: number; after: number; mean: number };
  floorMultiple: number;
  /** ownWorkMs ÷ the floor: issue 28's target, at most 1.5×. */
  ownWorkFloorMultiple: number;
  /** PostgreSQL only: the cluster's CPU per commit (median batch) and statements per commit. */
  postgresCpuMs?: number;
  statementsPerCommit?: number;
  statements?: { query: string; perCommit: number }[];
  /** The measured commits on the monotonic clock, for a profile of the server (bench/profile-summary.ts). */
  window: ProfileWindow;
};

async function xrpc(driver: Driver, accessToken: string, nsid: string, json: unknown): Promise<void> {
  const url = driver.url(`/xrpc/${nsid}`);
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = { Authorization: `DPoP ${accessToken}`, DPoP: await driver.proof("POST", url, accessToken), "Content-Type": "application/json" };
    const result = await send(url, { method: "POST", headers, body: JSON.stringify(json) });
    if (driver.observe(result)) continue;
    if (result.status !== 200) throw new Error(`${nsid}: ${result.status} ${JSON.stringify(result.body)}`);
    return;
  }
  throw new Error(`${nsid}: no nonce accepted`);
}

type ServerFigures = Pick<
  RepoCommitResult,
  "serverCpuMs" | "batchServerCpuMs" | "getSessionCpuMs" | "batchGetSessionCpuMs" | "ownWorkMs" | "wallMs" | "postgresCpuMs" | "statementsPerCommit" | "statements" | "window"
>;

/** One batch of BATCH_COMMITS single-record commits, per commit: the server's CPU, the cluster's (PostgreSQL) and the wall time, ms. */
export type CommitBatch = { server: number; postgres: number; wall: number };

/**
 * A started server whose repository holds RECORDS records, its commits warmed up: batches of single-record
 * createRecord commits by an OAuth app, measured on demand (serverCommits; bench/app-activity.ts runs two side by side).
 */
export type CommitServer = {
  database: string;
  driver: Driver;
  token: string;
  /** The server's CPU so far, ms. */
  cpuMs(): number;
  /** What the server logged. */
  output(): string;
  commitBatch(): Promise<CommitBatch>;
  stop(): Promise<void>;
};

/** Starts a server (`env`: its settings), fills its repository and warms its commits up. */
export async function startCommitServer(options: { postgres?: BenchPostgres; nodeFlags?: string[]; env?: Record<string, string> }): Promise<CommitServer> {
  const pg = options.postgres;
  const database = `atrium_repo_commit_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const databaseUrl = pg ? await pg.createDatabase(database) : undefined;
  const server = await startServer({ databaseUrl, nodeFlags: options.nodeFlags, env: options.env });
  try {
    const driver = await Driver.create(server);
    const { access_token: token } = await driver.obtainTokens();
    for (let start = 0; start < RECORDS; start += FILL_BATCH) {
      const writes = Array.from({ length: FILL_BATCH }, (_, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: POST, rkey: key(start + i), value: record(start + i) }));
      await xrpc(driver, token, "com.atproto.repo.applyWrites", { repo: driver.did, writes });
    }
    let next = RECORDS;
    const create = () => xrpc(driver, token, "com.atproto.repo.createRecord", { repo: driver.did, collection: POST, rkey: key(next), record: record(next++) });
    for (let i = 0; i < WARMUP; i++) await create();
    const ticksPerSecond = clockTicksPerSecond();
    const cpuMs = () => processCpuNanos(server.pid, ticksPerSecond) / 1e6;
    return {
      database,
      driver,
      token,
      cpuMs,
      output: () => server.output(),
      async commitBatch() {
        const cpu = cpuMs();
        const pgTicks = pg?.cpuTicks() ?? 0;
        const started = performance.now();
        for (let i = 0; i < BATCH_COMMITS; i++) await create();
        const postgres = pg ? (pg.cpuTicks() - pgTicks) / (ticksPerSecond / 1000) / BATCH_COMMITS : 0;
        return { wall: (performance.now() - started) / BATCH_COMMITS, server: (cpuMs() - cpu) / BATCH_COMMITS, postgres };
      },
      stop: () => server.stop(),
    };
  } catch (error) {
    await reportFailure(server);
    await server.stop();
    throw error;
  }
}

/** What the server said about a failure (a 500 is logged there, not answered), once its log has been written out. */
export async function reportFailure(server: { output(): string }): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  console.error(server.output().slice(-4000));
}

/** Server CPU (ms) per single-record createRecord on a repository of RECORDS records; `env`: settings of the server. */
export async function serverCommits(options: { postgres?: BenchPostgres; nodeFlags?: string[]; env?: Record<string, string> }): Promise<ServerFigures> {
  const pg = options.postgres;
  const server = await startCommitServer(options);
  const { database, driver, token, cpuMs } = server;
  try {
    const sessions = getSessionCase(driver, token);
    const sessionCounters: Counters = { requests: 0, retries: 0 };
    for (const item of await sessions.prepare(GET_SESSION_WARMUP)) await timedRequest(driver, sessions, item, 0, sessionCounters);
    const batches: Array<CommitBatch & { getSession: number }> = [];
    const statementCounts = pg?.statementsTracked ? { total: 0, byQuery: new Map<string, { calls: number; query: string }>() } : undefined;
    const now = () => Number(process.hrtime.bigint() / 1000n);
    const startMicros = now();
    const excluded: { startMicros: number; endMicros: number }[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      const statementsBefore = statementCounts ? await pg!.statements(database) : undefined;
      const committed = await server.commitBatch();
      if (statementCounts) {
        const delta = statementDelta(statementsBefore!, await pg!.statements(database));
        statementCounts.total += delta.total;
        for (const [id, { calls, query }] of delta.byQuery) statementCounts.byQuery.set(id, { calls: (statementCounts.byQuery.get(id)?.calls ?? 0) + calls, query });
      }
      // The getSession batch (its proofs signed first), left out of the window a profile summarises.
      const sessionsStarted = now();
      const items = await sessions.prepare(BATCH_GET_SESSIONS);
      const before = { cpu: cpuMs(), sent: sessionCounters.requests };
      for (const item of items) await timedRequest(driver, sessions, item, 0, sessionCounters);
      batches.push({ ...committed, getSession: (cpuMs() - before.cpu) / (sessionCounters.requests - before.sent) });
      excluded.push({ startMicros: sessionsStarted, endMicros: now() });
    }
    const endMicros = now();
    const mid = (values: number[]) => median([...values].sort((a, b) => a - b));
    const figures: ServerFigures = {
      window: { startMicros, endMicros, requests: BATCHES * BATCH_COMMITS, excluded },
      serverCpuMs: mid(batches.map((b) => b.server)),
      batchServerCpuMs: batches.map((b) => round(b.server, 3)),
      getSessionCpuMs: mid(batches.map((b) => b.getSession)),
      batchGetSessionCpuMs: batches.map((b) => round(b.getSession, 3)),
      ownWorkMs: mid(batches.map((b) => b.server - b.getSession)),
      wallMs: mid(batches.map((b) => b.wall)),
    };
    if (pg) {
      figures.postgresCpuMs = median(batches.map((b) => b.postgres).sort((a, b) => a - b));
      if (statementCounts) {
        const commits = BATCHES * BATCH_COMMITS;
        const delta = statementCounts;
        figures.statementsPerCommit = delta.total / commits;
        figures.statements = [...delta.byQuery.values()].map((s) => ({ query: s.query, perCommit: round(s.calls / commits, 2) })).sort((a, b) => b.perCommit - a.perCommit);
      }
    }
    return figures;
  } catch (error) {
    await reportFailure(server);
    throw error;
  } finally {
    await server.stop();
  }
}

/** The floor: @atproto/repo alone, in memory, doing what a commit needs: load, one write, sign, diff (median batch, ms per commit). */
export async function repoFloorMs(): Promise<number> {
  const keypair = await P256Keypair.create();
  const storage = new MemoryBlockstore();
  let repo = await Repo.create(storage, "did:plc:benchfloor", keypair);
  for (let start = 0; start < RECORDS; start += FILL_BATCH) {
    const writes = Array.from({ length: FILL_BATCH }, (_, i) => ({ action: WriteOpAction.Create, collection: POST, rkey: key(start + i), record: record(start + i) }) as const);
    repo = await repo.applyWrites(writes as never, keypair);
  }
  let next = RECORDS;
  const commit = async () => {
    const loaded = await Repo.load(storage, repo.cid);
    const i = next++;
    repo = await loaded.applyWrites({ action: WriteOpAction.Create, collection: POST as never, rkey: key(i), record: record(i) }, keypair);
  };
  for (let i = 0; i < WARMUP; i++) await commit();
  const batches: number[] = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    const before = process.cpuUsage();
    for (let i = 0; i < BATCH_COMMITS; i++) await commit();
    const used = process.cpuUsage(before);
    batches.push((used.user + used.system) / 1000 / BATCH_COMMITS);
  }
  return median(batches.sort((a, b) => a - b));
}

/** One engine's figures: the floor, the server, the floor again. */
export async function measureRepoCommit(options: { postgres?: BenchPostgres; nodeFlags?: string[] } = {}): Promise<RepoCommitResult> {
  const before = await repoFloorMs();
  const server = await serverCommits(options);
  const after = await repoFloorMs();
  const mean = (before + after) / 2;
  return {
    engine: options.postgres ? "postgresql" : "sqlite",
    records: RECORDS,
    commits: BATCHES * BATCH_COMMITS,
    ...server,
    serverCpuMs: round(server.serverCpuMs, 2),
    getSessionCpuMs: round(server.getSessionCpuMs, 3),
    ownWorkMs: round(server.ownWorkMs, 2),
    wallMs: round(server.wallMs, 2),
    postgresCpuMs: server.postgresCpuMs === undefined ? undefined : round(server.postgresCpuMs, 2),
    statementsPerCommit: server.statementsPerCommit === undefined ? undefined : round(server.statementsPerCommit, 1),
    floorMs: { before: round(before, 2), after: round(after, 2), mean: round(mean, 2) },
    floorMultiple: round(server.serverCpuMs / mean, 2),
    ownWorkFloorMultiple: round(server.ownWorkMs / mean, 2),
  };
}

export function describeRepoCommit(result: RepoCommitResult): string {
  const pg = result.postgresCpuMs === undefined ? "" : `; PostgreSQL's CPU ${result.postgresCpuMs.toFixed(2)} ms, ${result.statementsPerCommit?.toFixed(1) ?? "–"} statements per commit`;
  return (
    `createRecord on a repository of ${result.records} records, ${result.commits} single-record commits: ` +
    `server CPU ${result.serverCpuMs.toFixed(2)} ms per commit (batches ${result.batchServerCpuMs.join(", ")}; wall ${result.wallMs.toFixed(2)} ms)${pg}; ` +
    `floor (@atproto/repo alone: load, write, sign, diff) ${result.floorMs.mean.toFixed(2)} ms (before ${result.floorMs.before}, after ${result.floorMs.after}); ` +
    `${result.floorMultiple.toFixed(2)}× the floor; getSession on the same server ${result.getSessionCpuMs.toFixed(3)} ms (batches ${result.batchGetSessionCpuMs.join(", ")}), ` +
    `a commit less a getSession ${result.ownWorkMs.toFixed(2)} ms = ${result.ownWorkFloorMultiple.toFixed(2)}× the floor (issue 28's bound: 1.5×)`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "sqlite" }, "cpu-prof-dir": { type: "string" } } });
  const nodeFlags = values["cpu-prof-dir"] ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof-dir"]}`] : undefined;
  const profiled = (engine: string, result: RepoCommitResult) => {
    const dir = values["cpu-prof-dir"];
    if (!dir) return;
    // The server wrote its profile as it exited: name it after the engine, with the measured window beside it.
    const written = readdirSync(dir).find((name) => name.startsWith("CPU.") && name.endsWith(".cpuprofile"));
    if (!written) return;
    const named = path.join(dir, `repo-commit-${engine}.cpuprofile`);
    renameSync(path.join(dir, written), named);
    writeFileSync(named.replace(/\.cpuprofile$/, ".window.json"), `${JSON.stringify(result.window)}\n`);
    console.log(summarize(named, { window: result.window, top: 30 }));
  };
  await forEachEngine(
    values.engine,
    async (engine, postgres) => {
      const result = await measureRepoCommit({ postgres, nodeFlags });
      console.log(`${engineName(engine)}: ${describeRepoCommit(result)}`);
      for (const statement of result.statements ?? []) console.log(`  ${statement.perCommit.toFixed(2)} × ${statement.query.replace(/\s+/g, " ").slice(0, 140)}`);
      profiled(engine, result);
    },
    { plc: true },
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
