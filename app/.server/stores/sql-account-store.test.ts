import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, type Engine, raceOn } from "../../../tests/helpers/databases.ts";
import { accountFor, countOf, countRows, issuedTokens, newCode, newGrant, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, run, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import { ACCOUNT_PAGE_SQL, SqlAccountStore } from "./sql-account-store.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { SqlConsentStore } from "./sql-consent-store.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";
import { SqlPasskeyStore } from "./sql-passkey-store.ts";
import { SqlSessionStore } from "./sql-session-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";

/** Makes every delete of remembered consent fail, as a broken statement half-way through a step would. */
async function refuseConsentDeletes(engine: Engine, db: Database): Promise<() => Promise<void>> {
  if (engine === "sqlite") {
    await execute(db, sql`CREATE TRIGGER "refuse_consent_delete" BEFORE DELETE ON "AuthorizedClient" BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    return async () => void (await execute(db, sql`DROP TRIGGER "refuse_consent_delete"`));
  }
  const pool = (db as PostgresDatabase).pool;
  await pool.query(`CREATE FUNCTION "refuse_delete"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
  await pool.query(`CREATE TRIGGER "refuse_consent_delete" BEFORE DELETE ON "AuthorizedClient" FOR EACH ROW EXECUTE FUNCTION "refuse_delete"()`);
  return async () => {
    await pool.query(`DROP TRIGGER "refuse_consent_delete" ON "AuthorizedClient"`);
    await pool.query(`DROP FUNCTION "refuse_delete"()`);
  };
}

/** Accounts on each engine: unique identifiers checked and written atomically, and the all-or-nothing lockdown. */
describe.each(ENGINES)("SqlAccountStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlAccountStore;

  beforeEach(() => {
    store = new SqlAccountStore(shared.db);
  });

  it("inserts an account and finds it by DID, handle or email, every field as given", async () => {
    const alice = accountFor(ALICE, { emailConfirmedAt: NOW + 5, createdAt: NOW });
    const bob = accountFor(BOB, { createdAt: NOW + 1 });
    expect(await store.insert(alice)).toBeUndefined();
    expect(await store.insert(bob)).toBeUndefined();
    // (The row's updatedAt comes along too.)
    expect(await store.find("did", ALICE)).toMatchObject(alice);
    expect(await store.find("handle", "alice.test")).toMatchObject(alice);
    expect(await store.find("email", "alice@example.com")).toMatchObject(alice);
    expect(await store.find("did", BOB)).toMatchObject(bob);
    expect((await store.find("did", BOB))?.emailConfirmedAt).toBeNull();
    expect(await store.find("handle", "nobody.test")).toBeUndefined();
    expect((await store.page({ limit: 10 })).map((account) => account.did)).toEqual([ALICE, BOB]);
  });

  it("profile reads who the account is, by DID, handle or email, and neither its password hash nor its signing key", async () => {
    const alice = accountFor(ALICE, { emailConfirmedAt: NOW + 5, createdAt: NOW });
    await store.insert(alice);
    const { passwordHash: _hash, signingKey: _key, ...profile } = alice;
    expect(await store.profile("did", ALICE)).toEqual(profile);
    expect(await store.profile("handle", "alice.test")).toEqual(profile);
    expect(await store.profile("email", "alice@example.com")).toEqual(profile);
    expect(await store.profile("handle", "nobody.test")).toBeUndefined();
  });

  it("refuses an account whose handle, email or DID is taken, saying which, and writes nothing", async () => {
    await store.insert(accountFor(ALICE));
    expect(await store.insert(accountFor("did:plc:other", { handle: "alice.test" }))).toBe("handle");
    expect(await store.insert(accountFor("did:plc:other", { email: "alice@example.com" }))).toBe("email");
    expect(await store.insert(accountFor(ALICE, { handle: "new.test", email: "new@example.com" }))).toBe("did");
    // The handle is reported first when several clash.
    expect(await store.insert(accountFor("did:plc:other", { handle: "alice.test", email: "alice@example.com" }))).toBe("handle");
    expect(await countRows(shared.db, "Account")).toBe(1);
  });

  it("replace: the account under the old DID goes with what it owned, the new one is stored, in one step", async () => {
    await store.insert(accountFor(ALICE));
    await populate(shared.db, ALICE);
    const renamed = accountFor("did:plc:newalice", { handle: "alice.test", email: "alice@example.com", createdAt: NOW + 9 });
    await store.replace(ALICE, renamed);
    expect(await store.find("did", ALICE)).toBeUndefined();
    expect(await store.find("handle", "alice.test")).toMatchObject(renamed);
    expect(await rowsFor(shared.db, ALICE)).toEqual({ passkeys: 0, sessions: 0, grants: 0, tokens: 0, codes: 0, consents: 0 });
  });

  it("changes a handle unless another account holds it", async () => {
    await store.insert(accountFor(ALICE));
    await store.insert(accountFor(BOB));
    expect(await store.updateHandle(ALICE, "alice2.test", NOW)).toBe(true);
    expect(await store.find("handle", "alice2.test")).toMatchObject({ did: ALICE });
    expect(await store.updateHandle(ALICE, "alice2.test", NOW)).toBe(true); // its own handle
    expect(await store.updateHandle(BOB, "alice2.test", NOW)).toBe(false);
    expect(await store.find("did", BOB)).toMatchObject({ handle: "bob.test" });
  });

  it("confirms the address a confirmation code was sent to, and only while the account still has it (docs/decisions/0052)", async () => {
    await store.insert(accountFor(ALICE));
    expect(await store.confirmEmail(ALICE, "old-alice@example.com", NOW)).toBe(false);
    expect(await store.find("did", ALICE)).toMatchObject({ emailConfirmedAt: null });
    expect(await store.confirmEmail(BOB, "alice@example.com", NOW)).toBe(false);
    expect(await store.confirmEmail(ALICE, "alice@example.com", NOW)).toBe(true);
    expect(await store.find("did", ALICE)).toMatchObject({ emailConfirmedAt: NOW });
  });

  it("sets a password hash", async () => {
    await store.insert(accountFor(ALICE));
    await store.setPasswordHash(ALICE, "scrypt$new", NOW);
    expect(await store.find("did", ALICE)).toMatchObject({ passwordHash: "scrypt$new" });
  });

  describe("secure(): the account lockdown (docs/decisions/0007)", () => {
    beforeEach(async () => {
      await store.insert(accountFor(ALICE));
      await store.insert(accountFor(BOB));
      await populate(shared.db, ALICE);
      await populate(shared.db, BOB);
    });

    it("removes every passkey and every other session; apps stay when not asked", async () => {
      expect(await store.secure(ALICE, `session-${ALICE}-1`, false)).toEqual({ passkeys: 1, otherSessions: 1, apps: 0 });
      expect(await rowsFor(shared.db, ALICE)).toEqual({ passkeys: 0, sessions: 1, grants: 1, tokens: 2, codes: 1, consents: 1 });
      expect(await new SqlSessionStore(shared.db).find(`session-${ALICE}-1`, NOW)).toBeDefined();
      expect(await rowsFor(shared.db, BOB)).toEqual(untouched);
    });

    it("with disconnectApps, also ends every grant with its tokens, every unredeemed code and every remembered consent", async () => {
      expect(await store.secure(ALICE, `session-${ALICE}-1`, true)).toEqual({ passkeys: 1, otherSessions: 1, apps: 1 });
      expect(await rowsFor(shared.db, ALICE)).toEqual({ passkeys: 0, sessions: 1, grants: 0, tokens: 0, codes: 0, consents: 0 });
      expect(await rowsFor(shared.db, BOB)).toEqual(untouched);
    });

    it("is all or nothing: when its last step fails, the passkeys and sessions are all still there", async () => {
      const restore = await refuseConsentDeletes(engine, shared.db);
      try {
        await expect(store.secure(ALICE, `session-${ALICE}-1`, true)).rejects.toThrow(/refused by the test/);
      } finally {
        await restore();
      }
      expect(await rowsFor(shared.db, ALICE)).toEqual(untouched);
    });
  });

  it(`RACE: 20 sign-ups for one handle ${raceOn(engine, 4)} create one account; the others are told the handle is taken`, async () => {
    const stores = shared.others(4).map((db) => new SqlAccountStore(db));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 4]!.insert(accountFor(`did:plc:racer${i}`, { handle: "wanted.test", email: `racer${i}@example.com` }))),
    );
    expect(results.filter((clash) => clash === undefined)).toHaveLength(1);
    expect(results.filter((clash) => clash === "handle")).toHaveLength(19);
    expect(await countRows(shared.db, "Account")).toBe(1);
  });

  it(`RACE: 20 accounts moving here under one DID ${raceOn(engine, 4)} (createAccount with did): one is stored, deactivated; the others are told the DID is taken`, async () => {
    const stores = shared.others(4).map((db) => new SqlAccountStore(db));
    const moving = "did:plc:movinghereaaaaaaaaaaaaaa";
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 4]!.insert(accountFor(moving, { handle: `mover${i}.test`, email: `mover${i}@example.com`, deactivatedAt: NOW }))),
    );
    expect(results.filter((clash) => clash === undefined)).toHaveLength(1);
    expect(results.filter((clash) => clash === "did")).toHaveLength(19);
    expect(await countRows(shared.db, "Account")).toBe(1);
    expect(await store.find("did", moving)).toMatchObject({ deactivatedAt: NOW });
  });

  it(`RACE: 20 sign-ups with one email ${raceOn(engine, 4)} create one account`, async () => {
    const stores = shared.others(4).map((db) => new SqlAccountStore(db));
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 4]!.insert(accountFor(`did:plc:racer${i}`, { handle: `racer${i}.test`, email: "shared@example.com" }))),
    );
    expect(results.filter((clash) => clash === undefined)).toHaveLength(1);
    expect(results.filter((clash) => clash === "email")).toHaveLength(19);
  });

  it(`RACE: ten accounts taking one handle ${raceOn(engine, 4)}: exactly one gets it`, async () => {
    for (let i = 0; i < 10; i++) await store.insert(accountFor(`did:plc:racer${i}`));
    const stores = shared.others(4).map((db) => new SqlAccountStore(db));
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % 4]!.updateHandle(`did:plc:racer${i}`, "wanted.test", NOW)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.find("handle", "wanted.test")).toMatchObject({ did: `did:plc:racer${results.indexOf(true)}` });
  });

  describe("the operator's pages of accounts (docs/decisions/0051)", () => {
    it("in handle order, each page after the last handle shown, searched by the start of a handle, an email or a DID", async () => {
      for (const name of ["carol", "alice", "bob", "al_ice", "al%ce"]) await store.insert(accountFor(`did:plc:${name.replace(/[_%]/g, "x")}`, { handle: `${name.replace(/[_%]/g, "-")}.test`, email: `${name}@example.com` }));
      const handles = async (query: Parameters<SqlAccountStore["page"]>[0]) => (await store.page(query)).map((account) => account.handle);
      expect(await handles({ limit: 10 })).toEqual(["al-ce.test", "al-ice.test", "alice.test", "bob.test", "carol.test"]);
      expect(await handles({ limit: 2 })).toEqual(["al-ce.test", "al-ice.test"]);
      expect(await handles({ limit: 2, afterHandle: "al-ice.test" })).toEqual(["alice.test", "bob.test"]);
      expect(await handles({ limit: 10, prefix: "al" })).toEqual(["al-ce.test", "al-ice.test", "alice.test"]);
      expect(await handles({ limit: 10, prefix: "alice@" })).toEqual(["alice.test"]);
      expect(await handles({ limit: 10, prefix: "did:plc:b" })).toEqual(["bob.test"]);
      // % and _ are the characters typed, not patterns: "al_" finds only the email that has it.
      expect(await handles({ limit: 10, prefix: "al_" })).toEqual(["al-ice.test"]);
      expect(await handles({ limit: 10, prefix: "al%" })).toEqual(["al-ce.test"]);
      expect(await handles({ limit: 1, prefix: "al", afterHandle: "al-ice.test" })).toEqual(["alice.test"]);
      expect((await store.page({ limit: 1, prefix: "bob" }))[0]).toEqual({
        did: "did:plc:bob", handle: "bob.test", email: "bob@example.com", emailConfirmedAt: null, createdAt: 1_700_000_000_000,
        lastSignInAt: null, deactivatedAt: null, takendownAt: null, takedownRef: null,
      });
    });

    it("10,000 accounts: a hundred pages of a hundred, each read through the handle's index up to its limit, never the whole table", async () => {
      const total = 10_000;
      await insertAccounts(shared.db, total);
      const seen = new Set<string>();
      let afterHandle: string | undefined;
      let pages = 0;
      for (;;) {
        const page = await store.page({ limit: 100, afterHandle });
        expect(page.length).toBeLessThanOrEqual(100);
        for (const account of page) seen.add(account.did);
        pages += 1;
        if (page.length < 100) break;
        afterHandle = page.at(-1)!.handle;
      }
      expect(seen.size).toBe(total);
      expect(pages).toBe(total / 100 + 1);
      // The plan: the unique index on the handle, in order, stopped by the LIMIT; no scan of the table, no sort.
      if (engine === "sqlite") {
        expect(sqlitePlan(shared.db, ACCOUNT_PAGE_SQL.all, "a", 100)).toEqual([expect.stringMatching(/^SEARCH Account USING INDEX Account_handle_key \(handle>\?\)$/)]);
        expect(sqlitePlan(shared.db, ACCOUNT_PAGE_SQL.prefix, "a", "x%", "x%", "x%", 100)).toEqual([expect.stringMatching(/^SEARCH Account USING INDEX Account_handle_key \(handle>\?\)$/)]);
        return;
      }
      const plan = await postgresPlan(shared.db, ACCOUNT_PAGE_SQL.all, ["a", 100]);
      expect(plan[0]!.nodeType).toBe("Limit");
      expect(plan).toContainEqual(expect.objectContaining({ nodeType: "Index Scan", relation: "Account", index: "Account_handle_key" }));
      expect(plan.filter((node) => node.nodeType === "Seq Scan" || node.nodeType === "Sort")).toEqual([]);
      // A search reads the accounts that match, through the indexes (or walks the handle's up to the limit), never
      // the whole table.
      const searched = await postgresPlan(shared.db, ACCOUNT_PAGE_SQL.prefix, ["a", "x%", "x%", "x%", 100]);
      expect(searched[0]!.nodeType).toBe("Limit");
      expect(searched.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
    });
  });
});

