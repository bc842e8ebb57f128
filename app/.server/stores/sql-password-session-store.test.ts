import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, raceOn, rowOf } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { accountFor, countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { StoredAppPassword } from "../accounts/app-password-store.ts";
import type { IssuedTokenHashes, RefreshStep, StoredPasswordSession } from "../accounts/password-session-store.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql } from "../db/sql.ts";
import { SqlAccountStore } from "./sql-account-store.ts";
import { SqlAppPasswordStore } from "./sql-app-password-store.ts";
import { SqlPasswordSessionStore } from "./sql-password-session-store.ts";
import { SqlRecoveryStore } from "./sql-recovery-store.ts";

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const GRACE = 2 * HOUR;
/** Alice as the answers tell her (the fixtures' account, tests/helpers/store-fixtures.ts). */
const ALICE_ACCOUNT = { handle: "alice.test", email: "alice@example.com", emailConfirmedAt: null, emailAuthFactor: false, deactivatedAt: null, takendownAt: null };

function session(id: string, overrides: Partial<StoredPasswordSession> = {}): StoredPasswordSession {
  return { id, accountDid: ALICE, appPasswordId: null, scope: "com.atproto.access", userAgent: "a bot/1.0", createdAt: NOW, lastUsedAt: NOW, expiresAt: NOW + 90 * DAY, ...overrides };
}

function tokens(tag: string, now = NOW): IssuedTokenHashes {
  return { accessHash: `access-${tag}`, accessExpiresAt: now + 2 * HOUR, refreshHash: `refresh-${tag}`, refreshExpiresAt: now + 90 * DAY };
}

function refreshStep(refresh: string, successor: string, access: string, now: number, accountDid = ALICE): RefreshStep {
  return { accountDid, refreshHash: refresh, successorHash: successor, accessHash: access, accessExpiresAt: now + 2 * HOUR, refreshExpiresAt: now + 90 * DAY, graceMs: GRACE, now };
}

function appPassword(id: string, overrides: Partial<StoredAppPassword> = {}): StoredAppPassword {
  return { id, accountDid: ALICE, name: id, passwordHash: `scrypt$hash-of-${id}`, privileged: false, createdAt: NOW, lastUsedAt: null, ...overrides };
}

/** Password sessions on each engine (docs/decisions/0047): creation on a proof that holds, refresh with its grace, what ends them. */
describe.each(ENGINES)("SqlPasswordSessionStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlPasswordSessionStore;
  let appPasswords: SqlAppPasswordStore;
  const passwordOf = (did: string) => ({ passwordHash: accountFor(did).passwordHash });

  beforeEach(async () => {
    store = new SqlPasswordSessionStore(shared.db);
    appPasswords = new SqlAppPasswordStore(shared.db);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });

  it("stores a session and its first tokens only while the proof holds: the same password hash, an app password not revoked", async () => {
    expect(await store.create(session("s1"), passwordOf(ALICE), tokens("1"))).toEqual(ALICE_ACCOUNT);
    // The operator's "Last sign-in" counts it.
    expect(await rowOf(shared.db, sql`SELECT "lastSignInAt" FROM "Account" WHERE "did" = ${ALICE}`)).toEqual({ lastSignInAt: NOW });
    expect(await store.create(session("old-hash"), { passwordHash: "scrypt$an-old-hash" }, tokens("2"))).toBeUndefined();
    expect(await store.create(session("bobs-hash"), { passwordHash: "scrypt$bobs-own" }, tokens("3"))).toBeUndefined();
    expect(await store.create(session("gone"), { appPasswordId: "app-revoked", privileged: false }, tokens("4"))).toBeUndefined();
    expect(await appPasswords.insert(appPassword("app-bobs", { accountDid: BOB }))).toBe(true);
    expect(await store.create(session("bobs-app", { appPasswordId: "app-bobs" }), { appPasswordId: "app-bobs", privileged: false }, tokens("5"))).toBeUndefined();
    expect(await appPasswords.insert(appPassword("app-alices"))).toBe(true);
    expect(await store.create(session("alices-app", { appPasswordId: "app-alices" }), { appPasswordId: "app-alices", privileged: false }, tokens("6"))).toEqual(ALICE_ACCOUNT);
    expect(await countRows(shared.db, "PasswordSession")).toBe(2);
    expect(await countRows(shared.db, "PasswordAccessToken")).toBe(2);
    expect(await countRows(shared.db, "PasswordRefreshToken")).toBe(2);
  });

  it("a taken-down account gets no session but a takedown-only one (docs/decisions/0051), whatever the credential proved", async () => {
    await execute(shared.db, sql`UPDATE "Account" SET "takendownAt" = ${at(NOW)}, "takedownRef" = 'spam' WHERE "did" = ${ALICE}`);
    await expect(store.create(session("s1"), passwordOf(ALICE), tokens("1"))).rejects.toMatchObject({ xrpcName: "AccountTakedown" });
    expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    expect(await store.create(session("s2", { scope: "com.atproto.takendown" }), passwordOf(ALICE), tokens("2"))).toEqual({ ...ALICE_ACCOUNT, takendownAt: NOW });
    expect(await store.findAccess("access-2", NOW)).toEqual({ session: session("s2", { scope: "com.atproto.takendown" }), handle: "alice.test", accountState: "takendown" });
  });

  it("finds a live access token's session with the account's handle and status; an expired or ended one is absent", async () => {
    await store.create(session("s1"), passwordOf(ALICE), tokens("1"));
    expect(await store.findAccess("access-1", NOW + 2 * HOUR - 1)).toEqual({ session: session("s1"), handle: "alice.test", accountState: "active" });
    expect(await store.findAccess("access-1", NOW + 2 * HOUR)).toBeUndefined();
    await execute(shared.db, sql`UPDATE "Account" SET "deactivatedAt" = ${at(NOW)} WHERE "did" = ${ALICE}`);
    expect((await store.findAccess("access-1", NOW))?.accountState).toBe("deactivated");
    await execute(shared.db, sql`UPDATE "Account" SET "takendownAt" = ${at(NOW)} WHERE "did" = ${ALICE}`);
    expect((await store.findAccess("access-1", NOW))?.accountState).toBe("takendown");
    expect(await store.end(BOB, "s1")).toBe(false);
    expect(await store.end(ALICE, "s1")).toBe(true);
    expect(await store.findAccess("access-1", NOW)).toBeUndefined();
    expect(await countRows(shared.db, "PasswordAccessToken")).toBe(0);
  });

  it("a refresh spends the token, adds its successor and an access token, and slides the session; a retry within the grace gets the same successor", async () => {
    await store.create(session("s1"), passwordOf(ALICE), tokens("1"));
    const later = NOW + HOUR;
    const rotated = await store.refresh(refreshStep("refresh-1", "refresh-2", "access-2", later));
    expect(rotated).toEqual({ kind: "rotated", successorExpiresAt: later + 90 * DAY, account: ALICE_ACCOUNT, session: session("s1", { lastUsedAt: later, expiresAt: later + 90 * DAY }) });
    const spent = await rowOf<{ usedAt: unknown }>(shared.db, sql`SELECT "usedAt" FROM "PasswordRefreshToken" WHERE "tokenHash" = ${"refresh-1"}`);
    expect(spent?.usedAt).not.toBeNull();
    const retried = await store.refresh(refreshStep("refresh-1", "refresh-2", "access-3", later + GRACE - 1));
    expect(retried).toMatchObject({ kind: "retried", successorExpiresAt: later + 90 * DAY, account: ALICE_ACCOUNT });
    expect(await countRows(shared.db, "PasswordRefreshToken")).toBe(2);
    for (const access of ["access-2", "access-3"]) expect(await store.findAccess(access, later + GRACE - 1)).toBeDefined();
    // Past the grace the spent token is revoked (and its row goes); its successor lives on.
    expect(await store.refresh(refreshStep("refresh-1", "refresh-2", "access-4", later + GRACE))).toEqual({ kind: "revoked" });
    expect(await store.refresh(refreshStep("refresh-2", "refresh-3", "access-5", later + GRACE))).toMatchObject({ kind: "rotated" });
    expect(await rowOf(shared.db, sql`SELECT 1 AS "n" FROM "PasswordRefreshToken" WHERE "tokenHash" = ${"refresh-1"}`)).toBeUndefined();
  });

  it("a refresh of an unknown token, another account's, an expired one or one of an ended session is revoked and adds nothing", async () => {
    await store.create(session("s1", { expiresAt: NOW + DAY }), passwordOf(ALICE), { ...tokens("1"), refreshExpiresAt: NOW + DAY });
    expect(await store.refresh(refreshStep("refresh-unknown", "x", "access-x", NOW))).toEqual({ kind: "revoked" });
    expect(await store.refresh(refreshStep("refresh-1", "x", "access-x", NOW, BOB))).toEqual({ kind: "revoked" });
    expect(await store.refresh(refreshStep("refresh-1", "x", "access-x", NOW + DAY))).toEqual({ kind: "revoked" });
    expect(await rowOf(shared.db, sql`SELECT 1 AS "n" FROM "PasswordRefreshToken" WHERE "tokenHash" = ${"refresh-1"}`)).toBeUndefined();
    expect(await countRows(shared.db, "PasswordAccessToken")).toBe(1);
    await store.create(session("s2"), passwordOf(ALICE), tokens("2"));
    expect(await store.endByRefreshToken(ALICE, "refresh-2")).toBe(true);
    expect(await store.refresh(refreshStep("refresh-2", "y", "access-y", NOW))).toEqual({ kind: "revoked" });
    expect(await rowOf(shared.db, sql`SELECT 1 AS "n" FROM "PasswordAccessToken" WHERE "tokenHash" IN (${"access-2"}, ${"access-y"})`)).toBeUndefined();
  });

  it("deleteSession ends a session by a spent refresh token too, and only the account's own", async () => {
    await store.create(session("s1"), passwordOf(ALICE), tokens("1"));
    await store.refresh(refreshStep("refresh-1", "refresh-2", "access-2", NOW));
    expect(await store.endByRefreshToken(BOB, "refresh-1")).toBe(false);
    expect(await store.endByRefreshToken(ALICE, "refresh-1")).toBe(true);
    expect(await countRows(shared.db, "PasswordSession")).toBe(0);
  });

  it("lists the account's live sessions, most recently used first, with their app password's name; touch records use on both", async () => {
    await appPasswords.insert(appPassword("app-1", { name: "my bot" }));
    await store.create(session("full", { lastUsedAt: NOW - HOUR }), passwordOf(ALICE), tokens("1"));
    await store.create(session("bot", { appPasswordId: "app-1", scope: "com.atproto.appPass" }), { appPasswordId: "app-1", privileged: false }, tokens("2"));
    await store.create(session("expired", { expiresAt: NOW }), passwordOf(ALICE), tokens("3"));
    await store.create(session("bobs", { accountDid: BOB }), passwordOf(BOB), tokens("4"));
    expect((await store.list(ALICE, NOW)).map((listed) => [listed.id, listed.appPasswordName])).toEqual([
      ["bot", "my bot"],
      ["full", null],
    ]);
    await store.touch("full", NOW + HOUR);
    await store.touch("bot", NOW + 2 * HOUR);
    expect((await store.list(ALICE, NOW)).map((listed) => [listed.id, listed.lastUsedAt])).toEqual([
      ["bot", NOW + 2 * HOUR],
      ["full", NOW + HOUR],
    ]);
    expect((await appPasswords.list(ALICE))[0]?.lastUsedAt).toBe(NOW + 2 * HOUR);
  });

  it("revoking an app password ends its sessions at once, and only its own", async () => {
    await appPasswords.insert(appPassword("app-1", { name: "one" }));
    await appPasswords.insert(appPassword("app-2", { name: "two", passwordHash: "scrypt$other" }));
    await store.create(session("by-one", { appPasswordId: "app-1" }), { appPasswordId: "app-1", privileged: false }, tokens("1"));
    await store.create(session("by-two", { appPasswordId: "app-2" }), { appPasswordId: "app-2", privileged: false }, tokens("2"));
    await store.create(session("full"), passwordOf(ALICE), tokens("3"));
    expect(await appPasswords.revoke(ALICE, "one")).toBe(true);
    expect(await appPasswords.revoke(ALICE, "one")).toBe(false);
    expect(await store.findAccess("access-1", NOW)).toBeUndefined();
    expect(await store.findAccess("access-2", NOW)).toBeDefined();
    expect(await store.findAccess("access-3", NOW)).toBeDefined();
  });

  it("a password change ends every password session but keeps app passwords; 'disconnect every app' deletes them too; a reset ends them all", async () => {
    const accounts = new SqlAccountStore(shared.db);
    await appPasswords.insert(appPassword("app-1"));
    await store.create(session("full"), passwordOf(ALICE), tokens("1"));
    await store.create(session("bot", { appPasswordId: "app-1" }), { appPasswordId: "app-1", privileged: false }, tokens("2"));
    await accounts.setPasswordHash(ALICE, "scrypt$new", NOW);
    expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    expect(await appPasswords.list(ALICE)).toHaveLength(1);

    await store.create(session("bot-again", { appPasswordId: "app-1" }), { appPasswordId: "app-1", privileged: false }, tokens("3"));
    await accounts.secure(ALICE, "no-browser", false);
    expect(await store.findAccess("access-3", NOW)).toBeDefined();
    await accounts.secure(ALICE, "no-browser", true);
    expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    expect(await appPasswords.list(ALICE)).toHaveLength(0);

    await store.create(session("after"), { passwordHash: "scrypt$new" }, tokens("4"));
    const recovery = new SqlRecoveryStore(shared.db);
    await recovery.issue({ codeHash: "code", accountDid: ALICE, createdAt: NOW, expiresAt: NOW + HOUR });
    await recovery.redeem("code", NOW, { passwordHash: "scrypt$newer", removePasskeys: false, disconnectApps: false });
    expect(await countRows(shared.db, "PasswordSession")).toBe(0);
  });

  it(`two refreshes of one token ${raceOn(engine, 2)}: one spends it, the other is handed the same successor; one successor row`, async () => {
    await store.create(session("s1"), passwordOf(ALICE), tokens("1"));
    const [other] = shared.others(1);
    const outcomes = await Promise.all([
      store.refresh(refreshStep("refresh-1", "refresh-2", "access-a", NOW)),
      new SqlPasswordSessionStore(other!).refresh(refreshStep("refresh-1", "refresh-2", "access-b", NOW)),
    ]);
    expect(outcomes.map((outcome) => outcome.kind).sort()).toEqual(["retried", "rotated"]);
    expect(await countRows(shared.db, "PasswordRefreshToken")).toBe(2);
    expect(await countRows(shared.db, "PasswordAccessToken")).toBe(3);
  });

  if (engine === "postgresql") {
    it("a sign-in on the old password still being stored when the password changes stores nothing (the change holds the credentials lock)", async () => {
      const [created] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlAccountStore(gated).setPasswordHash(ALICE, "scrypt$changed", NOW),
        () => store.create(session("on-the-old-password"), passwordOf(ALICE), tokens("1")),
      ).then(([, second]) => [second]);
      expect(created).toBeUndefined();
      expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    });

    it("a password reset by email landing on a sign-in that holds the lock ends the session it stores", async () => {
      const recovery = new SqlRecoveryStore(shared.db);
      await recovery.issue({ codeHash: "code", accountDid: ALICE, createdAt: NOW, expiresAt: NOW + HOUR });
      const [created, reset] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlPasswordSessionStore(gated).create(session("on-the-old-password"), passwordOf(ALICE), tokens("1")),
        () => recovery.redeem("code", NOW, { passwordHash: "scrypt$reset", removePasskeys: false, disconnectApps: false }),
      );
      expect(created).toEqual(ALICE_ACCOUNT);
      expect(reset?.accountDid).toBe(ALICE);
      expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    });

    it("a refresh racing the session's sign-out finds it ended: no token is added to it, and no error", async () => {
      await store.create(session("s1"), passwordOf(ALICE), tokens("1"));
      const [ended, outcome] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlPasswordSessionStore(gated).end(ALICE, "s1"),
        () => store.refresh(refreshStep("refresh-1", "refresh-2", "access-2", NOW)),
      );
      expect(ended).toBe(true);
      expect(outcome).toEqual({ kind: "revoked" });
      expect(await countRows(shared.db, "PasswordRefreshToken")).toBe(0);
    });

    it("a sign-in with an app password being revoked stores nothing (the revocation holds the credentials lock)", async () => {
      await appPasswords.insert(appPassword("app-1"));
      const [revoked, created] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlAppPasswordStore(gated).revoke(ALICE, "app-1"),
        () => store.create(session("with-revoked", { appPasswordId: "app-1" }), { appPasswordId: "app-1", privileged: false }, tokens("1")),
      );
      expect([revoked, created]).toEqual([true, undefined]);
      expect(await countRows(shared.db, "PasswordSession")).toBe(0);
    });

    it("a refresh racing the privilege taken back from its app password gets the lesser scope (docs/decisions/0053)", async () => {
      await appPasswords.insert(appPassword("chat", { privileged: true }));
      await store.create(session("s1", { appPasswordId: "chat", scope: "com.atproto.appPassPrivileged" }), { appPasswordId: "chat", privileged: true }, tokens("1"));
      const [dropped, outcome] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlAppPasswordStore(gated).dropPrivilege(ALICE, "chat"),
        () => store.refresh(refreshStep("refresh-1", "refresh-2", "access-2", NOW)),
      );
      expect(dropped).toBe(true);
      expect(outcome).toMatchObject({ kind: "rotated", session: { scope: "com.atproto.appPass" } });
    });
  }

  it("taking the privilege back from an app password narrows its sessions at once, and a sign-in that saw it privileged stores nothing", async () => {
    await appPasswords.insert(appPassword("chat", { privileged: true }));
    await appPasswords.insert(appPassword("other", { privileged: true, passwordHash: "scrypt$other" }));
    await store.create(session("s1", { appPasswordId: "chat", scope: "com.atproto.appPassPrivileged" }), { appPasswordId: "chat", privileged: true }, tokens("1"));
    await store.create(session("s2", { appPasswordId: "other", scope: "com.atproto.appPassPrivileged" }), { appPasswordId: "other", privileged: true }, tokens("2"));
    expect(await appPasswords.dropPrivilege(ALICE, "chat")).toBe(true);
    expect(await appPasswords.dropPrivilege(ALICE, "chat")).toBe(false);
    expect(await appPasswords.dropPrivilege(BOB, "other")).toBe(false);
    expect((await store.findAccess("access-1", NOW))?.session.scope).toBe("com.atproto.appPass");
    expect((await store.findAccess("access-2", NOW))?.session.scope).toBe("com.atproto.appPassPrivileged");
    expect((await appPasswords.list(ALICE)).map(({ id, privileged }) => ({ id, privileged }))).toEqual(expect.arrayContaining([{ id: "chat", privileged: false }, { id: "other", privileged: true }]));
    // A sign-in checked while it was privileged: the proof no longer holds.
    expect(await store.create(session("late", { appPasswordId: "chat", scope: "com.atproto.appPassPrivileged" }), { appPasswordId: "chat", privileged: true }, tokens("3"))).toBeUndefined();
  });
});

