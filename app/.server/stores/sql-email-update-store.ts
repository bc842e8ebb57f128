import type { EmailUpdateOutcome, EmailUpdateStore } from "../accounts/email-update-store.ts";
import type { Guess } from "../accounts/typed-code-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { forgetTypedCode, guessTypedCode } from "./sql-typed-code-store.ts";
import { lockIdentifiers } from "./locks.ts";

/** Changing an account's email address with a code sent to the new one (docs/decisions/0030). */
export class SqlEmailUpdateStore implements EmailUpdateStore {
  constructor(private readonly db: Database) {}

  async confirm(guess: Guess) {
    return this.db.transaction(function* (): Program<EmailUpdateOutcome> {
      const outcome = yield* guessTypedCode({ ...guess, purpose: "email-update" });
      if (outcome.kind !== "spent" || !outcome.detail) return { kind: "invalid" };
      const email = outcome.detail;
      // The lock account creation takes for the address too (SqlAccountStore.insert): two accounts claiming one
      // address, or a claim and a new account, take turns; the second then finds it taken. Emails are stored in lower
      // case (identifiers.ts), so the comparison is case-insensitive; the unique index stays the last word.
      yield* lockIdentifiers(email);
      const holder = yield* get(tables.Account.pick("did"), sql`SELECT "did" FROM "Account" WHERE "email" = ${email}`);
      if (holder && holder.did !== guess.accountDid) return { kind: "taken", email };
      const current = yield* get(tables.Account.pick("email"), sql`SELECT "email" FROM "Account" WHERE "did" = ${guess.accountDid}`);
      if (!current) return { kind: "invalid" };
      yield* run(sql`UPDATE "Account" SET "email" = ${email}, "emailConfirmedAt" = ${at(guess.now)}, "updatedAt" = ${at(guess.now)}
        WHERE "did" = ${guess.accountDid}`);
      // What was mailed to the old address stops working with it: recovery links and codes, a deletion code, a sign-in
      // code (docs/decisions/0047).
      yield* run(sql`DELETE FROM "RecoveryCode" WHERE "accountDid" = ${guess.accountDid} AND "usedAt" IS NULL`);
      yield* forgetTypedCode(guess.accountDid, "recovery");
      yield* forgetTypedCode(guess.accountDid, "account-deletion");
      yield* forgetTypedCode(guess.accountDid, "sign-in");
      return { kind: "updated", previous: current.email, email };
    });
  }
}
