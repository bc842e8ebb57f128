import type {
  AccessOwner,
  SessionAccount,
  IssuedTokenHashes,
  ListedPasswordSession,
  PasswordSessionStore,
  RefreshOutcome,
  RefreshStep,
  SessionProof,
  StoredPasswordSession,
} from "../accounts/password-session-store.ts";
import { accountStateOf, accountTakenDown } from "../accounts/account-status.ts";
import { TAKENDOWN_ACCESS, type AccessScope } from "../accounts/session-jwt.ts";
import { shape } from "../db/row-shape.ts";
import { tables, type PasswordSessionRow } from "../db/rows.generated.ts";
import { all, at, Fragment, get, run, send, sql, type Database, type Program } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { lockCredentials } from "./locks.ts";

const cleanupSessions = expiredRowsCleanup("PasswordSession", "id");
const cleanupAccessTokens = expiredRowsCleanup("PasswordAccessToken", "tokenHash");
const cleanupRefreshTokens = expiredRowsCleanup("PasswordRefreshToken", "tokenHash");

/** What createSession's and refreshSession's answers say of the account (SessionAccount). */
const ACCOUNT_ROW = tables.Account.pick("handle", "email", "emailConfirmedAt", "emailAuthFactor", "deactivatedAt", "takendownAt");
/** A refresh token's state beside its session's columns and its account's. */
const REFRESH_ROW = shape({ ...tables.PasswordSession.columns, ...ACCOUNT_ROW.columns, tokenExpiresAt: "time", usedAt: "time?" });
/** An access token's expiry beside its session's columns, the account's handle and its state's columns. */
const ACCESS_ROW = shape({ ...tables.PasswordSession.columns, tokenExpiresAt: "time", handle: "string", deactivatedAt: "time?", takendownAt: "time?" });
const LISTED_ROW = shape({ ...tables.PasswordSession.columns, appPasswordName: "string?" });

/** The session columns, named one by one so that a joined table's cannot shadow them. */
const SESSION_COLUMNS_TEXT = Object.keys(tables.PasswordSession.columns).map((column) => `s."${column}" AS "${column}"`).join(", ");
const SESSION_COLUMNS = new Fragment({ sqlite: SESSION_COLUMNS_TEXT, postgresql: SESSION_COLUMNS_TEXT });

function toSession(row: PasswordSessionRow): StoredPasswordSession {
  const { id, accountDid, appPasswordId, scope, userAgent, createdAt, lastUsedAt, expiresAt } = row;
  return { id, accountDid, appPasswordId, scope: scope as AccessScope, userAgent, createdAt, lastUsedAt, expiresAt };
}

/**
 * The account, when the proof still holds: its password hash is the one the sign-in matched, or the app password is
 * its own still, with the privilege the sign-in saw (a narrowing since fails it: docs/decisions/0053).
 */
function* accountIfProofHolds(accountDid: string, proof: SessionProof): Program<SessionAccount | undefined> {
  return "passwordHash" in proof
    ? yield* get(ACCOUNT_ROW, sql`SELECT "handle", "email", "emailConfirmedAt", "emailAuthFactor", "deactivatedAt", "takendownAt" FROM "Account"
        WHERE "did" = ${accountDid} AND "passwordHash" = ${proof.passwordHash}`)
    : yield* get(ACCOUNT_ROW, sql`SELECT a."handle" AS "handle", a."email" AS "email", a."emailConfirmedAt" AS "emailConfirmedAt",
          a."emailAuthFactor" AS "emailAuthFactor", a."deactivatedAt" AS "deactivatedAt", a."takendownAt" AS "takendownAt"
        FROM "Account" a JOIN "AppPassword" p ON p."accountDid" = a."did" WHERE a."did" = ${accountDid} AND p."id" = ${proof.appPasswordId}
          AND p."privileged" = ${proof.privileged}`);
}

function toAccount(row: SessionAccount): SessionAccount {
  const { handle, email, emailConfirmedAt, emailAuthFactor, deactivatedAt, takendownAt } = row;
  return { handle, email, emailConfirmedAt, emailAuthFactor, deactivatedAt, takendownAt };
}

/**
 * Password sessions and their tokens (docs/decisions/0047). The steps that create or refresh a session take the
 * account's credentials lock first (SqlAccountStore.lockCredentials), as every change of the account's credentials
 * and every step that ends sessions does: a session is stored only on a password or app password that still holds,
 * and a refresh never adds a token to a session that a concurrent sign-out, revocation or password change is ending
 * (on PostgreSQL its insert would otherwise fail on the session's row deleted meanwhile).
 */
