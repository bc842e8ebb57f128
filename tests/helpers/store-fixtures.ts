import { afterAll, beforeAll, beforeEach } from "vitest";
import type { StoredAccount } from "../../app/.server/accounts/account-store.ts";
import { sealedKeyId } from "../../app/.server/accounts/key-encryption.ts";
import type { Grant, IssuedTokenHashes, NewAuthorizationCode } from "../../app/.server/oauth/token/grant-store.ts";
import { shape } from "../../app/.server/db/row-shape.ts";
import { at, get, run, sql, statementOf, type Database, type Program, type Statement } from "../../app/.server/db/sql.ts";
import { openTestDatabase, type Engine, type TestDatabase } from "./databases.ts";

/**
 * What the store contract suites (app/.server/stores/*.test.ts) share beyond
 * tests/helpers/databases.ts: one database per describe block, emptied before
 * each test (a fresh PostgreSQL database per test costs 50–150 ms), extra
 * handles for the race tests, and a few rows to build on.
 */

/** Every table the stores write, children before their parents (the migrations' own table is left alone). */
export const TABLES = [
  "RepoImportBlobRef",
  "RepoImportRecord",
  "RepoImportNode",
  "RepoImportBlock",
  "RepoImport",
  "RecordBlob",
  "Record",
  "RepoBlock",
  "RepoRoot",
  "RepoEvent",
  "Blob",
  "BlobRelease",
  "BlobChunk",
  "BlobContent",
  "Preferences",
  "Passkey",
  "AppActivity",
  "AuthorizedClient",
  "AccessToken",
  "RefreshToken",
  "Grant",
  "AuthorizationCode",
  "BrowserSession",
  "PasswordAccessToken",
  "PasswordRefreshToken",
  "PasswordSession",
  "AppPassword",
  "InviteCodeUse",
  "InviteCode",
  "Account",
  "Client",
  "AuthorizationRequest",
  "ReplayRecord",
  "ServerSecret",
  "PermissionSetCache",
  "RateLimit",
  "AdminSession",
] as const;
export type Table = (typeof TABLES)[number];

const deletes = new Map(TABLES.map((table) => [table, statementOf(`DELETE FROM "${table}"`)]));
const counts = new Map(TABLES.map((table) => [table, statementOf(`SELECT COUNT(*) AS "n" FROM "${table}"`)]));
const COUNT = shape({ n: "integer" });

/** Deletes every row of every store table, in one transaction. */
export async function emptyTables(db: Database): Promise<void> {
  await db.transaction(function* (): Program<void> {
    for (const table of TABLES) yield* run(deletes.get(table)!());
  });
}

/** How many rows a table holds (both engines answer a number). */
export async function countRows(db: Database, table: Table): Promise<number> {
  const row = await db.execute(() => get(COUNT, counts.get(table)!()));
  return row!.n;
}

/** How many rows a statement of the form `SELECT COUNT(*) AS "n" …` counts. */
export async function countOf(db: Database, statement: Statement): Promise<number> {
  const row = await db.execute(() => get(COUNT, statement));
  return row!.n;
}

export type SharedDatabase = {
  /** The database of the describe block (throws outside its tests). */
  readonly test: TestDatabase;
  readonly db: Database;
  /** `count` more handles on the same database (other connections or pools: other server processes), opened once per block. */
  others(count: number): Database[];
};

/**
 * Registers hooks that open one migrated database on `engine` for the
 * enclosing describe block and empty it before each of its tests. Use it where
 * tests do not depend on anything but the rows they write themselves.
 */
export function useSharedDatabase(engine: Engine): SharedDatabase {
  let opened: TestDatabase | undefined;
  const handles: Database[] = [];
  beforeAll(async () => {
    opened = await openTestDatabase(engine);
  });
  afterAll(async () => {
    handles.length = 0;
    await opened?.close();
  });
  beforeEach(async () => {
    await emptyTables(opened!.db);
  });
  const shared: SharedDatabase = {
    get test() {
      if (!opened) throw new Error("The shared database is open only inside its describe block's tests");
      return opened;
    },
    get db() {
      return shared.test.db;
    },
    others(count) {
      while (handles.length < count) handles.push(shared.test.connect());
      return handles.slice(0, count);
    },
  };
  return shared;
}

/** An account row with made-up but well-formed fields (handle and email from the DID unless given). */
export function accountFor(did: string, overrides: Partial<StoredAccount> = {}): StoredAccount {
  const name = did.slice(did.lastIndexOf(":") + 1);
  return {
    did,
    handle: `${name}.test`,
    email: `${name}@example.com`,
    passwordHash: "scrypt$16384$8$1$c2FsdA$aGFzaA",
    emailConfirmedAt: null,
    signingKey: "{}",
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

/** Inserts an account directly (for stores whose rows belong to one). */
export async function insertAccount(db: Database, did: string, overrides: Partial<StoredAccount> = {}): Promise<StoredAccount> {
  const account = accountFor(did, overrides);
  await db.execute(function* (): Program<void> {
    yield* run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "emailConfirmedAt", "signingKey", "signingKeyEncryptedWith", "createdAt", "updatedAt")
      VALUES (${account.did}, ${account.handle}, ${account.email}, ${account.passwordHash}, ${at(account.emailConfirmedAt)}, ${account.signingKey},
        ${sealedKeyId(account.signingKey)}, ${at(account.createdAt)}, ${at(account.createdAt)})`);
  });
  return account;
}

/** The time the OAuth fixtures below are made at, unless told otherwise. */
export const FIXTURE_TIME = 1_800_000_000_000;

/** An authorization code as the authorize step stores it (a public client's unless `clientKey` is given). */
export function newCode(codeHash: string, overrides: Partial<NewAuthorizationCode> = {}): NewAuthorizationCode {
  return {
    codeHash,
    clientId: "https://app.example/client-metadata.json",
    accountDid: "did:plc:alice",
    redirectUri: "https://app.example/callback",
    scope: "atproto transition:generic",
    codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    dpopJkt: "jkt-of-the-app",
    clientKey: null,
    createdAt: FIXTURE_TIME,
    expiresAt: FIXTURE_TIME + 60_000,
    ...overrides,
  };
}

/** A grant as the token step makes it from a code: fresh, sliding for a week, ending in 30 days. */
export function newGrant(id: string, overrides: Partial<Grant> = {}): Grant {
  const createdAt = overrides.createdAt ?? FIXTURE_TIME;
  return {
    id,
    clientId: "https://app.example/client-metadata.json",
    accountDid: "did:plc:alice",
    scope: "atproto transition:generic",
    dpopJkt: "jkt-of-the-app",
    clientKey: null,
    createdAt,
    lastUsedAt: createdAt,
    expiresAt: createdAt + 7 * 86_400_000,
    endsAt: createdAt + 30 * 86_400_000,
    withdrawn: "",
    ...overrides,
  };
}

/** The hashes of a token pair named by `tag` (access-<tag>, refresh-<tag>), issued at `now`. */
export function issuedTokens(tag: string, now = FIXTURE_TIME, overrides: Partial<IssuedTokenHashes> = {}): IssuedTokenHashes {
  return {
    accessTokenHash: `access-${tag}`,
    accessExpiresAt: now + 3_600_000,
    accessScope: null,
    refreshTokenHash: `refresh-${tag}`,
    refreshExpiresAt: now + 7 * 86_400_000,
    ...overrides,
  };
}