/** What `populate` gives an account. */
const untouched = { passkeys: 1, sessions: 2, grants: 1, tokens: 2, codes: 1, consents: 1 };

/** Two sessions, a passkey, a grant with its two tokens, an unredeemed code and a remembered consent. */
async function populate(db: Database, did: string): Promise<void> {
  const sessions = new SqlSessionStore(db);
  for (const n of [1, 2]) {
    await sessions.create({ idHash: `session-${did}-${n}`, accountDid: did, userAgent: null, ipAddress: null, createdAt: NOW, lastSeenAt: NOW, expiresAt: NOW + 86_400_000, authenticatedAt: NOW, staySignedIn: true, deviceHash: null }, { passwordHash: accountFor(did).passwordHash });
  }
  await new SqlPasskeyStore(db).insert({
    credentialId: `credential-${did}`,
    accountDid: did,
    name: "Phone",
    publicKey: new Uint8Array([1, 2, 3]),
    counter: 0,
    transports: null,
    deviceType: "multiDevice",
    backedUp: true,
    createdAt: NOW,
    lastUsedAt: null,
  });
  const grants = new SqlGrantStore(db);
  await grants.insertCode(newCode(`code-${did}-1`, { accountDid: did, clientId: APP }));
  await grants.redeemCode(`code-${did}-1`, NOW, newGrant(`grant-${did}`, { accountDid: did, clientId: APP }), issuedTokens(did));
  await grants.insertCode(newCode(`code-${did}-2`, { accountDid: did, clientId: APP }));
  await new SqlConsentStore(db).remember(did, APP, { granted: ["atproto"], declined: [] }, NOW);
}

