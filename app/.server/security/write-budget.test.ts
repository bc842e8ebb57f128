import { describe, expect, it } from "vitest";
import { rowsOf } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { sql } from "../db/sql.ts";
import type { WriteRequest } from "../repo/repo-writer.ts";
import { SqlLimitStore } from "../stores/sql-limit-store.ts";
import { DAY, HOUR } from "../util/time.ts";
import { DEFAULT_WRITE_BUDGET, WriteBudget, writeCost, type WriteBudgetSettings } from "./write-budget.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const T = 1_800_000_000_000;
const POST = "app.bsky.feed.post";

const create = (text = "hi"): WriteRequest => ({ action: "create", collection: POST, rkey: "3kaaaaaaaaaaa", value: { $type: POST, text } });
const update = (text = "hi"): WriteRequest => ({ action: "update", collection: POST, rkey: "3kaaaaaaaaaaa", value: { $type: POST, text } });
const put = (text = "hi"): WriteRequest => ({ action: "put", collection: POST, rkey: "3kaaaaaaaaaaa", value: { $type: POST, text } });
const remove = (): WriteRequest => ({ action: "delete", collection: POST, rkey: "3kaaaaaaaaaaa" });

async function refusal(spending: Promise<void>): Promise<AtriumError | "spent"> {
  try {
    await spending;
    return "spent";
  } catch (error) {
    if (error instanceof AtriumError) return error;
    throw error;
  }
}

describe("what a write costs (the reference PDS's points, and the records' bytes)", () => {
  it("a create costs 3 points, an update or a put 2, a delete 1; bytes are the records' JSON in UTF-8", () => {
    expect(writeCost([create(), update(), put(), remove()])).toEqual({ points: 8, bytes: 3 * Buffer.byteLength(JSON.stringify({ $type: POST, text: "hi" })) });
    expect(writeCost([remove(), remove()])).toEqual({ points: 2, bytes: 0 });
    expect(writeCost([create("é日😀")]).bytes).toBe(Buffer.byteLength(`{"$type":"${POST}","text":"é日😀"}`));
  });

  it("defaults to the reference's 5000 points an hour and 35000 a day, beside 16 MiB and 64 MiB of records", () => {
    expect(DEFAULT_WRITE_BUDGET).toEqual({ pointsPerHour: 5000, pointsPerDay: 35000, bytesPerHour: 16 * 2 ** 20, bytesPerDay: 64 * 2 ** 20 });
  });
});

describe("WriteBudget, decided by the shared counters (SQLite here; both engines race in sql-limit-store.test.ts)", () => {
  const shared = useSharedDatabase("sqlite");
  const clock = { now: T };
  const budget = (settings: Partial<WriteBudgetSettings> = {}) => new WriteBudget(new SqlLimitStore(shared.db), { ...DEFAULT_WRITE_BUDGET, ...settings }, () => clock.now);

  it("with the defaults, 8 applyWrites of 200 creates (4800 points) are made and the 9th is refused with the reference's 429 and headers", async () => {
    clock.now = T;
    const writes = budget();
    const batch = Array.from({ length: 200 }, () => create());
    for (let i = 0; i < 8; i++) await writes.spend(ALICE, batch);
    clock.now = T + 10 * 60_000;
    const refused = await refusal(writes.spend(ALICE, batch));
    expect(refused).toMatchObject({ status: 429, xrpcName: "RateLimitExceeded", retryAfterSeconds: 50 * 60 });
    expect((refused as AtriumError).message).toMatch(/^Rate Limit Exceeded: this account's writes for the hour are spent \(5000 points/);
    expect((refused as AtriumError).headers).toEqual({
      "RateLimit-Limit": "5000",
      "RateLimit-Remaining": "200",
      "RateLimit-Reset": String((T + HOUR) / 1000),
      "RateLimit-Policy": "5000;w=3600",
    });
    // What is left still goes: 66 creates (198 points), then not one more point's worth of creates.
    await writes.spend(ALICE, Array.from({ length: 66 }, () => create()));
    expect(await refusal(writes.spend(ALICE, [create()]))).toMatchObject({ status: 429 });
    expect(await refusal(writes.spend(ALICE, [remove(), remove()]))).toBe("spent");
    // Another account's budget is its own.
    expect(await refusal(writes.spend(BOB, batch))).toBe("spent");
  });

  it("the hour's budget is whole again an hour after its first write; the day's holds across the hours", async () => {
    clock.now = T;
    const writes = budget({ pointsPerHour: 30, pointsPerDay: 45 });
    for (let i = 0; i < 10; i++) await writes.spend(ALICE, [create()]);
    expect(await refusal(writes.spend(ALICE, [create()]))).toMatchObject({ headers: { "RateLimit-Policy": "30;w=3600" } });
    clock.now = T + HOUR - 1;
    expect(await refusal(writes.spend(ALICE, [remove()]))).toMatchObject({ status: 429 });
    clock.now = T + HOUR;
    for (let i = 0; i < 5; i++) await writes.spend(ALICE, [create()]);
    // 45 points today: the hour has room (15 of 30), the day has none; the day says when to try again.
    const refused = await refusal(writes.spend(ALICE, [create()]));
    expect(refused).toMatchObject({ retryAfterSeconds: (DAY - HOUR) / 1000, headers: { "RateLimit-Limit": "45", "RateLimit-Remaining": "0", "RateLimit-Policy": "45;w=86400" } });
    expect((refused as AtriumError).message).toMatch(/for the day are spent/);
    clock.now = T + DAY;
    expect(await refusal(writes.spend(ALICE, [create()]))).toBe("spent");
  });

  it("the records' bytes are budgeted beside the points: a write that fits the points but not the bytes is refused, spending neither", async () => {
    clock.now = T;
    const writes = budget({ bytesPerHour: 2 ** 20 });
    const big = create("x".repeat(100_000));
    const bigBytes = writeCost([big]).bytes;
    for (let i = 0; i < 10; i++) await writes.spend(ALICE, [big]);
    const refused = await refusal(writes.spend(ALICE, [big]));
    expect(refused).toMatchObject({ status: 429, headers: { "RateLimit-Limit": String(2 ** 20), "RateLimit-Policy": `${2 ** 20};w=3600` } });
    expect((refused as AtriumError).message).toMatch(/1048576 bytes of records/);
    // Deletes write no bytes: they still go, on their points.
    expect(await refusal(writes.spend(ALICE, [remove()]))).toBe("spent");
    // The refused write spent nothing: the points are the ten creates' and the delete's, the bytes the ten records'.
    const counted = await rowsOf<{ key: string; count: number }>(shared.db, sql`SELECT "key", "count" FROM "RateLimit" WHERE "key" LIKE 'repo-write-%' ORDER BY "key"`);
    expect(counted).toEqual([
      { key: `repo-write-bytes-day:${ALICE}`, count: 10 * bigBytes },
      { key: `repo-write-bytes-hour:${ALICE}`, count: 10 * bigBytes },
      { key: `repo-write-day:${ALICE}`, count: 31 },
      { key: `repo-write-hour:${ALICE}`, count: 31 },
    ]);
  });
});
