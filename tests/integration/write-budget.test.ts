/**
 * Each account's repository write budget (docs/decisions/0045), against two server processes on one database: one token
 * wrote 300 MB of records in 20 s and the database grew 900 MB (issue 28, item 4). The budget is spent in the database
 * (LimitStore.spendWithin), so writes made at once through both processes get no more than it holds; past it, the
 * reference PDS's answer: 429 RateLimitExceeded with its RateLimit-* fields and a Retry-After, and nothing written.
 * Small budgets here (60 points and 1 MiB of records an hour) so that the test writes little; the rules and the
 * reference's defaults are security/write-budget.test.ts's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import type { HttpResult } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope, type ScopedToken, type XrpcErrorBody } from "../helpers/xrpc.ts";

const POST = "app.bsky.feed.post";
const NOTE = "com.example.note";
const POINTS_PER_HOUR = 60;
const BYTES_PER_HOUR = 2 ** 20;
const BUDGET = { ATRIUM_WRITE_POINTS_PER_HOUR: String(POINTS_PER_HOUR), ATRIUM_WRITE_BYTES_PER_HOUR: String(BYTES_PER_HOUR) };

let first: TestServer;
let second: TestServer;

beforeAll(async () => {
  first = await startTestServer(BUDGET);
  second = await startTestServer({ ...BUDGET, DATABASE_URL: first.databaseUrl });
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

/** The account's token on each process (each issuer signs its own): they spend from one budget, the account's. */
async function tokensOnBoth(): Promise<[ScopedToken, ScopedToken]> {
  return [await tokenWithScope(first, "atproto transition:generic"), await tokenWithScope(second, "atproto transition:generic")];
}

const post = (text: string) => ({ $type: POST, text, createdAt: "2026-11-28T00:00:00.000Z" });

async function recordsOf(did: string): Promise<number> {
  return Number((await rowOf<{ n: number | string }>(first.database(), sql`SELECT COUNT(*) AS "n" FROM "Record" WHERE "did" = ${did}`))!.n);
}

function expectRateLimited(result: HttpResult<unknown>, limit: number, windowSeconds: number): void {
  const body = result.body as XrpcErrorBody;
  expect({ status: result.status, error: body.error }).toEqual({ status: 429, error: "RateLimitExceeded" });
  expect(body.message).toMatch(/^Rate Limit Exceeded/);
  const reset = Number(result.headers.get("RateLimit-Reset"));
  expect({
    limit: result.headers.get("RateLimit-Limit"),
    remaining: Number(result.headers.get("RateLimit-Remaining")),
    policy: result.headers.get("RateLimit-Policy"),
  }).toEqual({ limit: String(limit), remaining: expect.any(Number), policy: `${limit};w=${windowSeconds}` });
  expect(Number(result.headers.get("RateLimit-Remaining"))).toBeLessThanOrEqual(limit);
  expect(reset * 1000).toBeGreaterThan(Date.now());
  expect(Number(result.headers.get("Retry-After"))).toBeGreaterThan(0);
  expect(result.headers.get("Access-Control-Expose-Headers")).toMatch(/RateLimit-Reset/);
}

/** A new hour for the account's budgets (the budget rows of the account deleted), so that each test starts with all of it. */
async function freshHour(did: string): Promise<void> {
  await execute(first.database(), sql`DELETE FROM "RateLimit" WHERE "key" LIKE ${"repo-write-%:" + did}`);
}

/** The bytes the database holds for the account's repository: record rows, blocks, and the firehose's events. */
async function bytesHeld(did: string): Promise<number> {
  const row = await rowOf<{ records: number | string | null; blocks: number | string | null; events: number | string | null }>(
    first.database(),
    sql`SELECT (SELECT SUM(LENGTH("value")) FROM "Record" WHERE "did" = ${did}) AS "records",
      (SELECT SUM(LENGTH("content")) FROM "RepoBlock" WHERE "did" = ${did}) AS "blocks",
      (SELECT SUM(LENGTH("body")) FROM "RepoEvent" WHERE "did" = ${did}) AS "events"`,
  );
  return Number(row!.records ?? 0) + Number(row!.blocks ?? 0) + Number(row!.events ?? 0);
}

