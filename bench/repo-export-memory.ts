/**
 * What one getRepo export holds in memory (docs/decisions/0027, amendment: the head and blocks are read on one
 * snapshot, then streamed): a repository of 10,000 records is made through the server, then this process reads its
 * snapshot with the server's own store and reports the heap and buffer memory it takes and the CAR's size.
 * `node --expose-gc --import tsx bench/repo-export-memory.ts` after `npm run build` (SQLite).
 */
import { TID } from "@atproto/common-web";
import { startPlcDirectory } from "../scripts/lib/plc-directory.ts";
import { SqliteDatabase } from "../app/.server/db/sqlite-database.ts";
import { SqlRepoStore } from "../app/.server/stores/sql-repo-store.ts";
import { Driver, send } from "./lib/driver.ts";
import { startServer } from "./lib/server.ts";

const RECORDS = 10_000;
const POST = "app.bsky.feed.post";
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

const plc = await startPlcDirectory();
process.env.ATRIUM_PLC_DIRECTORY_URL = plc.url;
const server = await startServer();
try {
  const driver = await Driver.create(server);
  const { access_token: token } = await driver.obtainTokens();
  const url = driver.url("/xrpc/com.atproto.repo.applyWrites");
  for (let start = 0; start < RECORDS; start += 200) {
    const writes = Array.from({ length: 200 }, (_, i) => ({
      $type: "com.atproto.repo.applyWrites#create",
      collection: POST,
      // A TID, posts' lexicon key type (docs/decisions/0049).
      rkey: TID.fromTime(1_795_000_000_000_000 + start + i, 0).toString(),
      value: { $type: POST, text: `benchmark post ${start + i}`, createdAt: "2026-11-26T00:00:00.000Z" },
    }));
    for (let attempt = 0; ; attempt++) {
      const headers = { Authorization: `DPoP ${token}`, DPoP: await driver.proof("POST", url, token), "Content-Type": "application/json" };
      const result = await send(url, { method: "POST", headers, body: JSON.stringify({ repo: driver.did, writes }) });
      if (driver.observe(result) && attempt < 3) continue;
      if (result.status !== 200) throw new Error(`applyWrites: ${result.status}`);
      break;
    }
  }
  const db = new SqliteDatabase(server.databaseUrl.replace(/^file:/, ""));
  const store = new SqlRepoStore(db, { blobGraceMs: 60_000, eventRetentionMs: 3600_000 });
  const used = () => {
    gc();
    const memory = process.memoryUsage();
    return memory.heapUsed + memory.arrayBuffers;
  };
  await store.repositorySnapshot(driver.did, {}); // statements prepared, code warmed
  const before = used();
  const snapshot = (await store.repositorySnapshot(driver.did, {}))!;
  const held = used() - before;
  const bytes = snapshot.blocks.reduce((sum, block) => sum + block.bytes.byteLength, 0);
  const mib = (n: number) => (n / 1024 / 1024).toFixed(2);
  console.log(`${RECORDS} records: ${snapshot.blocks.length} blocks, ${mib(bytes)} MiB of block bytes; the snapshot holds ${mib(held)} MiB (heap + buffers)`);
  await db.close();
} finally {
  await server.stop();
  await plc.stop();
}