export class SqlPasswordSessionStore implements PasswordSessionStore {
  constructor(private readonly db: Database) {}

  async create(session: StoredPasswordSession, proof: SessionProof, tokens: IssuedTokenHashes) {
    return this.db.transaction(function* (): Program<SessionAccount | undefined> {
      yield* lockCredentials(session.accountDid);
      const account = yield* accountIfProofHolds(session.accountDid, proof);
      if (!account) return undefined;
      // Read under the lock a takedown takes (SqlTakedownStore): one that committed first leaves the account no
      // session but a takedown-only one (docs/decisions/0051).
      if (account.takendownAt !== null && session.scope !== TAKENDOWN_ACCESS) throw accountTakenDown();
      // Apps that never come back: a few of their sessions and tokens go at each sign-in. Nothing below is read back:
      // on PostgreSQL the statements leave together, answered with the COMMIT (db/sql.ts, send).
      yield* send(cleanupSessions(session.createdAt));
      yield* send(cleanupAccessTokens(session.createdAt));
      yield* send(cleanupRefreshTokens(session.createdAt));
      yield* send(sql`INSERT INTO "PasswordSession" ("id", "accountDid", "appPasswordId", "scope", "userAgent", "createdAt", "lastUsedAt", "expiresAt")
        VALUES (${session.id}, ${session.accountDid}, ${session.appPasswordId}, ${session.scope}, ${session.userAgent}, ${at(session.createdAt)},
          ${at(session.lastUsedAt)}, ${at(session.expiresAt)})`);
      yield* send(sql`INSERT INTO "PasswordAccessToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${tokens.accessHash}, ${session.id}, ${at(tokens.accessExpiresAt)})`);
      yield* send(sql`INSERT INTO "PasswordRefreshToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${tokens.refreshHash}, ${session.id}, ${at(tokens.refreshExpiresAt)})`);
      if (session.appPasswordId !== null) yield* send(sql`UPDATE "AppPassword" SET "lastUsedAt" = ${at(session.createdAt)} WHERE "id" = ${session.appPasswordId}`);
      // The operator sees when each account last signed in (/admin): an app's sign-in with a password is one too.
      yield* send(sql`UPDATE "Account" SET "lastSignInAt" = ${at(session.createdAt)} WHERE "did" = ${session.accountDid}`);
      return toAccount(account);
    });
  }

  async refresh(step: RefreshStep) {
    return this.db.transaction(() => refreshProgram(step));
  }

  async findAccess(accessHash: string, now: number) {
    return this.db.execute(function* (): Program<AccessOwner | undefined> {
      // The one read of every call: by the token's primary key, its session's and its account's.
      const row = yield* get(ACCESS_ROW, sql`SELECT a."expiresAt" AS "tokenExpiresAt", ${SESSION_COLUMNS}, acc."handle" AS "handle", acc."deactivatedAt" AS "deactivatedAt",
          acc."takendownAt" AS "takendownAt"
        FROM "PasswordAccessToken" a JOIN "PasswordSession" s ON s."id" = a."sessionId" JOIN "Account" acc ON acc."did" = s."accountDid"
        WHERE a."tokenHash" = ${accessHash}`);
      // An expired row stays until a later sign-in or refresh cleans up a batch: calls only read.
      if (!row || row.tokenExpiresAt <= now || row.expiresAt <= now) return undefined;
      return { session: toSession(row), handle: row.handle, accountState: accountStateOf(row) };
    });
  }