async function rowsFor(db: Database, did: string) {
  return {
    passkeys: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Passkey" WHERE "accountDid" = ${did}`),
    sessions: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "BrowserSession" WHERE "accountDid" = ${did}`),
    grants: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "accountDid" = ${did}`),
    tokens: await countOf(db, sql`SELECT (SELECT COUNT(*) FROM "AccessToken" a JOIN "Grant" g ON g."id" = a."grantId" WHERE g."accountDid" = ${did})
      + (SELECT COUNT(*) FROM "RefreshToken" r JOIN "Grant" g ON g."id" = r."grantId" WHERE g."accountDid" = ${did}) AS "n"`),
    codes: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${did} AND "usedAt" IS NULL`),
    consents: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "AuthorizedClient" WHERE "accountDid" = ${did}`),
  };
}


/** Rows of accounts per insert statement when a test makes thousands. */
const ACCOUNTS_PER_INSERT = 100;
const insertAccountsStatement = statementOf(
  `INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt") VALUES ${Array.from({ length: ACCOUNTS_PER_INSERT }, () => "(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
);

/** `count` accounts (a multiple of ACCOUNTS_PER_INSERT), user00000.test… in one transaction. */
async function insertAccounts(db: Database, count: number): Promise<void> {
  await db.transaction(function* (): Program<void> {
    for (let start = 0; start < count; start += ACCOUNTS_PER_INSERT) {
      const values = Array.from({ length: ACCOUNTS_PER_INSERT }, (_, i) => {
        const name = `user${String(start + i).padStart(5, "0")}`;
        return [`did:plc:${name}`, `${name}.test`, `${name}@example.com`, "scrypt$16384$8$1$c2FsdA$aGFzaA", "{}", at(NOW), at(NOW)];
      }).flat();
      yield* run(insertAccountsStatement(...values));
    }
  });
}
