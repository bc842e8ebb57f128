import type { Language } from "../../i18n/languages.ts";
import type { Mailer } from "../email/mailer.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager } from "./account-manager.ts";
import type { TypedCodes } from "./typed-codes.ts";

/** The sign-in code's email in a language: the screens' catalogue writes it (account:appPasswords.signInCode.email). */
export type SignInCodeEmail = (values: { service: string; code: string; minutes: number; handle: string }, language: Language) => { subject: string; text: string };

export type EmailAuthFactorOptions = {
  serviceName: string;
  email: SignInCodeEmail;
};

/**
 * The reference's answers when the code is asked for or refused (com.atproto.server.createSession's
 * `AuthFactorTokenRequired`; the official client then asks the person for the code and signs in again with it).
 */
export class AuthFactorError extends AtriumError {
  constructor(reason: "required" | "wrong" | "unavailable") {
    const answers = {
      required: { name: "AuthFactorTokenRequired", message: "A sign-in code has been sent to your email address" },
      wrong: { name: "InvalidToken", message: "The sign-in code is not right, or has expired: sign in again for a new one" },
      unavailable: {
        name: "AuthFactorTokenRequired",
        message: "This account asks for a code by email at sign-in, and this server cannot send email: sign in on the account page and turn the code off",
      },
    }[reason];
    super(`auth_factor_${reason}`, answers.message, { status: 401, xrpcName: answers.name });
  }
}

/**
 * The emailed second factor of password sessions (docs/decisions/0047), as Bluesky's servers offer it: when the person
 * turned it on (in the account area), an app signing in with the account's own password gets `AuthFactorTokenRequired`
 * and a code by email (a typed code of purpose "sign-in": docs/decisions/0030), and signs in with the password and
 * that code. App passwords never need it: they are what the person handed an app already.
 */
export class EmailAuthFactor {
  constructor(
    private readonly accounts: AccountManager,
    private readonly codes: TypedCodes,
    private readonly mailer: Mailer | undefined,
    /** Counts the codes sent ("sign-in-code" counters): a password alone cannot flood the mailbox. */
    private readonly throttle: SignInThrottle,
    private readonly options: EmailAuthFactorOptions,
  ) {}

  /** Whether this server can send the code at all (otherwise the account page cannot turn it on). */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  async isOn(accountDid: string): Promise<boolean> {
    return (await this.accounts.emailOf(accountDid))?.emailAuthFactor ?? false;
  }

  async set(accountDid: string, on: boolean): Promise<void> {
    await this.accounts.setEmailAuthFactor(accountDid, on);
  }

  /**
   * A sign-in with the account's password that proved it, when the code is on: without `typed`, a new code is emailed
   * and the answer asks for it; with it, one guess at the code (five wrong ones kill it, docs/decisions/0030).
   */
  async verify(accountDid: string, typed: string | undefined, address: string | undefined, language: Language): Promise<void> {
    if (!(await this.isOn(accountDid))) return;
    if (typed) {
      const outcome = await this.codes.guess(accountDid, "sign-in", typed);
      if (outcome.kind !== "spent") throw new AuthFactorError("wrong");
      return;
    }
    if (!this.mailer) throw new AuthFactorError("unavailable");
    await this.throttle.failed(await this.throttle.claim({ account: accountDid }, address));
    const account = await this.accounts.findByDid(accountDid);
    if (account) {
      const code = await this.codes.issue(accountDid, "sign-in");
      const minutes = Math.round(this.codes.lifetimeMs / 60_000);
      await this.mailer.send({ to: account.email, ...this.options.email({ service: this.options.serviceName, code, minutes, handle: account.handle }, language) });
    }
    throw new AuthFactorError("required");
  }
}