describe("one account's write budget across two server processes", () => {
  let alice: { did: string };
  let tokens: [ScopedToken, ScopedToken];

  beforeAll(async () => {
    alice = await createAlice(first);
    tokens = await tokensOnBoth();
  });

  it("RACE: 40 creates (3 points each) at once through both processes, with a budget of 60 points: 20 are written, 20 refused with the reference's 429", async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(tokens[i % 2]!, "com.atproto.repo.createRecord", { json: { repo: alice.did, collection: POST, record: post(`write ${i}`) } })),
    );
    const statuses = results.map((result) => result.status).sort();
    expect(statuses).toEqual([...Array(20).fill(200), ...Array(20).fill(429)]);
    for (const refused of results.filter((result) => result.status === 429)) expectRateLimited(refused, POINTS_PER_HOUR, 3600);
    expect(await recordsOf(alice.did)).toBe(20);
    // Spent: a delete (1 point) is refused too, through either process, and deletes nothing.
    const written = results.find((result) => result.status === 200)!.body as { uri: string };
    const remove = await call(tokens[1], "com.atproto.repo.deleteRecord", { json: { repo: alice.did, collection: POST, rkey: written.uri.split("/").at(-1) } });
    expectRateLimited(remove, POINTS_PER_HOUR, 3600);
    expect(await recordsOf(alice.did)).toBe(20);
  });

  it("applyWrites counts each of its writes: a call that would pass the budget is refused whole, one that fits it is made", async () => {
    await freshHour(alice.did);
    const before = await recordsOf(alice.did);
    const creates = (n: number) => Array.from({ length: n }, (_, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: POST, value: post(`batch ${i}`) }));
    const tooMany = await call(tokens[0], "com.atproto.repo.applyWrites", { json: { repo: alice.did, writes: creates(21) } });
    expectRateLimited(tooMany, POINTS_PER_HOUR, 3600);
    // Refused whole: nothing was spent either.
    expect(tooMany.headers.get("RateLimit-Remaining")).toBe(String(POINTS_PER_HOUR));
    expect(await recordsOf(alice.did)).toBe(before);
    expect((await call(tokens[1], "com.atproto.repo.applyWrites", { json: { repo: alice.did, writes: creates(20) } })).status).toBe(200);
    expect(await recordsOf(alice.did)).toBe(before + 20);
  });

  it("the bytes of records are budgeted too: records of 100 kB stop at 1 MiB an hour, and the database holds a bounded multiple of it", async () => {
    await freshHour(alice.did);
    const heldBefore = await bytesHeld(alice.did);
    const statuses: number[] = [];
    let accepted = 0;
    let refusal: HttpResult<unknown> | undefined;
    for (let i = 0; i < 20 && refusal === undefined; i++) {
      // A collection with no lexicon: a post's text could not hold 100 kB (docs/decisions/0049).
      const record = { $type: NOTE, text: `${i} ${"x".repeat(100_000)}` };
      const result = await call(tokens[i % 2]!, "com.atproto.repo.createRecord", { json: { repo: alice.did, collection: NOTE, record } });
      statuses.push(result.status);
      if (result.status === 200) accepted += Buffer.byteLength(JSON.stringify(record));
      else refusal = result;
    }
    // Ten records of 100 kB fit in 1 MiB, the eleventh does not; 33 of the 60 points are left, so the bytes refused it.
    expect(statuses).toEqual([...Array(10).fill(200), 429]);
    expectRateLimited(refusal!, BYTES_PER_HOUR, 3600);
    expect(accepted).toBeLessThanOrEqual(BYTES_PER_HOUR);
    const grown = (await bytesHeld(alice.did)) - heldBefore;
    // Each record is held as its JSON row, its DAG-CBOR block and again in its #commit event (for the firehose's backfill).
    expect(grown).toBeGreaterThan(accepted);
    expect(grown).toBeLessThan(4 * BYTES_PER_HOUR);
  });
});