describe.each(ENGINES)("SqlAppPasswordStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlAppPasswordStore;

  beforeEach(async () => {
    store = new SqlAppPasswordStore(shared.db);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });

  it("stores one name per account, finds one by its hash, lists the newest first without the hash", async () => {
    expect(await store.insert(appPassword("app-1", { name: "bot", createdAt: NOW }))).toBe(true);
    expect(await store.insert(appPassword("app-2", { name: "bot", passwordHash: "scrypt$other" }))).toBe(false);
    expect(await store.insert(appPassword("app-3", { name: "bot", accountDid: BOB }))).toBe(true);
    expect(await store.insert(appPassword("app-4", { name: "chat", privileged: true, createdAt: NOW + 1, passwordHash: "scrypt$chat" }))).toBe(true);
    expect(await store.find(ALICE, "scrypt$hash-of-app-1")).toEqual(appPassword("app-1", { name: "bot", createdAt: NOW }));
    expect(await store.find(BOB, "scrypt$hash-of-app-1")).toBeUndefined();
    expect(await store.list(ALICE)).toEqual([
      { id: "app-4", name: "chat", privileged: true, createdAt: NOW + 1, lastUsedAt: null },
      { id: "app-1", name: "bot", privileged: false, createdAt: NOW, lastUsedAt: null },
    ]);
  });

  it(`two creations of one name ${raceOn(engine, 2)}: one is stored, the other refused, without an error`, async () => {
    const [other] = shared.others(1);
    const results = await Promise.all([
      store.insert(appPassword("app-a", { name: "same" })),
      new SqlAppPasswordStore(other!).insert(appPassword("app-b", { name: "same", passwordHash: "scrypt$b" })),
    ]);
    expect(results.sort()).toEqual([false, true]);
    expect(await store.list(ALICE)).toHaveLength(1);
  });

  if (engine === "postgresql") {
    it("a creation of a name while another creation of it is still open waits for it and is refused, without an error", async () => {
      const [first, second] = await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlAppPasswordStore(gated).insert(appPassword("app-a", { name: "same" })),
        () => store.insert(appPassword("app-b", { name: "same", passwordHash: "scrypt$b" })),
      );
      expect([first, second]).toEqual([true, false]);
    });
  }

  it("app passwords go with their account", async () => {
    await store.insert(appPassword("app-1"));
    await execute(shared.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
    expect(await store.list(ALICE)).toEqual([]);
  });
});
