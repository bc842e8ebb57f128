import { decode } from "@atproto/lex-cbor";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { gatedRace } from "../../../tests/helpers/postgres.ts";
import { accountWithRepository, repositoriesOn, type Clock } from "../../../tests/helpers/repositories.ts";
import { countOf, issuedTokens, newCode, newGrant, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { AccountStatusManager } from "../accounts/account-status.ts";
import type { StoredSession } from "../accounts/session-store.ts";
import type { StoredPasswordSession } from "../accounts/password-session-store.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { sql, type Database } from "../db/sql.ts";
import { hasCode } from "../errors/atrium-error.ts";
import type { WriteRequest } from "../repo/repo-writer.ts";
import { SqlEventLog } from "./sql-event-log.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";
import { SqlPasswordSessionStore } from "./sql-password-session-store.ts";
import { SqlSessionStore } from "./sql-session-store.ts";
import { SqlTakedownStore } from "./sql-takedown-store.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
/** A collection this server has no lexicon for: these tests are about takedowns, not lexicons. */
const NOTE = "com.example.note";
const create = (rkey: string): WriteRequest => ({ action: "create", collection: NOTE, rkey, value: { $type: NOTE, text: rkey } });
/** The password hash accountWithRepository's accounts have (store-fixtures.ts accountFor). */
const PASSWORD_HASH = "scrypt$16384$8$1$c2FsdA$aGFzaA";

/** A write's or a sign-in's outcome: "ok", or the code it was refused with. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    const result = await promise;
    return result === false ? "refused" : "ok";
  } catch (error) {
    if (hasCode(error, "AccountTakedown", "AccountDeactivated")) return error.code;
    throw error;
  }
}

/** A password session (createSession) of the account's own password, with its first tokens' hashes. */
function passwordSession(id: string, did: string, now: number): [StoredPasswordSession, { passwordHash: string }, { accessHash: string; accessExpiresAt: number; refreshHash: string; refreshExpiresAt: number }] {
  const session: StoredPasswordSession = { id, accountDid: did, appPasswordId: null, scope: "com.atproto.access", userAgent: null, createdAt: now, lastUsedAt: now, expiresAt: now + 3600_000 };
  return [session, { passwordHash: PASSWORD_HASH }, { accessHash: `access-${id}`, accessExpiresAt: now + 60_000, refreshHash: `refresh-${id}`, refreshExpiresAt: now + 3600_000 }];
}

function browserSession(id: string, did: string, now: number): StoredSession {
  return { idHash: id, accountDid: did, userAgent: null, ipAddress: null, createdAt: now, lastSeenAt: now, expiresAt: now + 3600_000, authenticatedAt: now, staySignedIn: false, deviceHash: null };
}

/**
 * Takedowns on each engine (docs/decisions/0051): an account's is one transaction with its #account event and the
 * end of every session, code and grant of the account, under the locks every sign-in and commit take; a record's and
 * a blob's take them out of what is served.
 */
describe.each(ENGINES)("takedowns (SqlTakedownStore) on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  const handles: Record<string, string> = { [ALICE]: "alice.test", [BOB]: "bob.test" };
  const on = (db: Database) => {
    const { store, writer } = repositoriesOn(db, clock);
    const takedowns = new SqlTakedownStore(db, 3600_000);
    return { store, writer, takedowns, sessions: new SqlSessionStore(db), grants: new SqlGrantStore(db), status: new AccountStatusManager(store, takedowns, async (did) => handles[did], () => clock.now) };
  };
  const main = () => on(shared.db);
  const events = async () => (await new SqlEventLog(shared.db, 3600_000).after(0, { events: 10_000, bytes: 2 ** 30 })).filter((event) => event.did === ALICE);
  const COUNTS = {
    BrowserSession: (did: string) => sql`SELECT COUNT(*) AS "n" FROM "BrowserSession" WHERE "accountDid" = ${did}`,
    Grant: (did: string) => sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "accountDid" = ${did}`,
    AuthorizationCode: (did: string) => sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${did}`,
    AccessToken: (did: string) => sql`SELECT COUNT(*) AS "n" FROM "AccessToken" a JOIN "Grant" g ON g."id" = a."grantId" WHERE g."accountDid" = ${did}`,
  };
  const count = (table: keyof typeof COUNTS, did = ALICE) => countOf(shared.db, COUNTS[table](did));

  beforeEach(async () => {
    clock.now = 1_800_000_000_000;
    await accountWithRepository(shared.db, ALICE, clock);
    await accountWithRepository(shared.db, BOB, clock);
  });

  /** Alice signed in in a browser, with an app's grant (and its tokens) and an unredeemed code; Bob the same. */
  async function signedInEverywhere(): Promise<void> {
    const { sessions, grants } = main();
    for (const did of [ALICE, BOB]) {
      const tag = did.slice(-3);
      expect(await sessions.create(browserSession(`session-${tag}`, did, clock.now), { passwordHash: PASSWORD_HASH })).toBe(true);
      await grants.insertCode(newCode(`code-${tag}`, { accountDid: did, createdAt: clock.now, expiresAt: clock.now + 60_000 }));
      await grants.insertCode(newCode(`pending-${tag}`, { accountDid: did, createdAt: clock.now, expiresAt: clock.now + 60_000 }));
      expect(await grants.redeemCode(`code-${tag}`, clock.now, newGrant(`grant-${tag}`, { accountDid: did, createdAt: clock.now }), issuedTokens(tag, clock.now))).toBe(true);
    }
  }

  it("a takedown appends #account takendown, ends every session, code and grant of the account at once, and refuses commits", async () => {
    const { status, store, writer, grants } = main();
    await signedInEverywhere();
    const before = (await events()).length;
    expect(await status.takedown(ALICE, "spam")).toEqual({ found: true, changed: true });
    expect(await status.statusOf(ALICE)).toEqual({ active: false, status: "takendown", since: clock.now, ref: "spam" });
    const added = (await events()).slice(before);
    expect(added.map((event) => event.type)).toEqual(["account"]);
    expect(decode(added[0]!.body)).toEqual({ did: ALICE, active: false, status: "takendown", time: new Date(clock.now).toISOString() });
    for (const table of ["BrowserSession", "Grant", "AuthorizationCode", "AccessToken"] as const) {
      expect(await count(table), table).toBe(0);
      // Bob keeps his.
      expect(await count(table, BOB), table).toBeGreaterThan(0);
    }
    expect(await grants.findAccessToken(`access-${ALICE.slice(-3)}`, clock.now)).toBeUndefined();
    const head = await store.head(ALICE);
    expect(await outcome(writer.write(ALICE, [create("refused")]))).toBe("AccountTakedown");
    expect(await store.head(ALICE)).toEqual(head);
    expect((await store.listRepos({ limit: 10 })).map((repo) => [repo.did, repo.state])).toEqual([
      [ALICE, "takendown"],
      [BOB, "active"],
    ]);
    // A second takedown replaces the reference and announces nothing.
    expect(await status.takedown(ALICE, "spam, again")).toEqual({ found: true, changed: false });
    expect((await events()).length).toBe(before + 1);
    expect(await status.statusOf(ALICE)).toMatchObject({ status: "takendown", ref: "spam, again" });
  });

  it("no session, code or token is made for a taken-down account: the sign-in's and the consent's steps refuse it", async () => {
    const { status, sessions, grants } = main();
    await status.takedown(ALICE, "abuse");
    expect(await sessions.create(browserSession("late", ALICE, clock.now), { passwordHash: PASSWORD_HASH })).toBe(false);
    expect(await outcome(grants.insertCode(newCode("late", { accountDid: ALICE, createdAt: clock.now, expiresAt: clock.now + 60_000 })))).toBe("AccountTakedown");
    expect(await count("BrowserSession")).toBe(0);
    expect(await count("AuthorizationCode")).toBe(0);
  });

  it("an untakedown appends #account with the status as it now is, and restores the account, not its sessions", async () => {
    const { status, writer } = main();
    await signedInEverywhere();
    await status.takedown(ALICE, "mistake");
    const before = (await events()).length;
    clock.now += 60_000;
    expect(await status.reverseTakedown(ALICE)).toEqual({ found: true, changed: true });
    expect(decode((await events())[before]!.body)).toEqual({ did: ALICE, active: true, time: new Date(clock.now).toISOString() });
    expect(await status.statusOf(ALICE)).toEqual({ active: true });
    expect(await count("BrowserSession")).toBe(0);
    expect(await count("Grant")).toBe(0);
    expect(await outcome(writer.write(ALICE, [create("after")]))).toBe("ok");
    // Again: nothing to take back, nothing announced.
    const now = (await events()).length;
    expect(await status.reverseTakedown(ALICE)).toEqual({ found: true, changed: false });
    expect((await events()).length).toBe(now);
  });

  it("a deactivated account taken down and restored is deactivated again; its deactivation is the operator's while taken down", async () => {
    const { status } = main();
    await status.deactivate(ALICE);
    await status.takedown(ALICE, "abuse");
    expect(await status.stateOf(ALICE)).toBe("takendown");
    expect(await outcome(status.activate(ALICE))).toBe("AccountTakedown");
    expect(await outcome(status.deactivate(ALICE))).toBe("AccountTakedown");
    const before = (await events()).length;
    await status.reverseTakedown(ALICE);
    expect(decode((await events())[before]!.body)).toMatchObject({ did: ALICE, active: false, status: "deactivated" });
    expect(await status.stateOf(ALICE)).toBe("deactivated");
  });

  it("an unknown account has nothing to take down", async () => {
    const { status } = main();
    expect(await status.takedown("did:plc:nobody", "x")).toEqual({ found: false, changed: false });
    expect(await status.reverseTakedown("did:plc:nobody")).toEqual({ found: false, changed: false });
  });

  it("a taken-down record is served by neither getRecord nor listRecords, and comes back when restored", async () => {
    const { takedowns, store, writer } = main();
    await writer.write(ALICE, [create("a"), create("b"), create("c")]);
    expect(await takedowns.changeRecordTakedown(ALICE, NOTE, "b", { ref: "illegal" })).toBe(true);
    expect(await takedowns.recordTakedown(ALICE, NOTE, "b")).toEqual({ cid: expect.any(String), ref: "illegal" });
    expect(await store.getRecord(ALICE, NOTE, "b")).toBeUndefined();
    expect((await store.listRecords(ALICE, NOTE, { limit: 10, reverse: false })).map((record) => record.rkey)).toEqual(["c", "a"]);
    // A page of one still pages through what is served.
    expect((await store.listRecords(ALICE, NOTE, { limit: 1, reverse: true, cursor: "a" })).map((record) => record.rkey)).toEqual(["c"]);
    // An update of the record keeps its takedown, as the reference's does.
    await writer.write(ALICE, [{ action: "update", collection: NOTE, rkey: "b", value: { $type: NOTE, text: "edited" } }]);
    expect(await store.getRecord(ALICE, NOTE, "b")).toBeUndefined();
    expect(await takedowns.changeRecordTakedown(ALICE, NOTE, "b", null)).toBe(true);
    expect(await store.getRecord(ALICE, NOTE, "b")).toMatchObject({ value: { text: "edited" } });
    expect(await takedowns.changeRecordTakedown(ALICE, NOTE, "missing", { ref: "x" })).toBe(false);
    expect(await takedowns.recordTakedown(ALICE, NOTE, "missing")).toBeUndefined();
  });

  it(`a takedown racing writes ${raceOn(engine, 5)}: no commit is sequenced after the #account takendown event`, async () => {
    const writers = shared.others(4).map(on);
    const takingDown = on(shared.others(5)[4]!);
    const writes = writers.flatMap((side, i) => [0, 1, 2].map((n) => outcome(side.writer.write(ALICE, [create(`w${i}-${n}`)]))));
    const [results] = await Promise.all([Promise.all(writes), takingDown.status.takedown(ALICE, "race")]);
    const log = await events();
    const takenDownAt = log.findIndex((event) => event.type === "account" && (decode(event.body) as { status?: string }).status === "takendown");
    expect(takenDownAt).toBeGreaterThan(-1);
    expect(log.slice(takenDownAt + 1).filter((event) => event.type === "commit")).toEqual([]);
    const committed = log.slice(0, takenDownAt).filter((event) => event.type === "commit").length - 1;
    expect(results.filter((result) => result === "ok").length).toBe(committed);
    expect(results.every((result) => result === "ok" || result === "AccountTakedown")).toBe(true);
    expect((await main().store.listRecords(ALICE, NOTE, { limit: 100, reverse: false })).length).toBe(committed);
  });

  it(`a takedown racing sign-ins and consents ${raceOn(engine, 6)}: no session or code of the account outlives it`, async () => {
    const sides = shared.others(5).map(on);
    const takingDown = on(shared.others(6)[5]!);
    const steps = sides.flatMap((side, i) => [
      outcome(side.sessions.create(browserSession(`race-${i}`, ALICE, clock.now), { passwordHash: PASSWORD_HASH })),
      outcome(side.grants.insertCode(newCode(`race-${i}`, { accountDid: ALICE, createdAt: clock.now, expiresAt: clock.now + 60_000 }))),
    ]);
    const [results] = await Promise.all([Promise.all(steps), takingDown.status.takedown(ALICE, "race")]);
    // Each step either landed before the takedown, which then ended it, or was refused.
    expect(results.every((result) => ["ok", "refused", "AccountTakedown"].includes(result))).toBe(true);
    expect(await count("BrowserSession")).toBe(0);
    expect(await count("AuthorizationCode")).toBe(0);
  });
});

