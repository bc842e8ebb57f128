import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { SqlAttemptStore } from "../stores/sql-attempt-store.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import { SignInThrottle, type ClaimedAttempt } from "./sign-in-throttle.ts";

const OPTIONS = { freeAttempts: 3, baseDelayMs: SECOND, maxDelayMs: 8 * SECOND, memoryMs: 15 * MINUTE };

/** The wait an attempt was refused with (whole seconds), or undefined when it was let through. */
async function waitOf(attempt: () => Promise<unknown>): Promise<number | undefined> {
  try {
    await attempt();
    return undefined;
  } catch (error) {
    if (error instanceof TooManyRequestsError) return error.retryAfterSeconds;
    throw error;
  }
}

/**
 * The throttle's rule on a real database of each engine: attempts counted
 * before they are checked, free attempts, doubling waits, forgiveness, memory.
 * Two throttles on two handles to one database (two SQLite connections, two
 * PostgreSQL pools) stand for two server processes.
 */
describe.each(ENGINES)("SignInThrottle on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let now: number;

  /** A throttle as the `process`-th server process would have it (0: on the suite's own handle). */
  const throttle = (process = 0) => {
    const db = process === 0 ? shared.db : shared.others(process)[process - 1]!;
    return new SignInThrottle(new SqlAttemptStore(db), OPTIONS, () => now);
  };

  beforeEach(() => {
    now = 1_800_000_000_000;
  });

  it("lets exactly the free attempts through at once, then each further one waits twice as long as the last", async () => {
    const t = throttle();
    const account = { account: "did:plc:alice" };
    for (let i = 0; i < 3; i++) expect(await waitOf(() => t.claim(account, "10.0.0.1"))).toBeUndefined();
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBe(1);
    now += SECOND;
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBe(2);
    now += 2 * SECOND;
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBe(4);
    // Capped at maxDelayMs.
    for (const step of [4, 8, 8]) {
      now += step * SECOND;
      expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    }
    expect(await waitOf(() => t.claim(account, "10.0.0.2"))).toBe(8);
  });

  it("a refused attempt counts nothing, so waiting it out is enough", async () => {
    const t = throttle();
    const typed = { typed: "nobody.test" };
    for (let i = 0; i < 3; i++) await t.claim(typed, undefined);
    for (let i = 0; i < 10; i++) expect(await waitOf(() => t.claim(typed, undefined))).toBe(1);
    now += SECOND;
    expect(await waitOf(() => t.claim(typed, undefined))).toBeUndefined();
  });

  it("counts per account and per address: one address guessing many accounts waits too (after four times the free attempts)", async () => {
    const t = throttle();
    for (let i = 0; i < 12; i++) await t.claim({ typed: `nobody-${i}.test` }, "10.0.0.9");
    expect(await waitOf(() => t.claim({ typed: "nobody-12.test" }, "10.0.0.9"))).toBe(1);
    // Another address is not held up by this one.
    expect(await waitOf(() => t.claim({ typed: "nobody-3.test" }, "10.0.0.10"))).toBeUndefined();
  });

  it("a success hands its own attempt back; earlier failures still count", async () => {
    const t = throttle();
    const account = { account: "did:plc:bob" };
    await t.claim(account, "10.0.0.1");
    await t.claim(account, "10.0.0.1");
    const success: ClaimedAttempt = await t.claim(account, "10.0.0.1");
    await t.succeeded(success);
    // Two failures remain: one more free attempt, then waiting.
    await t.claim(account, "10.0.0.1");
    expect(await waitOf(() => t.claim(account, "10.0.0.1"))).toBe(1);
  });

  it("forgets attempts once memoryMs has passed since the latest", async () => {
    const t = throttle();
    const account = { account: "did:plc:carol" };
    for (let i = 0; i < 3; i++) await t.claim(account, undefined);
    now += 15 * MINUTE;
    for (let i = 0; i < 3; i++) expect(await waitOf(() => t.claim(account, undefined))).toBeUndefined();
  });

  it("two processes on one database share the counters: together they get the free attempts once", async () => {
    const [first, second] = [throttle(1), throttle(2)];
    const account = { account: "did:plc:dave" };
    const outcomes = [];
    for (let i = 0; i < 10; i++) outcomes.push(await waitOf(() => (i % 2 ? first : second).claim(account, undefined)));
    expect(outcomes.filter((wait) => wait === undefined)).toHaveLength(3);
  });

  it("RACE: 30 attempts at once from three processes: exactly the free attempts get through", async () => {
    const throttles = [throttle(1), throttle(2), throttle(3)];
    const account = { account: "did:plc:eve" };
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => waitOf(() => throttles[i % 3]!.claim(account, `10.0.1.${i}`))));
    expect(outcomes.filter((wait) => wait === undefined)).toHaveLength(3);
    // Every refused attempt was refused with the first wait: nothing was counted twice or lost.
    expect(outcomes.filter((wait) => wait === 1)).toHaveLength(27);
  });

  describe("a password sign-in: visible refusals only from what was typed and the address (docs/decisions/0023a)", () => {
    it("the account's counter caps quietly: after the handle's free attempts, its email is capped without a refusal, a stranger's email is not", async () => {
      const t = throttle();
      const did = "did:plc:gwen";
      for (let i = 0; i < 3; i++) await t.failed((await t.claimPassword("gwen.test", did, `10.0.2.${i}`)).attempt);
      // The handle itself waits visibly (its own counter, keyed on what was typed).
      expect(await waitOf(() => t.claimPassword("gwen.test", did, "10.0.2.9"))).toBe(1);
      // The account's email: no refusal, but capped (its password must not be checked).
      const email = await t.claimPassword("gwen@example.com", did, "10.0.2.10");
      expect(email.capped).toBe(true);
      // Another email, naming nobody: no refusal either, and not capped.
      const stranger = await t.claimPassword("someone@example.com", undefined, "10.0.2.11");
      expect(stranger.capped).toBe(false);
      // Once the wait is over, the account is checked again.
      now += SECOND;
      expect((await t.claimPassword("GWEN@example.com", did, "10.0.2.12")).capped).toBe(false);
    });

    it("RACE: 30 attempts at once under ten spellings, from three processes: exactly the free attempts are checked, none refused", async () => {
      const throttles = [throttle(1), throttle(2), throttle(3)];
      const did = "did:plc:hana";
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => throttles[i % 3]!.claimPassword(`alias-${i % 10}`, did, `10.0.3.${i}`)));
      expect(outcomes.filter((outcome) => !outcome.capped)).toHaveLength(3);
    });

    it("a capped attempt still counts on what was typed and the address", async () => {
      const t = throttle();
      const did = "did:plc:ivan";
      for (let i = 0; i < 3; i++) await t.failed((await t.claimPassword(`ivan-${i}.test`, did, `10.0.4.${i}`)).attempt);
      for (let i = 0; i < 3; i++) {
        const capped = await t.claimPassword("ivan@example.com", did, "10.0.4.9");
        expect(capped.capped).toBe(true);
        await t.failed(capped.attempt);
      }
      expect(await waitOf(() => t.claimPassword("ivan@example.com", did, "10.0.4.10"))).toBe(1);
    });
  });

  describe("what a success and a failure leave behind", () => {
    it("successes do not prolong the memory of earlier failures", async () => {
      const t = throttle();
      const account = { account: "did:plc:erin" };
      for (let i = 0; i < 3; i++) await t.failed(await t.claim(account, undefined));
      // Ten minutes of correct sign-ins, then the failures are forgotten 15 minutes after the last failure.
      for (let minute = 1; minute <= 10; minute++) {
        now += MINUTE;
        await t.succeeded(await t.claim(account, undefined));
      }
      now += 5 * MINUTE;
      for (let i = 0; i < 3; i++) await expect(t.claim(account, undefined)).resolves.toBeDefined();
    });

    it("a known device and a signed-in session count on their own, never on the account or the address", async () => {
      const t = throttle();
      for (let i = 0; i < 3; i++) await t.failed(await t.claim({ account: "did:plc:finn" }, "10.0.0.1"));
      await expect(t.claim({ account: "did:plc:finn" }, "10.0.0.1")).rejects.toThrow(TooManyRequestsError);
      await expect(t.claim({ device: { account: "did:plc:finn", id: "browser-1" } }, "10.0.0.1")).resolves.toBeDefined();
      await expect(t.claim({ session: "session-hash" }, undefined)).resolves.toBeDefined();
    });
  });
});
