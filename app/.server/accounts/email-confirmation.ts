import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager } from "./account-manager.ts";
import type { TypedCodes } from "./typed-codes.ts";

/** The confirmation email in a language: the screens' catalogue writes it (account:emailConfirmation.email). */
export type ConfirmationEmail = (values: { service: string; code: string; minutes: number; handle: string }, language: Language) => { subject: string; text: string };

type ConfirmationRefusal = "unavailable" | "code" | "email";

/**
 * Why a confirmation was refused, with the reference's XRPC names (com.atproto.server.confirmEmail's `InvalidToken`,
 * `InvalidEmail`) and the screens' words beside the code field.
 */
export class EmailConfirmationError extends AtriumError {
  constructor(readonly reason: ConfirmationRefusal) {
    const answers = {
      unavailable: { xrpcName: "InvalidRequest", messageKey: "errors:emailConfirmation.unavailable", field: "form" },
      code: { xrpcName: "InvalidToken", messageKey: "errors:emailConfirmation.invalidCode", field: "code" },
      email: { xrpcName: "InvalidEmail", messageKey: "errors:emailConfirmation.otherEmail", field: "email" },
    }[reason];
    super(`email_confirmation_${reason}`, englishText(answers.messageKey), { status: 400, ...answers });
  }
}

/**
 * Confirming the account's email address (docs/decisions/0052), as com.atproto.server.requestEmailConfirmation and
 * confirmEmail do: a typed code of purpose `email-confirmation` (docs/decisions/0030: ten characters, keyed hash, five
 * guesses, 15 minutes) is mailed to the account's address at sign-up and whenever asked; typing it marks the address
 * confirmed, in one conditional statement that confirms only the address the code was sent to (its `detail`), so a code
 * sent before an email change confirms nothing after it.
 */
export class EmailConfirmation {
  constructor(
    private readonly accounts: AccountManager,
    private readonly codes: TypedCodes,
    private readonly mailer: Mailer | undefined,
    /** Counts the codes sent ("email-confirmation" counters, per account and address): no flood of any mailbox. */
    private readonly throttle: SignInThrottle,
    private readonly options: { serviceName: string; email: ConfirmationEmail; onSendError: (error: unknown) => void },
  ) {}

  /** Whether this server can send the code at all. */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  /** requestEmailConfirmation, and the account page's "Send a code": counted per account and client address, then mailed. */
  async request(accountDid: string, language: Language, address: string | undefined): Promise<void> {
    if (!this.mailer) throw new EmailConfirmationError("unavailable");
    await this.throttle.failed(await this.throttle.claim({ account: accountDid }, address));
    await this.send(accountDid, language);
  }

  /** The code mailed at sign-up: nothing counted (the sign-up was), and a failure to send is reported, never the sign-up's. */
  async sendAtSignUp(accountDid: string, language: Language): Promise<void> {
    if (!this.mailer) return;
    await this.send(accountDid, language).catch(this.options.onSendError);
  }

  /** Whether a code sent for this account may still be typed. */
  async isPending(accountDid: string): Promise<boolean> {
    return this.codes.isLive(accountDid, "email-confirmation");
  }

  /**
   * confirmEmail: `email`, when given (the lexicon's), must be the account's address (any case); then one guess at the
   * code, which confirms the address it was sent to if the account still has it.
   */
  async confirm(accountDid: string, typed: string, email?: string): Promise<void> {
    const account = await this.accounts.findByDid(accountDid);
    if (!account) throw new EmailConfirmationError("code");
    if (email !== undefined && email.trim().toLowerCase() !== account.email) throw new EmailConfirmationError("email");
    const outcome = await this.codes.guess(accountDid, "email-confirmation", typed);
    if (outcome.kind !== "spent" || !outcome.detail) throw new EmailConfirmationError("code");
    if (!(await this.accounts.confirmEmail(accountDid, outcome.detail))) throw new EmailConfirmationError("code");
  }

  private async send(accountDid: string, language: Language): Promise<void> {
    const account = await this.accounts.findByDid(accountDid);
    if (!account || !this.mailer) return;
    const code = await this.codes.issue(accountDid, "email-confirmation", account.email);
    const minutes = Math.round(this.codes.lifetimeMs / 60_000);
    await this.mailer.send({ to: account.email, ...this.options.email({ service: this.options.serviceName, code, minutes, handle: account.handle }, language) });
  }
}
