import { AtriumError } from "../errors/atrium-error.ts";
import type { WriteRequest } from "../repo/repo-writer.ts";
import { DAY, HOUR, SECOND } from "../util/time.ts";
import type { LimitStore, SharedCount, Spend } from "./limit-store.ts";

/**
 * What one account may write to its repository per hour and per day (docs/decisions/0045-hardening-handles-budgets-preferences-input.md),
 * whichever token writes and in whichever process. Points as the reference PDS counts them (its `repo-write-hour` and
 * `repo-write-day` limits: a create costs 3, an update 2, a delete 1; 5000 an hour and 35000 a day by default), and,
 * beside them, the bytes of the records written: the points alone let one account write about 170 MB of records an
 * hour and 1.2 GB a day in records of the largest size (100 KiB), which the database keeps several times over
 * (record rows, blocks, the firehose's events).
 *
 * The budgets are decided in the database, all of them in one step (LimitStore.spendWithin): a write is made only
 * if every budget has room for it, and then spends from all of them; a refused write spends nothing. The windows are
 * fixed, each starting with the first write after the last one ended, as the reference's rate limiter counts.
 */
export type WriteBudgetSettings = { pointsPerHour: number; pointsPerDay: number; bytesPerHour: number; bytesPerDay: number };

export const DEFAULT_WRITE_BUDGET: WriteBudgetSettings = { pointsPerHour: 5000, pointsPerDay: 35000, bytesPerHour: 16 * 2 ** 20, bytesPerDay: 64 * 2 ** 20 };

/** The reference PDS's points per write. putRecord counts as an update there, whether it creates or replaces. */
export const WRITE_POINTS = { create: 3, update: 2, put: 2, delete: 1 } as const;

export type WriteCost = { points: number; bytes: number };

/** What a call's writes cost: their points, and the UTF-8 bytes of the records they write as JSON. */
export function writeCost(writes: readonly WriteRequest[]): WriteCost {
  let points = 0;
  let bytes = 0;
  for (const write of writes) {
    points += WRITE_POINTS[write.action];
    if (write.action !== "delete") bytes += Buffer.byteLength(JSON.stringify(write.value));
  }
  return { points, bytes };
}

type Budget = { name: string; unit: "points" | "bytes"; limit: number; windowMs: number };

export class WriteBudget {
  private readonly budgets: readonly Budget[];

  constructor(
    private readonly store: LimitStore,
    settings: WriteBudgetSettings,
    private readonly now: () => number,
  ) {
    this.budgets = [
      { name: "repo-write-hour", unit: "points", limit: settings.pointsPerHour, windowMs: HOUR },
      { name: "repo-write-day", unit: "points", limit: settings.pointsPerDay, windowMs: DAY },
      { name: "repo-write-bytes-hour", unit: "bytes", limit: settings.bytesPerHour, windowMs: HOUR },
      { name: "repo-write-bytes-day", unit: "bytes", limit: settings.bytesPerDay, windowMs: DAY },
    ];
  }

  /** Spends what `writes` cost from the account's budgets, or refuses them with the reference's 429 RateLimitExceeded. */
  async spend(did: string, writes: readonly WriteRequest[]): Promise<void> {
    const cost = writeCost(writes);
    const now = this.now();
    const budgets = this.budgets.filter((budget) => cost[budget.unit] > 0);
    const spends: Spend[] = budgets.map((budget) => ({ key: `${budget.name}:${did}`, amount: cost[budget.unit], limit: budget.limit, windowEndsAt: now + budget.windowMs }));
    const { spent, counts } = await this.store.spendWithin(spends, now);
    if (spent) return;
    // Of the budgets that refused, the one that is whole again last says when trying again is worth it.
    const refusals = budgets.map((budget, index) => ({ budget, count: counts[index]!, amount: spends[index]!.amount })).filter(({ budget, count, amount }) => count.count + amount > budget.limit);
    const latest = refusals.reduce((a, b) => (b.count.windowEndsAt > a.count.windowEndsAt ? b : a));
    throw rateLimitExceeded(latest.budget, latest.count, now);
  }
}

/**
 * The reference PDS's answer (its XRPC server's RateLimitExceededError): 429 `RateLimitExceeded`, with the refusing
 * budget in the RateLimit-Limit, -Remaining, -Reset (epoch seconds) and -Policy ("<limit>;w=<window seconds>") fields
 * and a Retry-After.
 */
function rateLimitExceeded(budget: Budget, count: SharedCount, now: number): AtriumError {
  const retryAfterSeconds = Math.max(1, Math.ceil((count.windowEndsAt - now) / SECOND));
  const period = budget.windowMs === HOUR ? "hour" : "day";
  return new AtriumError("rate_limited", `Rate Limit Exceeded: this account's writes for the ${period} are spent (${budget.limit} ${budget.unit}${budget.unit === "points" ? ": a create costs 3, an update 2, a delete 1" : " of records"}); try again in ${retryAfterSeconds} seconds`, {
    status: 429,
    xrpcName: "RateLimitExceeded",
    retryAfterSeconds,
    headers: {
      "RateLimit-Limit": String(budget.limit),
      "RateLimit-Remaining": String(Math.max(0, budget.limit - count.count)),
      "RateLimit-Reset": String(Math.floor(count.windowEndsAt / SECOND)),
      "RateLimit-Policy": `${budget.limit};w=${budget.windowMs / SECOND}`,
    },
  });
}
