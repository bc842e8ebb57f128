import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqlEventLog } from "../../app/.server/stores/sql-event-log.ts";
import { FirehoseConsumer, upgradeAnswer } from "../helpers/firehose-consumer.ts";
import { commitEvent, identityEvent } from "../helpers/repo-events.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Every process serves the firehose (docs/decisions/0029): two server
 * processes on one database (either engine, as the Vitest project says), each
 * with its own subscribers, and a third process (this test) appending to the
 * servers' own event log, the RepoEvent table, as another machine would. Each
 * process learns of the events by reading the log. The upgrades an address
 * may make per minute are counted across both (docs/decisions/0044).
 */

const ALICE = "did:plc:alice2222222222222222222";
const UPGRADES_PER_MINUTE = 6;
let first: TestServer;
let second: TestServer;
let log: SqlEventLog;

beforeAll(async () => {
  // One hop of trusted proxy: the tests name their client addresses with X-Forwarded-For, as nginx would.
  const env = { ATRIUM_FIREHOSE_POLL_MS: "20", ATRIUM_TRUST_PROXY: "1", ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE: String(UPGRADES_PER_MINUTE) };
  // One after the other: the first applies the migrations.
  first = await startTestServer(env);
  second = await startTestServer({ ...env, DATABASE_URL: first.databaseUrl });
  log = new SqlEventLog(first.database(), 72 * 3600_000);
});

afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const firehose = (server: TestServer, query = "") => `ws://127.0.0.1:${server.port}/xrpc/com.atproto.sync.subscribeRepos${query}`;

describe("two server processes sharing one event log", () => {
  it("both serve their subscribers every event, in seq order, whoever appended it", async () => {
    const [start] = await log.append([identityEvent(ALICE, "alice.test")], Date.now());
    const consumers = [
      new FirehoseConsumer(firehose(first, `?cursor=${start! - 1}`)),
      new FirehoseConsumer(firehose(first)),
      new FirehoseConsumer(firehose(second, `?cursor=${start! - 1}`)),
      new FirehoseConsumer(firehose(second)),
    ];
    try {
      await Promise.all(consumers.map((consumer) => consumer.opened));
      const total = 100;
      for (let n = 1; n <= total; n++) {
        await log.append([await commitEvent(ALICE, n)], Date.now());
        // A turn of the event loop between appends, so the processes' polls interleave with them.
        await new Promise((resolve) => setImmediate(resolve));
      }
      const last = start! + total;
      for (const consumer of consumers) await consumer.untilSeq(last);
      const [replayFirst, liveFirst, replaySecond, liveSecond] = consumers.map((consumer) => consumer.seqs());
      expect(replayFirst).toEqual(range(start!, last));
      expect(replaySecond).toEqual(range(start!, last));
      expect(liveFirst).toEqual(range(start! + 1, last));
      expect(liveSecond).toEqual(range(start! + 1, last));
    } finally {
      for (const consumer of consumers) {
        consumer.close();
        await consumer.closed;
      }
    }
  });

  it("counts an address's upgrades by its /64 across both processes: past the limit, 429 with Retry-After before any handshake", async () => {
    // Twenty-one addresses of one IPv6 /64, at once, alternating between the processes.
    const attempts = Array.from({ length: 21 }, (_, i) => upgradeAnswer(firehose(i % 2 ? second : first), { "X-Forwarded-For": `2001:db8:7:8:${(i + 1).toString(16)}::${i + 1}` }));
    const answers = await Promise.all(attempts);
    try {
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 101)).toHaveLength(UPGRADES_PER_MINUTE);
      expect(statuses.filter((status) => status === 429)).toHaveLength(21 - UPGRADES_PER_MINUTE);
      for (const answer of answers.filter((candidate) => candidate.status === 429)) {
        expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
        expect(Number(answer.retryAfter)).toBeLessThanOrEqual(60);
      }
      // Another /64 has its own count.
      const neighbour = await upgradeAnswer(firehose(second), { "X-Forwarded-For": "2001:db8:7:9::1" });
      expect(neighbour.status).toBe(101);
      await neighbour.close();
    } finally {
      await Promise.all(answers.map((answer) => answer.close()));
    }
  });
});