  async touch(sessionId: string, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "PasswordSession" SET "lastUsedAt" = ${at(now)} WHERE "id" = ${sessionId}`);
      yield* run(sql`UPDATE "AppPassword" SET "lastUsedAt" = ${at(now)} WHERE "id" = (SELECT "appPasswordId" FROM "PasswordSession" WHERE "id" = ${sessionId})`);
    });
  }

  async endByRefreshToken(accountDid: string, refreshHash: string) {
    return this.db.transaction(function* (): Program<boolean> {
      yield* lockCredentials(accountDid);
      const ended = yield* run(sql`DELETE FROM "PasswordSession" WHERE "accountDid" = ${accountDid}
        AND "id" = (SELECT "sessionId" FROM "PasswordRefreshToken" WHERE "tokenHash" = ${refreshHash})`);
      return ended > 0;
    });
  }

  async list(accountDid: string, now: number) {
    return this.db.execute(function* (): Program<ListedPasswordSession[]> {
      const rows = yield* all(LISTED_ROW, sql`SELECT ${SESSION_COLUMNS}, p."name" AS "appPasswordName"
        FROM "PasswordSession" s LEFT JOIN "AppPassword" p ON p."id" = s."appPasswordId"
        WHERE s."accountDid" = ${accountDid} AND s."expiresAt" > ${at(now)} ORDER BY s."lastUsedAt" DESC, s."id"`);
      return rows.map((row) => ({ ...toSession(row), appPasswordName: row.appPasswordName }));
    });
  }

  async end(accountDid: string, sessionId: string) {
    return this.db.transaction(function* (): Program<boolean> {
      yield* lockCredentials(accountDid);
      return (yield* run(sql`DELETE FROM "PasswordSession" WHERE "id" = ${sessionId} AND "accountDid" = ${accountDid}`)) > 0;
    });
  }
}

/**
 * One refresh, as a transaction under the account's credentials lock, so that two refreshes of one account (two
 * processes, two connections) take turns: the first spends the token, shortening its life to the grace, and adds its
 * successor; a later one finds it spent and, within the grace, hands out that same successor (the reference's
 * behaviour for a retried refresh). Either way a new access token is added.
 */
function* refreshProgram(step: RefreshStep): Program<RefreshOutcome> {
  const { accountDid, refreshHash, successorHash, now } = step;
  yield* lockCredentials(accountDid);
  const row = yield* get(REFRESH_ROW, sql`SELECT ${SESSION_COLUMNS}, t."expiresAt" AS "tokenExpiresAt", t."usedAt" AS "usedAt",
      a."handle" AS "handle", a."email" AS "email", a."emailConfirmedAt" AS "emailConfirmedAt", a."emailAuthFactor" AS "emailAuthFactor",
      a."deactivatedAt" AS "deactivatedAt", a."takendownAt" AS "takendownAt"
    FROM "PasswordRefreshToken" t JOIN "PasswordSession" s ON s."id" = t."sessionId" JOIN "Account" a ON a."did" = s."accountDid"
    WHERE t."tokenHash" = ${refreshHash} AND s."accountDid" = ${accountDid}`);
  if (!row) return { kind: "revoked" };
  if (row.tokenExpiresAt <= now) {
    yield* run(sql`DELETE FROM "PasswordRefreshToken" WHERE "tokenHash" = ${refreshHash}`);
    return { kind: "revoked" };
  }
  // Nothing from here is read back but the successor of a retry: on PostgreSQL the writes leave together (db/sql.ts, send).
  yield* send(cleanupRefreshTokens(now));
  yield* send(cleanupAccessTokens(now));
  let kind: "rotated" | "retried";
  let successorExpiresAt: number;
  if (row.usedAt === null) {
    kind = "rotated";
    successorExpiresAt = step.refreshExpiresAt;
    const graceEnds = Math.min(now + step.graceMs, row.tokenExpiresAt);
    yield* send(sql`UPDATE "PasswordRefreshToken" SET "usedAt" = ${at(now)}, "expiresAt" = ${at(graceEnds)} WHERE "tokenHash" = ${refreshHash}`);
    yield* send(sql`INSERT INTO "PasswordRefreshToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${successorHash}, ${row.id}, ${at(successorExpiresAt)})`);
    yield* send(sql`UPDATE "PasswordSession" SET "lastUsedAt" = ${at(now)}, "expiresAt" = ${at(successorExpiresAt)} WHERE "id" = ${row.id}`);
  } else {
    kind = "retried";
    // Within the grace the successor is still there: its own grace, should it be spent too, ends after this one's.
    const successor = yield* get(tables.PasswordRefreshToken.pick("expiresAt"), sql`SELECT "expiresAt" FROM "PasswordRefreshToken"
      WHERE "tokenHash" = ${successorHash} AND "sessionId" = ${row.id}`);
    if (!successor) return { kind: "revoked" };
    successorExpiresAt = successor.expiresAt;
  }
  yield* send(sql`INSERT INTO "PasswordAccessToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${step.accessHash}, ${row.id}, ${at(step.accessExpiresAt)})`);
  const session = toSession(row);
  return {
    kind,
    successorExpiresAt,
    account: toAccount(row),
    session: kind === "rotated" ? { ...session, lastUsedAt: now, expiresAt: successorExpiresAt } : session,
  };
}
