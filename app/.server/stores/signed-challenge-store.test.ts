import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { MINUTE } from "../util/time.ts";
import { challengeMacKey, SignedChallengeStore } from "./signed-challenge-store.ts";
import { SqlReplayStore } from "./sql-replay-store.ts";

const LIFETIME = 5 * MINUTE;
const REQUEST = { requestIdHash: "request-a" };
const SECRET = "a cookie secret of at least thirty-two characters";

/** The challenge with one byte changed at `index`. */
function flipped(challenge: string, index: number): string {
  const bytes = Buffer.from(challenge, "base64url");
  bytes[index] = (bytes[index] ?? 0) ^ 0x01;
  return bytes.toString("base64url");
}

/** Signed WebAuthn challenges (docs/decisions/0012), spent through the replay store of each engine. */
describe.each(ENGINES)("SignedChallengeStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let clock: number;
  const now = () => clock;
  let store: SignedChallengeStore;

  beforeEach(() => {
    clock = 1_800_000_000_000;
    store = new SignedChallengeStore(challengeMacKey(SECRET), new SqlReplayStore(shared.db, now), now);
  });

  const rows = () => countRows(shared.db, "ReplayRecord");

  it("issues 56-byte challenges with 16 random bytes and writes nothing", async () => {
    const issued = Array.from({ length: 100 }, () => store.issue("authenticate", {}, LIFETIME));
    for (const challenge of issued) expect(Buffer.from(challenge, "base64url")).toHaveLength(56);
    expect(new Set(issued).size).toBe(100);
    // Two challenges issued in the same millisecond differ only in their random part and MAC.
    const [a, b] = issued.map((challenge) => Buffer.from(challenge, "base64url"));
    expect(a!.subarray(8, 24).equals(b!.subarray(8, 24))).toBe(false);
    expect(await rows()).toBe(0);
  });

  it("spends a challenge exactly once, with one replay record that outlives its expiry", async () => {
    const challenge = store.issue("authenticate", REQUEST, LIFETIME);
    expect(await store.consume(challenge, "authenticate", REQUEST)).toBe(true);
    expect(await store.consume(challenge, "authenticate", REQUEST)).toBe(false);
    expect(await rows()).toBe(1);
    const { expiresAt } = (await rowOf<{ expiresAt: number }>(shared.db, sql`SELECT "expiresAt" FROM "ReplayRecord"`))!;
    expect(expiresAt).toBeGreaterThan(clock + LIFETIME);
    // Still refused after its expiry, when the record could be taken over: expiry refuses it first.
    clock += LIFETIME + 2 * MINUTE;
    expect(await store.consume(challenge, "authenticate", REQUEST)).toBe(false);
  });

  it("refuses another purpose or binding, and such a refusal does not spend it", async () => {
    const challenge = store.issue("authenticate", REQUEST, LIFETIME);
    expect(await store.consume(challenge, "register", REQUEST)).toBe(false);
    expect(await store.consume(challenge, "authenticate", {})).toBe(false);
    expect(await store.consume(challenge, "authenticate", { requestIdHash: "request-b" })).toBe(false);
    expect(await store.consume(challenge, "authenticate", { ...REQUEST, accountDid: "did:plc:alice" })).toBe(false);
    const registration = store.issue("register", { accountDid: "did:plc:alice" }, LIFETIME);
    expect(await store.consume(registration, "register", { accountDid: "did:plc:bob" })).toBe(false);
    expect(await store.consume(registration, "register", { requestIdHash: "did:plc:alice" })).toBe(false);
    expect(await store.consume(registration, "authenticate", { accountDid: "did:plc:alice" })).toBe(false);
    const reauthentication = store.issue("authenticate", { sessionIdHash: "session-a" }, LIFETIME);
    expect(await store.consume(reauthentication, "authenticate", { sessionIdHash: "session-b" })).toBe(false);
    expect(await store.consume(reauthentication, "authenticate", {})).toBe(false);
    expect(await store.consume(reauthentication, "authenticate", { requestIdHash: "session-a" })).toBe(false);
    expect(await rows()).toBe(0);
    expect(await store.consume(challenge, "authenticate", REQUEST)).toBe(true);
    expect(await store.consume(registration, "register", { accountDid: "did:plc:alice" })).toBe(true);
    expect(await store.consume(reauthentication, "authenticate", { sessionIdHash: "session-a" })).toBe(true);
  });

  it("accepts a challenge until the last millisecond of its lifetime, and refuses it from its expiry on", async () => {
    const early = store.issue("authenticate", {}, LIFETIME);
    const late = store.issue("authenticate", {}, LIFETIME);
    clock += LIFETIME - 1;
    expect(await store.consume(early, "authenticate", {})).toBe(true);
    clock += 1;
    expect(await store.consume(late, "authenticate", {})).toBe(false);
    expect(await rows()).toBe(1);
  });

  it("refuses altered, forged and malformed challenges without writing", async () => {
    const challenge = store.issue("authenticate", {}, LIFETIME);
    const altered = [
      flipped(challenge, 0), // version
      flipped(challenge, 1), // purpose
      flipped(challenge, 7), // expiry
      flipped(challenge, 2), // expiry, far into the future
      flipped(challenge, 12), // random part
      flipped(challenge, 40), // MAC
      flipped(challenge, 55), // MAC
    ];
    const bytes = Buffer.from(challenge, "base64url");
    const malformed = [
      "",
      "bm90LWlzc3VlZA",
      bytes.subarray(0, 55).toString("base64url"),
      Buffer.concat([bytes, Buffer.from([0])]).toString("base64url"),
      `${challenge}==`,
      bytes.toString("base64"),
      `${challenge.slice(0, -1)}.`,
      "A".repeat(10_000),
    ];
    const otherKey = new SignedChallengeStore(challengeMacKey("another secret, also thirty-two characters long"), new SqlReplayStore(shared.db, now), now);
    const forged = [otherKey.issue("authenticate", {}, LIFETIME)];
    for (const candidate of [...altered, ...malformed, ...forged]) expect(await store.consume(candidate, "authenticate", {}), candidate).toBe(false);
    expect(await rows()).toBe(0);
    expect(await store.consume(challenge, "authenticate", {})).toBe(true);
  });

  it(`has exactly one winner when 40 consumptions of one challenge run ${raceOn(engine, 4)}`, async () => {
    // The same MAC key on every server process; each process's replay store on its own connection or pool.
    const stores = shared.others(4).map((db) => new SignedChallengeStore(challengeMacKey(SECRET), new SqlReplayStore(db, now), now));
    const challenge = store.issue("authenticate", REQUEST, LIFETIME);
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.consume(challenge, "authenticate", REQUEST)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await rows()).toBe(1);
  });
});

describe("challengeMacKey", () => {
  it("the MAC key is derived from the cookie secret, never the secret itself", () => {
    const secret = SECRET;
    expect(challengeMacKey(secret)).toHaveLength(32);
    expect(challengeMacKey(secret).equals(Buffer.from(secret).subarray(0, 32))).toBe(false);
    expect(challengeMacKey(secret).equals(challengeMacKey(`${secret}!`))).toBe(false);
  });
});
