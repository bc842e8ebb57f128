import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute } from "../../../tests/helpers/databases.ts";
import { accountFor, countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { CredentialProof, StoredSession } from "../accounts/session-store.ts";
import { at, sql } from "../db/sql.ts";
import { SqlAccountStore } from "./sql-account-store.ts";
import { SqlSessionStore } from "./sql-session-store.ts";

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";

function session(idHash: string, overrides: Partial<StoredSession> = {}): StoredSession {
  return {
    idHash,
    accountDid: ALICE,
    userAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
    ipAddress: "192.0.2.1",
    createdAt: NOW,
    lastSeenAt: NOW,
    expiresAt: NOW + 30 * DAY,
    authenticatedAt: null,
    staySignedIn: false,
    deviceHash: "device-hash",
    ...overrides,
  };
}

/** Browser sessions on each engine: the account joined in, lazy expiry, signing other browsers out. */
describe.each(ENGINES)("SqlSessionStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlSessionStore;

  /** A session made on the password the fixtures give every account. */
  const create = (stored: StoredSession) => store.create(stored, { passwordHash: accountFor(stored.accountDid).passwordHash });

  beforeEach(async () => {
    store = new SqlSessionStore(shared.db);
    await insertAccount(shared.db, ALICE, { emailConfirmedAt: NOW - DAY, createdAt: NOW - 2 * DAY });
    await insertAccount(shared.db, BOB);
  });

  it("finds a session with its account joined in, every field as stored, but never the password hash or the signing key", async () => {
    const stored = session("s1", { authenticatedAt: NOW });
    await create(stored);
    await create(session("s2", { userAgent: null, ipAddress: null }));
    expect(await store.find("s1", NOW)).toEqual({
      session: stored,
      account: {
        did: ALICE,
        handle: "alice.test",
        email: "alice@example.com",
        emailConfirmedAt: NOW - DAY,
        createdAt: NOW - 2 * DAY,
      },
    });
    expect((await store.find("s2", NOW))?.session).toEqual(session("s2", { userAgent: null, ipAddress: null }));
    expect(await store.find("unknown", NOW)).toBeUndefined();
  });

  it("an expired session is absent and its row deleted (lazy expiry)", async () => {
    await create(session("s1"));
    expect(await store.find("s1", NOW + 30 * DAY - 1)).toBeDefined();
    expect(await store.find("s1", NOW + 30 * DAY)).toBeUndefined();
    expect(await countRows(shared.db, "BrowserSession")).toBe(0);
  });

  it("creating a session removes a batch of expired ones", async () => {
    for (let i = 0; i < 25; i++) await create(session(`old-${i}`, { createdAt: NOW - 40 * DAY, expiresAt: NOW - DAY }));
    await create(session("fresh"));
    expect(await countRows(shared.db, "BrowserSession")).toBe(6);
  });

  it("touch and markAuthenticated record their times", async () => {
    await create(session("s1"));
    await store.touch("s1", NOW + 60_000);
    await store.markAuthenticated("s1", NOW + 120_000);
    expect((await store.find("s1", NOW + 120_000))?.session).toMatchObject({ lastSeenAt: NOW + 60_000, authenticatedAt: NOW + 120_000 });
  });

  it("lists an account's live sessions, most recently seen first", async () => {
    await create(session("old", { lastSeenAt: NOW - DAY }));
    await create(session("recent", { lastSeenAt: NOW }));
    await create(session("expired", { expiresAt: NOW }));
    await create(session("bobs", { accountDid: BOB }));
    expect((await store.listLive(ALICE, NOW)).map((live) => live.idHash)).toEqual(["recent", "old"]);
  });

  it("deletes one session; with an account given, only that account's", async () => {
    await create(session("s1"));
    await create(session("s2"));
    await store.delete("s1", BOB);
    expect(await store.find("s1", NOW)).toBeDefined();
    await store.delete("s1", ALICE);
    expect(await store.find("s1", NOW)).toBeUndefined();
    await store.delete("s2");
    expect(await store.find("s2", NOW)).toBeUndefined();
  });

  it("deleteOthers ends every session of the account but the one kept, and says how many", async () => {
    for (const id of ["keep", "other-1", "other-2"]) await create(session(id));
    await create(session("bobs", { accountDid: BOB }));
    expect(await store.deleteOthers(ALICE, "keep")).toBe(2);
    expect((await store.listLive(ALICE, NOW)).map((live) => live.idHash)).toEqual(["keep"]);
    expect(await store.find("bobs", NOW)).toBeDefined();
    expect(await store.deleteOthers(ALICE, "keep")).toBe(0);
  });

  it("a session goes with its account", async () => {
    await create(session("s1"));
    await execute(shared.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
    expect(await store.find("s1", NOW)).toBeUndefined();
  });
  it("stores a session only while what the sign-in proved holds: the same password hash, a passkey still registered", async () => {
    const passwordHash = accountFor(ALICE).passwordHash;
    expect(await store.create(session("old-hash"), { passwordHash: "scrypt$16384$8$1$c2FsdA$b2xk" })).toBe(false);
    expect(await store.create(session("bob-hash"), { passwordHash: "scrypt$someone-else" })).toBe(false);
    expect(await store.create(session("passkey-gone"), { passkey: "credential-removed" })).toBe(false);
    await execute(
      shared.db,
      sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "deviceType", "backedUp", "createdAt")
        VALUES ('credential-bob', ${BOB}, 'Phone', ${new Uint8Array([1])}, 0, 'multiDevice', ${true}, ${at(NOW)})`,
    );
    // Another account's passkey proves nothing for Alice.
    expect(await store.create(session("bobs-passkey"), { passkey: "credential-bob" })).toBe(false);
    expect(await countRows(shared.db, "BrowserSession")).toBe(0);
    expect(await store.create(session("right"), { passwordHash })).toBe(true);
    expect(await store.create(session("bob-passkey", { accountDid: BOB }), { passkey: "credential-bob" })).toBe(true);
  });

  it("RACE: sign-ins on the old password against a password change that signs the others out, from four processes: none outlives the change", async () => {
    const oldHash: CredentialProof = { passwordHash: accountFor(ALICE).passwordHash };
    const accounts = shared.others(4).map((db) => ({ sessions: new SqlSessionStore(db), accounts: new SqlAccountStore(db) }));
    await create(session("owner"));
    const signIns = Array.from({ length: 40 }, (_, i) => accounts[i % 4]!.sessions.create(session(`thief-${i}`), oldHash));
    const change = accounts[1]!.accounts.setPasswordHash(ALICE, "scrypt$16384$8$1$c2FsdA$bmV3", NOW, { keepSessionIdHash: "owner" });
    await Promise.all([...signIns, change]);
    // Each sign-in came either before the change (and was signed out by it) or after it (and stored nothing).
    expect((await store.listLive(ALICE, NOW)).map((live) => live.idHash)).toEqual(["owner"]);
  });
});
