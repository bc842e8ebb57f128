import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import type { AccountManager } from "./account-manager.ts";
import type { EmailUpdateStore } from "./email-update-store.ts";
import { emailSchema } from "./identifiers.ts";
import type { TypedCodes } from "./typed-codes.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";

type EmailUpdateErrorReason = "invalid" | "same" | "taken" | "code";

const MESSAGES: Record<EmailUpdateErrorReason, { code: string; messageKey: string; field: string }> = {
  invalid: { code: "email_invalid", messageKey: "errors:emailChange.invalid", field: "email" },
  same: { code: "email_same", messageKey: "errors:emailChange.same", field: "email" },
  taken: { code: "email_taken", messageKey: "errors:emailChange.taken", field: "email" },
  code: { code: "email_code_invalid", messageKey: "errors:emailChange.invalidCode", field: "code" },
};

/** Why a new email address was refused, under the field to correct. */
export class EmailUpdateError extends AtriumError {
  constructor(reason: EmailUpdateErrorReason) {
    const { code, messageKey, field } = MESSAGES[reason];
    super(code, englishText(messageKey), { status: 400, field, messageKey });
  }
}

/** The two emails of a change, in a language: the screens' catalogue writes them (account:emailChange.*Email). */
export type EmailUpdateEmails = {
  /** To the new address: the code that confirms it. */
  confirm(values: { service: string; code: string; minutes: number; handle: string }, language: Language): { subject: string; text: string };
  /** To the old address, once changed: what happened, and what to do if it was not the person. */
  changed(values: { service: string; email: string; handle: string }, language: Language): { subject: string; text: string };
};

export type EmailUpdateOptions = {
  serviceName: string;
  emails: EmailUpdateEmails;
  /** The notice to the old address is sent after the change; its failure goes here. */
  onSendError: (error: unknown) => void;
};

/**
 * Changing an account's email address (docs/decisions/0030, issue 19 item 9), as
 * com.atproto.server.requestEmailUpdate and updateEmail do, but with the address proved: the signed-in person names
 * the new address, a code is emailed to it (an `email-update` typed code whose detail is the address), and typing
 * the code makes it the account's confirmed email in one store step that refuses an address another account holds,
 * case-insensitively, however many claim it at once. The old address then gets a notice.
 */
export class EmailUpdate {
  constructor(
    private readonly accounts: AccountManager,
    private readonly store: EmailUpdateStore,
    private readonly codes: TypedCodes,
    private readonly mailer: Mailer | undefined,
    /** Counts requests for a code (purpose "email-change"), so that they cannot mail any address without end. */
    private readonly throttle: SignInThrottle,
    private readonly options: EmailUpdateOptions,
  ) {}

  /** Whether this server can send the code at all. */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  /**
   * Emails a code to `newEmail` for the account (the earlier one stops working). Refused, before anything is sent,
   * when the address is malformed, already the account's, or another account's: a signed-in person, who proved the
   * password recently, may learn that an address is taken, as at account creation.
   */
  async request(accountDid: string, newEmail: string, language: Language, address: string | undefined): Promise<void> {
    const parsed = emailSchema.safeParse(newEmail);
    if (!parsed.success) throw new EmailUpdateError("invalid");
    const email = parsed.data;
    // Every request counts, before anything is read or sent, on the account's and the client address's counters and
    // on the target address's: three, then waits that grow, as for deletion codes (found in review: without them a
    // signed-in account could mail any address, and probe which addresses have accounts, without end).
    await this.throttle.failed(await this.throttle.claim({ account: accountDid }, address));
    await this.throttle.failed(await this.throttle.claim({ typed: email }, undefined));
    const account = await this.accounts.findByDid(accountDid);
    if (!account || !this.mailer) throw new EmailUpdateError("invalid");
    if (account.email === email) throw new EmailUpdateError("same");
    const holder = await this.accounts.findByIdentifier(email);
    if (holder) throw new EmailUpdateError("taken");
    const code = await this.codes.issue(accountDid, "email-update", email);
    const minutes = Math.round(this.codes.lifetimeMs / 60_000);
    await this.mailer.send({ to: email, ...this.options.emails.confirm({ service: this.options.serviceName, code, minutes, handle: account.handle }, language) });
  }

  /** The new address the account's live code was sent to (the page then asks for the code, naming it), or undefined. */
  async pendingAddress(accountDid: string): Promise<string | undefined> {
    return (await this.codes.liveCode(accountDid, "email-update"))?.detail ?? undefined;
  }

  /** Confirms with the typed code; returns the new address. The old one gets a notice afterwards. */
  async confirm(accountDid: string, typed: string, language: Language): Promise<string> {
    const guess = this.codes.guessOf(accountDid, "email-update", typed);
    if (!guess) throw new EmailUpdateError("code");
    const outcome = await this.store.confirm(guess);
    if (outcome.kind === "invalid") throw new EmailUpdateError("code");
    if (outcome.kind === "taken") throw new EmailUpdateError("taken");
    const account = await this.accounts.findByDid(accountDid);
    if (account && this.mailer) {
      const notice = this.options.emails.changed({ service: this.options.serviceName, email: outcome.email, handle: account.handle }, language);
      this.mailer.send({ to: outcome.previous, ...notice }).catch(this.options.onSendError);
    }
    return outcome.email;
  }
}
