/**
 * createRecord on a repository of 10,000 records (docs/decisions/0027): the server's CPU per single-record commit,
 * next to the floor of the same work done by @atproto/repo alone in this process (load the repository, apply one
 * write, sign, diff), measured in the same run. SQLite; `npx tsx bench/repo-commit.ts` after `npm run build`.
 */
import { P256Keypair } from "@atproto/crypto";
import { MemoryBlockstore, Repo, WriteOpAction } from "@atproto/repo";
import { clockTicksPerSecond } from "./lib/cpu.ts";
import { Driver, send } from "./lib/driver.ts";
import { startServer } from "./lib/server.ts";

const RECORDS = 10_000;
const BATCH = 200;
const WARMUP = 50;
const MEASURED = 300;
const POST = "app.bsky.feed.post";

const record = (i: number) => ({ $type: POST, text: `benchmark post ${i}`, createdAt: "2026-11-26T00:00:00.000Z" });
const key = (i: number) => `3kbench${String(i).padStart(6, "0")}`;

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

/** Server CPU (ms) per single-record createRecord on a repository of RECORDS records. */
async function serverCommit(): Promise<{ cpuMs: number; wallMs: number }> {
  const server = await startServer();
  try {
    const driver = await Driver.create(server);
    const { access_token: token } = await driver.obtainTokens();
    for (let start = 0; start < RECORDS; start += BATCH) {
      const writes = Array.from({ length: BATCH }, (_, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: POST, rkey: key(start + i), value: record(start + i) }));
      await xrpc(driver, token, "com.atproto.repo.applyWrites", { repo: driver.did, writes });
    }
    const create = (i: number) => xrpc(driver, token, "com.atproto.repo.createRecord", { repo: driver.did, collection: POST, rkey: key(RECORDS + i), record: record(i) });
    for (let i = 0; i < WARMUP; i++) await create(i);
    const ticks = server.cpuTicks();
    const started = performance.now();
    for (let i = WARMUP; i < WARMUP + MEASURED; i++) await create(i);
    const wallMs = (performance.now() - started) / MEASURED;
    return { cpuMs: ((server.cpuTicks() - ticks) * 1000) / clockTicksPerSecond() / MEASURED, wallMs };
  } finally {
    await server.stop();
  }
}

/** The floor: @atproto/repo alone, in memory, doing what a commit needs: load, one write, sign, diff. */
async function floorCommit(): Promise<number> {
  const keypair = await P256Keypair.create();
  const storage = new MemoryBlockstore();
  let repo = await Repo.create(storage, "did:plc:benchfloor", keypair);
  for (let start = 0; start < RECORDS; start += BATCH) {
    const writes = Array.from({ length: BATCH }, (_, i) => ({ action: WriteOpAction.Create, collection: POST, rkey: key(start + i), record: record(start + i) }) as const);
    repo = await repo.applyWrites(writes as never, keypair);
  }
  const commit = async (i: number) => {
    const loaded = await Repo.load(storage, repo.cid);
    repo = await loaded.applyWrites({ action: WriteOpAction.Create, collection: POST as never, rkey: key(RECORDS + i), record: record(i) }, keypair);
  };
  for (let i = 0; i < WARMUP; i++) await commit(i);
  const before = process.cpuUsage();
  for (let i = WARMUP; i < WARMUP + MEASURED; i++) await commit(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / MEASURED;
}

const floorBefore = await floorCommit();
const server = await serverCommit();
const floorAfter = await floorCommit();
const floor = (floorBefore + floorAfter) / 2;
console.log(`createRecord on a repository of ${RECORDS} records, ${MEASURED} single-record commits, SQLite:`);
console.log(`  server CPU per commit ${server.cpuMs.toFixed(2)} ms (wall ${server.wallMs.toFixed(2)} ms)`);
console.log(`  floor (@atproto/repo alone: load, write, sign, diff) ${floor.toFixed(2)} ms (before ${floorBefore.toFixed(2)}, after ${floorAfter.toFixed(2)})`);
console.log(`  ratio ${(server.cpuMs / floor).toFixed(2)}× (issue 18's bound: 1.5×)`);
