import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReplayStore } from "../../oauth/replay/replay-store.ts";

/** A replay store under test, empty, on the contract's clock; `kept` counts the keys it holds (rows or map entries). */
export type ReplayStoreSubject = {
  store: ReplayStore;
  kept(): Promise<number>;
  close(): Promise<void>;
};

/**
 * The replay store's contract (single use, lazy expiry, namespaces apart), run on each SQL engine and on the memory
 * store the managers' unit tests use. The SQL store's own ways (hashed keys, batch cleanup, a bounded table) and races
 * between connections stay in sql-replay-store.test.ts: one memory store has no second connection to race with.
 */
export function replayStoreContract(name: string, open: (now: () => number) => Promise<ReplayStoreSubject>): void {
  describe(name, () => {
    let subject: ReplayStoreSubject;
    let store: ReplayStore;
    let clock: number;
    const now = () => clock;

    beforeEach(async () => {
      clock = 1_700_000_000_000;
      subject = await open(now);
      store = subject.store;
    });
    afterEach(() => subject.close());

    it("records a key once: true, then false while it is live", async () => {
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
      clock += 59_000;
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
      expect(await subject.kept()).toBe(1);
    });

    it("keeps namespaces apart", async () => {
      expect(await store.recordUnique("dpop:a", "same", clock + 60_000)).toBe(true);
      expect(await store.recordUnique("dpop:b", "same", clock + 60_000)).toBe(true);
      expect(await store.recordUnique("client-assertion:a", "same", clock + 60_000)).toBe(true);
      // No ambiguity from concatenation.
      expect(await store.recordUnique("dpop:ab", "c", clock + 60_000)).toBe(true);
      expect(await store.recordUnique("dpop:a", "bc", clock + 60_000)).toBe(true);
      expect(await subject.kept()).toBe(5);
    });

    it("records a long key once, like any other", async () => {
      const longKey = "k".repeat(10_000);
      expect(await store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(true);
      expect(await store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(false);
    });

    it("lets an expired key be recorded again", async () => {
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
      clock += 60_000; // expiresAt <= now: expired
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
      // And it is live again under its new expiry.
      expect(await store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
      expect(await subject.kept()).toBe(1);
    });

    it("keeps every live key while others are recorded (no cleanup takes a live one)", async () => {
      for (let i = 0; i < 30; i++) expect(await store.recordUnique("ns", `live-${i}`, clock + 60_000)).toBe(true);
      expect(await subject.kept()).toBe(30);
      for (let i = 0; i < 30; i++) expect(await store.recordUnique("ns", `live-${i}`, clock + 60_000)).toBe(false);
    });
  });
}
