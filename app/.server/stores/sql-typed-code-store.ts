import type { CodePurpose, Guess, GuessOutcome, StoredTypedCode, TypedCodeStore } from "../accounts/typed-code-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { safeEqual } from "../util/crypto.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const cleanupCodes = expiredRowsCleanup("TypedCode", ["accountDid", "purpose"]);

/** Codes a person types (docs/decisions/0030): one row per (account, purpose), keyed hash, guess counter, single use. */
export class SqlTypedCodeStore implements TypedCodeStore {
  constructor(private readonly db: Database) {}

  async issue(code: StoredTypedCode) {
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupCodes(code.createdAt));
      // The primary key (account, purpose) makes the replacement one statement: two issues at once leave exactly one
      // code, the later one, on both engines (a unique-key upsert needs no lock).
      yield* run(sql`INSERT INTO "TypedCode" ("accountDid", "purpose", "codeHash", "detail", "guesses", "createdAt", "expiresAt")
        VALUES (${code.accountDid}, ${code.purpose}, ${code.codeHash}, ${code.detail}, 0, ${at(code.createdAt)}, ${at(code.expiresAt)})
        ON CONFLICT ("accountDid", "purpose") DO UPDATE SET "codeHash" = excluded."codeHash", "detail" = excluded."detail",
          "guesses" = 0, "createdAt" = excluded."createdAt", "expiresAt" = excluded."expiresAt"`);
    });
  }

  async guess(guess: Guess) {
    return this.db.transaction(() => guessTypedCode(guess));
  }

  async findLive(accountDid: string, purpose: CodePurpose, now: number, maxGuesses: number) {
    return this.db.execute(function* (): Program<{ detail: string | null } | undefined> {
      return yield* get(tables.TypedCode.pick("detail"), sql`SELECT "detail" FROM "TypedCode" WHERE "accountDid" = ${accountDid}
        AND "purpose" = ${purpose} AND "expiresAt" > ${at(now)} AND "guesses" < ${maxGuesses}`);
    });
  }
}

/**
 * The guess as a program, for stores whose own single-use step spends a code in the same transaction (deleting an
 * account, changing its email). A wrong guess is counted even though nothing else happens; a right one deletes the
 * row, so the code works once.
 */
export function* guessTypedCode(guess: Guess): Program<GuessOutcome> {
  const { accountDid, purpose, codeHash, now, maxGuesses } = guess;
  // The conditional UPDATE counts the guess and decides the race (docs/decisions/0017): on PostgreSQL a concurrent
  // guess waits for this row and re-checks "guesses" < max after this one commits, so at most maxGuesses guesses are
  // ever compared, whatever the number of connections, processes or client addresses.
  const row = yield* get(tables.TypedCode.pick("codeHash", "detail"), sql`UPDATE "TypedCode" SET "guesses" = "guesses" + 1
    WHERE "accountDid" = ${accountDid} AND "purpose" = ${purpose} AND "expiresAt" > ${at(now)} AND "guesses" < ${maxGuesses}
    RETURNING "codeHash", "detail"`);
  if (!row) return { kind: "none" };
  if (!safeEqual(row.codeHash, codeHash)) return { kind: "wrong" };
  yield* run(sql`DELETE FROM "TypedCode" WHERE "accountDid" = ${accountDid} AND "purpose" = ${purpose}`);
  return { kind: "spent", detail: row.detail };
}

/** Removes the account's code for a purpose (a reset by link makes the emailed code useless too). */
export function* forgetTypedCode(accountDid: string, purpose: CodePurpose): Program<void> {
  yield* run(sql`DELETE FROM "TypedCode" WHERE "accountDid" = ${accountDid} AND "purpose" = ${purpose}`);
}
