import type { EarningAccount, InviteAvailability, InviteCodeDetail, InviteCursor, InviteSort, InviteStore, InviteUse, StoredInviteCode } from "../accounts/invite-store.ts";
import { tables, type InviteCodeUseRow } from "../db/rows.generated.ts";
import { all, at, get, lock, run, sql, statementOf, type Database, type Program, type SqlValue } from "../db/sql.ts";

/**
 * Spends one use of an invite code for the account `usedBy`, as a step of the transaction that stores the account
 * (SqlAccountStore.insert): false, with nothing written, when the code is unknown, disabled or used up. The use is
 * decided by one conditional UPDATE (docs/decisions/0052): on PostgreSQL a concurrent one waits for the row and
 * re-checks "usedCount" < "availableUses" after the first commits, and SQLite runs the transactions one at a time,
 * so a code of N uses admits exactly N accounts, whatever the number of sign-ups, connections or processes at once.
 */
export function* spendInviteUse(code: string, usedBy: string, now: number): Program<boolean> {
  const spent = yield* run(sql`UPDATE "InviteCode" SET "usedCount" = "usedCount" + 1
    WHERE "code" = ${code} AND "disabled" = ${false} AND "usedCount" < "availableUses"`);
  if (spent === 0) return false;
  yield* run(sql`INSERT INTO "InviteCodeUse" ("code", "usedBy", "usedAt") VALUES (${code}, ${usedBy}, ${at(now)})`);
  return true;
}

function* insertCodes(codes: readonly StoredInviteCode[]): Program<void> {
  for (const code of codes) {
    yield* run(sql`INSERT INTO "InviteCode" ("code", "availableUses", "usedCount", "disabled", "forAccount", "createdBy", "createdAt")
      VALUES (${code.code}, ${code.availableUses}, ${code.usedCount}, ${code.disabled}, ${code.forAccount}, ${code.createdBy}, ${at(code.createdAt)})`);
  }
}

/** Attaches to each code its uses, newest first. */
function withUses(codes: readonly StoredInviteCode[], uses: readonly InviteCodeUseRow[]): InviteCodeDetail[] {
  const byCode = new Map<string, InviteUse[]>();
  for (const use of [...uses].sort((a, b) => b.usedAt - a.usedAt)) {
    const list = byCode.get(use.code) ?? [];
    list.push({ usedBy: use.usedBy, usedAt: use.usedAt });
    byCode.set(use.code, list);
  }
  return codes.map((code) => ({ ...code, uses: byCode.get(code.code) ?? [] }));
}

const CODE_COLUMNS = `"code", "availableUses", "usedCount", "disabled", "forAccount", "createdBy", "createdAt"`;

/**
 * The statements of one page of codes and of their uses, for each order, from the start or after a cursor: the codes'
 * page is written once and used twice (the uses are those of the codes in it), so both read the same page.
 */
function pageStatements(column: "createdAt" | "usedCount", after: boolean) {
  const where = after ? `WHERE "${column}" < ? OR ("${column}" = ? AND "code" < ?)` : "";
  const page = `SELECT ${CODE_COLUMNS} FROM "InviteCode" ${where} ORDER BY "${column}" DESC, "code" DESC LIMIT ?`;
  return {
    codes: statementOf(page),
    uses: statementOf(`SELECT "code", "usedBy", "usedAt" FROM "InviteCodeUse" WHERE "code" IN (SELECT "code" FROM (${page}) AS "page")`),
  };
}

const PAGES = {
  recent: { start: pageStatements("createdAt", false), after: pageStatements("createdAt", true) },
  usage: { start: pageStatements("usedCount", false), after: pageStatements("usedCount", true) },
} as const;

/** Invite codes (docs/decisions/0052). */
export class SqlInviteStore implements InviteStore {
  constructor(private readonly db: Database) {}

  async insert(codes: readonly StoredInviteCode[]) {
    return this.db.transaction(() => insertCodes(codes));
  }

  async earn(did: string, plan: (account: EarningAccount) => StoredInviteCode[]) {
    return this.db.transaction(function* (): Program<StoredInviteCode[] | undefined> {
      // Two calls at once for one account take turns: the second sees the codes the first added.
      yield* lock(`invites:${did}`);
      const account = yield* get(tables.Account.pick("did", "createdAt", "invitesDisabled"), sql`SELECT "did", "createdAt", "invitesDisabled" FROM "Account" WHERE "did" = ${did}`);
      if (!account) return undefined;
      const codes = yield* codesOf(did);
      const added = plan({ ...account, codes });
      yield* insertCodes(added);
      return added;
    });
  }

  async availability(code: string) {
    return this.db.execute(function* (): Program<InviteAvailability> {
      const row = yield* get(tables.InviteCode.pick("disabled", "usedCount", "availableUses"), sql`SELECT "disabled", "usedCount", "availableUses" FROM "InviteCode" WHERE "code" = ${code}`);
      if (!row) return "unknown";
      if (row.disabled) return "disabled";
      return row.usedCount < row.availableUses ? "available" : "used-up";
    });
  }

  async ofAccounts(dids: readonly string[]) {
    return this.db.execute(function* (): Program<InviteCodeDetail[]> {
      const found: InviteCodeDetail[] = [];
      for (const did of new Set(dids)) found.push(...(yield* codesOf(did)));
      return found;
    });
  }

  async page(sort: InviteSort, limit: number, cursor?: InviteCursor) {
    return this.db.execute(function* (): Program<InviteCodeDetail[]> {
      const statements = cursor ? PAGES[sort].after : PAGES[sort].start;
      const bound: SqlValue[] = [];
      if (cursor) {
        const value = sort === "recent" ? at(cursor.value) : cursor.value;
        bound.push(value, value, cursor.code);
      }
      bound.push(limit);
      const codes = yield* all(tables.InviteCode, statements.codes(...bound));
      const uses = codes.length ? yield* all(tables.InviteCodeUse, statements.uses(...bound)) : [];
      return withUses(codes, uses);
    });
  }

  async disable(selection: { codes: readonly string[]; accounts: readonly string[] }) {
    return this.db.transaction(function* (): Program<void> {
      for (const code of new Set(selection.codes)) yield* run(sql`UPDATE "InviteCode" SET "disabled" = ${true} WHERE "code" = ${code}`);
      for (const account of new Set(selection.accounts)) yield* run(sql`UPDATE "InviteCode" SET "disabled" = ${true} WHERE "forAccount" = ${account}`);
    });
  }

  async setAccountInvitesDisabled(did: string, disabled: boolean, now: number) {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`UPDATE "Account" SET "invitesDisabled" = ${disabled}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`)) > 0;
    });
  }
}

/** Every code made for one account, with its uses. */
function* codesOf(did: string): Program<InviteCodeDetail[]> {
  const codes = yield* all(tables.InviteCode, sql`SELECT "code", "availableUses", "usedCount", "disabled", "forAccount", "createdBy", "createdAt"
    FROM "InviteCode" WHERE "forAccount" = ${did} ORDER BY "createdAt" ASC, "code" ASC`);
  if (codes.length === 0) return [];
  const uses = yield* all(tables.InviteCodeUse, sql`SELECT "InviteCodeUse"."code", "usedBy", "usedAt" FROM "InviteCodeUse"
    JOIN "InviteCode" ON "InviteCode"."code" = "InviteCodeUse"."code" WHERE "InviteCode"."forAccount" = ${did}`);
  return withUses(codes, uses);
}
