import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import type { Control, IdentityRegistry } from "../identity/plc-identity.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import { AccountError, type AccountManager, type AccountSummary } from "./account-manager.ts";
import type { AccountDeletionStore } from "./account-deletion-store.ts";
import type { TypedCodes } from "./typed-codes.ts";

const REFUSALS = {
  code: { code: "deletion_code_invalid", field: "code", messageKey: "errors:deletion.invalidCode" },
  password: { code: "password_wrong", field: "password", messageKey: "errors:form.passwordWrong" },
  tombstone: { code: "tombstone_refused", field: "endIdentity", messageKey: "errors:deletion.cannotEnd" },
} as const;

/**
 * The typed code is wrong, spent, expired or guessed out (one answer for all), the password is not right, or the DID
 * was asked to end when this server no longer holds its only rotation key.
 */
export class AccountDeletionError extends AtriumError {
  constructor(reason: keyof typeof REFUSALS) {
    const { code, field, messageKey } = REFUSALS[reason];
    super(code, englishText(messageKey), { status: 400, field, messageKey });
  }
}

/** The deletion email in a language: the screens' catalogue writes it (account:deletion.email). */
export type DeletionEmail = (values: { service: string; code: string; minutes: number; handle: string }, language: Language) => { subject: string; text: string };

export type AccountDeletionOptions = {
  serviceName: string;
  email: DeletionEmail;
  /** Told after the #account event was appended (this process's firehose reads it at once). */
  onDeleted: (did: string, seq: number) => void;
  /**
   * After the deletion committed: deletes the bytes of the blobs it released that no other account has
   * (docs/decisions/0043). Never throws; what it leaves, a later sweep finishes.
   */
  sweepBlobs: () => Promise<void>;
  now: () => number;
};

/**
 * Deleting an account, as com.atproto.server.requestAccountDelete and deleteAccount do (docs/decisions/0030): the
 * signed-in person asks for a code, which is emailed to the account's address, and confirms with that code and the
 * password. Then, in this order:
 *
 * 1. the code is checked (one guess on its counter, not spent: every confirmation counts, so a stolen session
 *    cookie gets at most `maxGuesses` tries at the code, and a person holding the code as many at the password);
 * 2. the password is checked;
 * 3. only when the person asked for it, and this server's rotation key is the DID's only one, the DID is tombstoned
 *    at the PLC directory (idempotent: done again it does nothing);
 * 4. one transaction spends the code, deletes everything keyed by the DID and appends the #account event;
 * 5. the bytes of its blobs are deleted, those no other account has (docs/decisions/0043): the transaction released
 *    them, and the sweep marks, removes and forgets each copy in turn, so a crash leaves work a later sweep finishes.
 *
 * The DID is left as it is by default, as the reference PDS leaves it (docs/decisions/0050): it is the person's
 * identity, which may live on at another server, and the directory is not asked anything, so a DID that moved (this
 * server's key removed from it) never stands in the way. When a tombstone is asked for, the directory comes first:
 * were the database first, a failed directory call would leave a DID naming this PDS for an account nobody can sign
 * in to any more, with nobody left to retry. A failure at 3 changes nothing; a failure at 4 leaves the DID tombstoned
 * and the account here with its code still live, and the retry finds the tombstone done.
 */
export class AccountDeletion {
  constructor(
    private readonly accounts: AccountManager,
    private readonly codes: TypedCodes,
    private readonly store: AccountDeletionStore,
    private readonly identity: IdentityRegistry,
    private readonly mailer: Mailer | undefined,
    /** Counts the requests for a code ("deletion" counters), so that a stolen session cannot flood the mailbox. */
    private readonly throttle: SignInThrottle,
    private readonly options: AccountDeletionOptions,
  ) {}

  private now(): number {
    return this.options.now();
  }

  /** Whether this server can send the code at all (otherwise the page says how to reach the operator). */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  /**
   * requestAccountDelete: a new code (the earlier one stops working), emailed to the account's address in `language`.
   * Every request counts on the account's and the address's "deletion" counters, which refuse visibly (a 429 with
   * its wait: the person is signed in, so the refusal tells nothing new) after three, as password recovery's do.
   */
  async request(did: string, address: string | undefined, language: Language): Promise<void> {
    await this.throttle.failed(await this.throttle.claim({ account: did }, address));
    if (!this.mailer || !(await this.accounts.findByDid(did))) return;
    const code = await this.codes.issue(did, "account-deletion");
    // Read after the code exists, as password recovery does: an email change ends the deletion code that exists when it
    // commits, so the code goes either nowhere that works or to the address the change made.
    const account = await this.accounts.findByDid(did);
    if (!account) return;
    const minutes = Math.round(this.codes.lifetimeMs / 60_000);
    await this.mailer.send({ to: account.email, ...this.options.email({ service: this.options.serviceName, code, minutes, handle: account.handle }, language) });
  }

  /** Whether the account has a code that may still be typed (the page then shows the confirmation form). */
  async hasLiveCode(did: string): Promise<boolean> {
    return this.codes.isLive(did, "account-deletion");
  }

  /**
   * Whether the page may offer to end the DID with the account: only while this server's rotation key is its only one
   * (`sole`), since then nobody else could; otherwise it is the person's, kept or managed elsewhere. The directory not
   * answering offers nothing.
   */
  async identityControl(did: string): Promise<Control | undefined> {
    return this.identity.control(did).catch(() => undefined);
  }

  /** deleteAccount: the code and the password, then the tombstone if asked for, then the deletion (see the class). */
  async confirm(did: string, typedCode: string, password: string, options: { endIdentity?: boolean } = {}): Promise<{ seq: number }> {
    // Something that cannot be a code (a slip of the finger) is refused without counting a guess.
    const guess = this.codes.guessOf(did, "account-deletion", typedCode);
    if (!guess || (await this.store.check(guess)) !== "right") throw new AccountDeletionError("code");
    const proof = await this.accounts.passwordProof(did, password);
    if (!proof) throw new AccountDeletionError("password");
    if (options.endIdentity) await this.endIdentity(did);
    const outcome = await this.store.remove({ did, codeHash: guess.codeHash, passwordHash: proof.passwordHash, now: this.now() });
    if (!outcome.deleted) throw new AccountDeletionError(outcome.reason === "password-changed" ? "password" : "code");
    this.options.onDeleted(did, outcome.seq);
    await this.options.sweepBlobs();
    return { seq: outcome.seq };
  }

  /**
   * `npm run account -- delete`: the operator's deletion, in the same order (the tombstone when asked for, then the
   * one transaction), which also finishes a person's deletion that stopped after the tombstone.
   */
  async deleteByOperator(identifier: string, options: { tombstone?: boolean } = {}): Promise<AccountSummary> {
    const account = await this.accounts.findByIdentifier(identifier);
    if (!account) throw new AccountError("account_not_found", `no account matches ${identifier}`);
    if (options.tombstone) await this.endIdentity(account.did);
    const seq = await this.store.removeByOperator(account.did, this.now());
    if (seq === undefined) throw new AccountError("account_not_found", `no account matches ${identifier}`);
    this.options.onDeleted(account.did, seq);
    await this.options.sweepBlobs();
    return account;
  }

  /**
   * Tombstones the DID, only while this server's rotation key is its only one: a DID with a key of the person's own,
   * or moved elsewhere, is theirs to end or keep. One that is ended already is left so (a retry after a failure).
   */
  private async endIdentity(did: string): Promise<void> {
    const control = await this.identity.control(did);
    if (control === "ended") return;
    if (control !== "sole") throw new AccountDeletionError("tombstone");
    await this.identity.tombstone(did);
  }
}
