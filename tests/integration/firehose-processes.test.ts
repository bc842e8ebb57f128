import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { commitEvent, identityEvent } from "../helpers/repo-events.ts";
import { SqliteEventLog } from "../helpers/sqlite-event-log.ts";
import { createServerDatabase, type ServerDatabase } from "../helpers/test-database.ts";
import { freePort } from "../helpers/test-server.ts";

/**
 * Every process serves the firehose (docs/decisions/0029): two server
 * processes on one database and one shared event log, each with its own
 * subscribers, and a third process (this test) appending as another machine
 * would. Each process learns of the events by reading the log.
 */

type Running = { child: ChildProcess; port: number; exited: Promise<void> };

const ALICE = "did:plc:alice2222222222222222222";
let database: ServerDatabase;
let logDir: string;
let log: SqliteEventLog;
const processes: Running[] = [];

async function startProcess(env: Record<string, string>): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "tests/helpers/firehose-process.ts"], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: `http://127.0.0.1:${port}`, ATRIUM_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"event":"listening"')) resolve();
    });
    void exited.then(() => reject(new Error(`the server process exited before listening:\n${output}`)));
  });
  return { child, port, exited };
}

beforeAll(async () => {
  database = await createServerDatabase();
  logDir = mkdtempSync(path.join(os.tmpdir(), "atrium-event-log-"));
  const logFile = path.join(logDir, "events.db");
  log = new SqliteEventLog(logFile);
  const env = { DATABASE_URL: database.url, ATRIUM_TEST_EVENT_LOG: logFile, ATRIUM_FIREHOSE_POLL_MS: "20" };
  // One after the other: the first applies the migrations.
  processes.push(await startProcess(env));
  processes.push(await startProcess(env));
});

afterAll(async () => {
  for (const running of processes) {
    running.child.kill("SIGTERM");
    await running.exited;
  }
  log?.close();
  rmSync(logDir, { recursive: true, force: true });
  await database?.remove();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("two server processes sharing one event log", () => {
  it("both serve their subscribers every event, in seq order, whoever appended it", async () => {
    await log.append([identityEvent(ALICE, "alice.test")], Date.now());
    const url = (port: number, query = "") => `ws://127.0.0.1:${port}/xrpc/com.atproto.sync.subscribeRepos${query}`;
    const [first, second] = processes.map((running) => running.port) as [number, number];
    const consumers = [new FirehoseConsumer(url(first, "?cursor=0")), new FirehoseConsumer(url(first)), new FirehoseConsumer(url(second, "?cursor=0")), new FirehoseConsumer(url(second))];
    try {
      await Promise.all(consumers.map((consumer) => consumer.opened));
      const total = 101;
      for (let n = 1; n < total; n++) {
        await log.append([await commitEvent(ALICE, n)], Date.now());
        // A turn of the event loop between appends, so the processes' polls interleave with them.
        await new Promise((resolve) => setImmediate(resolve));
      }
      for (const consumer of consumers) await consumer.untilSeq(total);
      const [replayFirst, liveFirst, replaySecond, liveSecond] = consumers.map((consumer) => consumer.seqs());
      expect(replayFirst).toEqual(range(1, total));
      expect(replaySecond).toEqual(range(1, total));
      expect(liveFirst).toEqual(range(2, total));
      expect(liveSecond).toEqual(range(2, total));
    } finally {
      for (const consumer of consumers) {
        consumer.close();
        await consumer.closed;
      }
    }
  });
});
