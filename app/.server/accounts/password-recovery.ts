import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import type { Language } from "../../i18n/languages.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { Mailer } from "../email/mailer.ts";
import { randomToken, sha256Base64url } from "../util/crypto.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
import { canonicalIdentifier } from "./identifiers.ts";
import { hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./password.ts";
import type { RecoveryResult, RecoveryStore } from "./recovery-store.ts";
import type { TypedCodes } from "./typed-codes.ts";

/** The link expired, was used, or never existed (one answer for all three). */
export class RecoveryError extends AtriumError {
  constructor() {
    super("recovery_code_invalid", englishText("errors:recovery.invalidLink"), { status: 400, field: "form", messageKey: "errors:recovery.invalidLink" });
  }
}

/** A typed code that does not work: wrong, dead, or for nobody (one answer for all, docs/decisions/0030). */
export class RecoveryCodeError extends AtriumError {
  constructor() {
    super("recovery_typed_code_invalid", englishText("errors:recovery.invalidCode"), { status: 400, field: "code", messageKey: "errors:recovery.invalidCode" });
  }
}

/** The recovery email in a language: the screens' catalogue writes it (account:recovery.email), with the link and the code. */
export type RecoveryEmail = (values: { service: string; link: string; code: string; minutes: number; handle: string }, language: Language) => { subject: string; text: string };

export type PasswordRecoveryOptions = {
  issuer: string;
  serviceName: string;
  /** How long a link works (15 minutes). */
  lifetimeMs: number;
  email: RecoveryEmail;
  /** Issuing and sending happen after the answer (the answer must not depend on them); failures go here. */
  onSendError: (error: unknown) => void;
  now?: () => number;
};

/**
 * "Forgot password?" by email (docs/decisions/0020). A request names an account by handle, email or DID; whatever
 * it names, the answer and the work done before answering are the same (the address's throttle claim and the
 * account's or the text's quiet one), and the link is issued and sent after the answer, so neither the words nor
 * the time tell whether an account exists. The link carries a random code of 256 bits; only its
 * SHA-256 is stored; it works once, for `lifetimeMs`, and only the newest link of an account works. Requests and
 * resets are throttled like sign-ins, on counters of their own.
 */
export class PasswordRecovery {
  constructor(
    private readonly accounts: AccountManager,
    private readonly store: RecoveryStore,
    private readonly throttle: SignInThrottle,
    private readonly mailer: Mailer | undefined,
    private readonly options: PasswordRecoveryOptions,
    private readonly typedCodes: TypedCodes,
  ) {}

  /** Whether this server can send the email at all (otherwise the screen says how to reach the operator). */
  get available(): boolean {
    return this.mailer !== undefined;
  }

  /**
   * Sends a link to the account's email address, in `language`, if the identifier names an account; the same answer
   * either way, after the same work: a claim on the client address's counter (the one refusal anyone sees: a 429
   * while it waits) and a quiet claim on the account's (or the typed text's) counter, which caps the emails an
   * account gets without a refusal that would tell which handle and which email belong together. Issuing the code
   * and sending the email happen after the answer, so that their time is not in it.
   */
  async request(identifier: string, address: string | undefined, language: Language): Promise<void> {
    const account = await this.accounts.findByIdentifier(identifier);
    // Every request counts until the memory passes: a mailbox is not flooded, an address cannot probe for long.
    await this.throttle.failed(await this.throttle.claimAddress(address));
    const mailbox = await this.throttle.claimQuietly(account ? { account: account.did } : { typed: canonicalIdentifier(identifier) });
    if (mailbox) await this.throttle.failed(mailbox);
    const recipient = account && mailbox && this.mailer ? account : undefined;
    setImmediate(() => {
      this.afterAnswer(recipient, language).catch(this.options.onSendError);
    });
  }

  /** What follows a request's answer: the link and its email for an account that may get one, else a little cleanup. */
  private async afterAnswer(account: AccountSummary | undefined, language: Language): Promise<void> {
    const now = this.now();
    if (!account || !this.mailer) {
      await this.store.prune(now);
      return;
    }
    const link = await this.issueLink(account.did, now);
    // docs/decisions/0030: beside the link, a code to type where the email cannot be opened (another device).
    const typed = await this.typedCodes.issue(account.did, "recovery");
    // The address is read again after both exist (found in review): an email change ends the recovery links and codes
    // that exist when it commits, so it either ended these, or committed before this read and the new address gets
    // them. Sending to the address read before the answer could mail a working reset to the old mailbox.
    const current = await this.accounts.findByDid(account.did);
    if (!current) return;
    const minutes = Math.round(this.options.lifetimeMs / 60_000);
    const message = this.options.email({ service: this.options.serviceName, link, code: typed, minutes, handle: current.handle }, language);
    await this.mailer.send({ to: current.email, ...message });
  }

  /** A new recovery link for the account (the earlier one stops working); returns its address. */
  private async issueLink(accountDid: string, now: number): Promise<string> {
    const code = randomToken("rec");
    await this.store.issue({ codeHash: sha256Base64url(code), accountDid, createdAt: now, expiresAt: now + this.options.lifetimeMs });
    const link = new URL("/account/reset", this.options.issuer);
    link.searchParams.set("code", code);
    return link.href;
  }

  /**
   * "Enter the code from the email" (docs/decisions/0030): the account's handle, email or DID and the typed code.
   * A right code is spent and exchanged for a fresh link, whose address the browser is sent to (the same
   * new-password page as the emailed link's, which that fresh link replaces). Wrong, dead, or naming nobody: one
   * RecoveryCodeError, after the same work. Counted on the typed text's and the address's recovery counters (a
   * visible 429 while they wait) and on the code's own counter, which no number of aliases or addresses passes.
   */
  async exchangeTypedCode(identifier: string, typed: string, address: string | undefined): Promise<string> {
    const account = await this.accounts.findByIdentifier(identifier);
    const attempt = await this.throttle.claim({ typed: `code:${canonicalIdentifier(identifier)}` }, address);
    const outcome = await this.typedCodes.guess(account?.did ?? "did:none", "recovery", typed);
    if (!account || outcome.kind !== "spent") {
      await this.throttle.failed(attempt);
      throw new RecoveryCodeError();
    }
    await this.throttle.succeeded(attempt);
    return this.issueLink(account.did, this.now());
  }

  /** Whether a link still works (the form is shown only then). */
  async isLive(code: string): Promise<boolean> {
    return (await this.accountOf(code)) !== undefined;
  }

  /** The account a live, unused link resets (its DID), so that the page can name it; nothing for any other code. */
  async accountOf(code: string): Promise<string | undefined> {
    if (!isCodeShaped(code)) return undefined;
    return this.store.find(sha256Base64url(code), this.now());
  }

  /**
   * Sets a new password with a link's code: ends every session of the account and, when asked, removes its
   * passkeys and disconnects its apps, all in one step that spends the code. Throttled per address (and code).
   */
  async reset(code: string, password: string, options: { removePasskeys: boolean; disconnectApps: boolean }, address: string | undefined): Promise<RecoveryResult> {
    const attempt = await this.throttle.claim({ typed: `reset:${code.slice(0, 128)}` }, address);
    if (password.length < PASSWORD_MIN_LENGTH || password.length > PASSWORD_MAX_LENGTH) {
      await this.throttle.succeeded(attempt);
      const words = { messageKey: "errors:form.passwordTooShort", messageValues: { count: PASSWORD_MIN_LENGTH } };
      throw new AtriumError("password_invalid", englishText(words.messageKey, words.messageValues), { status: 400, field: "new_password", ...words });
    }
    const result = isCodeShaped(code) ? await this.store.redeem(sha256Base64url(code), this.now(), { passwordHash: await hashPassword(password), ...options }) : undefined;
    if (!result) {
      await this.throttle.failed(attempt);
      throw new RecoveryError();
    }
    await this.throttle.succeeded(attempt);
    return result;
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}

function isCodeShaped(code: string): boolean {
  return /^rec-[A-Za-z0-9_-]{20,100}$/.test(code);
}