/**
 * The same races forced into their worst order on PostgreSQL (tests/helpers/postgres.ts gatedRace): the takedown has
 * made its writes and holds its locks, not yet committed, while a commit, a sign-in or a consent of the account starts
 * on another connection. Each fails with the lock that orders it removed from the takedown or the step.
 */
describe("takedowns on postgresql: a takedown held before its COMMIT", () => {
  const shared = useSharedDatabase("postgresql");
  const clock: Clock = { now: 1_800_000_000_000 };
  const statusOn = (db: Database) => {
    const { store } = repositoriesOn(db, clock);
    return new AccountStatusManager(store, new SqlTakedownStore(db, 3600_000), async () => "alice.test", () => clock.now);
  };

  beforeEach(async () => {
    await accountWithRepository(shared.db, ALICE, clock);
  });

  /** Runs `step` once the takedown waits at its gate; the step's outcome, and whether it waited for the takedown. */
  async function againstHeldTakedown(step: () => Promise<unknown>): Promise<{ result: string; waited: boolean }> {
    const { results, secondWaited } = await gatedRace(
      shared.db as PostgresDatabase,
      (gated) => statusOn(gated).takedown(ALICE, "race"),
      () => outcome(step()),
      async () => {},
    );
    return { result: results[1], waited: secondWaited };
  }

  it("RACE (two connections): a commit that starts while the takedown is uncommitted waits, then is refused; none is sequenced after it", async () => {
    const other = repositoriesOn(shared.others(1)[0]!, clock);
    expect(await againstHeldTakedown(() => other.writer.write(ALICE, [create("late")]))).toEqual({ result: "AccountTakedown", waited: true });
    const log = (await new SqlEventLog(shared.db, 3600_000).after(0, { events: 100, bytes: 2 ** 30 })).filter((event) => event.did === ALICE);
    expect(log.at(-1)?.type).toBe("account");
    expect(await other.store.getRecord(ALICE, NOTE, "late")).toBeUndefined();
  });

  it("RACE (two connections): a sign-in that stores its session while the takedown is uncommitted waits, then stores none", async () => {
    const sessions = new SqlSessionStore(shared.others(1)[0]!);
    expect(await againstHeldTakedown(() => sessions.create(browserSession("late", ALICE, clock.now), { passwordHash: PASSWORD_HASH }))).toEqual({ result: "refused", waited: true });
    expect(await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "BrowserSession" WHERE "accountDid" = ${ALICE}`)).toBe(0);
  });

  it("RACE (two connections): a password session (createSession) stored while the takedown is uncommitted waits, then is refused", async () => {
    const sessions = new SqlPasswordSessionStore(shared.others(1)[0]!);
    expect(await againstHeldTakedown(() => sessions.create(...passwordSession("late", ALICE, clock.now)))).toEqual({ result: "AccountTakedown", waited: true });
    expect(await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "PasswordSession" WHERE "accountDid" = ${ALICE}`)).toBe(0);
  });

  it("RACE (two connections): a consent that issues its code while the takedown is uncommitted waits, then issues none", async () => {
    const grants = new SqlGrantStore(shared.others(1)[0]!);
    const code = newCode("late", { accountDid: ALICE, createdAt: clock.now, expiresAt: clock.now + 60_000 });
    expect(await againstHeldTakedown(() => grants.insertCode(code))).toEqual({ result: "AccountTakedown", waited: true });
    expect(await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${ALICE}`)).toBe(0);
  });
});
