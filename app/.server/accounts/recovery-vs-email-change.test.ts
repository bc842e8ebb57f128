import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execute, openTestDatabase, type TestDatabase } from "../../../tests/helpers/databases.ts";
import { at, sql } from "../db/sql.ts";
import type { Mailer } from "../email/mailer.ts";
import { SignInThrottle } from "../security/sign-in-throttle.ts";
import { SqlAttemptStore } from "../stores/sql-attempt-store.ts";
import { SqlEmailUpdateStore } from "../stores/sql-email-update-store.ts";
import { SqlAccountStore } from "../stores/sql-account-store.ts";
import { SqlRecoveryStore } from "../stores/sql-recovery-store.ts";
import { SqlTypedCodeStore } from "../stores/sql-typed-code-store.ts";
import { sha256Base64url } from "../util/crypto.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
import { PasswordRecovery } from "./password-recovery.ts";
import { MAX_CODE_GUESSES, TypedCodes, typedCodeKey } from "./typed-codes.ts";

/**
 * Found in review (docs/decisions/0030): "An email change ends what was mailed to the old address (recovery links and codes)
 * in the same step" (17679ea, docs/decisions/0030) — except a recovery request that read the account before the change
 * committed: PasswordRecovery.request reads the account (and so its email) first, then claims two counters, answers,
 * and only after the answer (setImmediate) issues the link and the typed code and mails them to the address it read.
 * An email change that commits in that window deletes nothing (the link does not exist yet); the fresh link and code
 * then go to the OLD address and keep working after the change. Whoever holds the old mailbox (the reason people
 * change their address) gets a working reset for the account.
 *
 * Now the address is read again once the link and the code exist, so they go to the address the change made, or the
 * change ended them.
 *
 * The interleaving is made deterministic by running the email change inside findByIdentifier, right after the read,
 * which is where a concurrent request's change lands.
 */

const T = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const MINUTE = 60_000;

describe("recovery request racing an email change", () => {
  let test: TestDatabase;
  beforeEach(async () => {
    test = await openTestDatabase("sqlite");
    await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${ALICE}, 'alice.test', 'old@example.com', 'scrypt$alice', '{}', ${at(T)}, ${at(T)})`);
  });
  afterEach(() => test.close());

  it("the old address never receives a recovery link or code that works after the change", async () => {
    const now = () => T + MINUTE;
    const codes = new TypedCodes(new SqlTypedCodeStore(test.db), typedCodeKey("review-secret"), { lifetimeMs: 15 * MINUTE, maxGuesses: MAX_CODE_GUESSES, now });
    const emailCode = await codes.issue(ALICE, "email-update", "new@example.com");
    const emailUpdates = new SqlEmailUpdateStore(test.db);

    const summary: AccountSummary = { did: ALICE, handle: "alice.test", email: "old@example.com" } as AccountSummary;
    const accounts = {
      async findByIdentifier() {
        // The read happened (old address); the person's email change commits now.
        const changed = await emailUpdates.confirm(codes.guessOf(ALICE, "email-update", emailCode)!);
        expect(changed.kind).toBe("updated");
        return summary;
      },
      async findByDid(did: string) {
        return new SqlAccountStore(test.db).profile("did", did);
      },
    } as unknown as AccountManager;
    const sent: Array<{ to: string; text: string }> = [];
    let mailed: () => void = () => {};
    const firstMail = new Promise<void>((resolve) => (mailed = resolve));
    const mailer = {
      send: async (message: { to: string; text: string }) => {
        sent.push(message);
        mailed();
      },
    } as unknown as Mailer;
    let link = "";
    let typed = "";
    const recovery = new PasswordRecovery(
      accounts,
      new SqlRecoveryStore(test.db),
      new SignInThrottle(new SqlAttemptStore(test.db), { freeAttempts: 3, baseDelayMs: MINUTE, maxDelayMs: 60 * MINUTE, memoryMs: 60 * MINUTE }, now, "recovery"),
      mailer,
      {
        issuer: "https://pds.test",
        serviceName: "Atrium",
        lifetimeMs: 15 * MINUTE,
        email: (values) => {
          link = values.link;
          typed = values.code;
          return { subject: "reset", text: `${values.link} ${values.code}` };
        },
        onSendError: (error) => {
          throw error;
        },
        now,
      },
      codes,
    );

    await recovery.request("old@example.com", "203.0.113.1", "en");
    await firstMail;

    const recipient = sent[0]?.to;
    const linkCode = new URL(link).searchParams.get("code")!;
    const linkWorks = (await new SqlRecoveryStore(test.db).find(sha256Base64url(linkCode), now())) === ALICE;
    const codeWorks = await codes.isLive(ALICE, "recovery");
    expect(typed).not.toBe("");
    expect(recipient).toBe("new@example.com");
    expect(recipient === "old@example.com" && (linkWorks || codeWorks)).toBe(false);
  });
});
