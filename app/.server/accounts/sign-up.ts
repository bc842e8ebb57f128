import type { Language } from "../../i18n/languages.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import { limitBucketOf } from "../http/forwarded-address.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import type { Captcha } from "../security/captcha.ts";
import type { LimitStore } from "../security/limit-store.ts";
import { HOUR, MINUTE, SECOND } from "../util/time.ts";
import { AccountError } from "./account-errors.ts";
import { parseRecoveryKeyField, type AccountManager, type CreatedAccount } from "./account-manager.ts";
import type { EmailConfirmation } from "./email-confirmation.ts";
import type { HandleRules } from "./handle-rules.ts";
import { emailSchema } from "./identifiers.ts";
import { inviteRefused, type InviteCodes } from "./invite-codes.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./password.ts";

/** The fields of a sign-up, as the form and createAccount name them. */
export type SignUpField = "handle" | "email" | "password" | "inviteCode" | "recoveryKey" | "captcha";

export type SignUpInput = { handle: string; email: string; password: string; inviteCode?: string; recoveryKey?: string };

/**
 * Where a sign-up comes from: the screens answer a captcha when one is set (its widget's answer, "" when the form
 * carried none); createAccount over XRPC has none to answer, as the reference's.
 */
export type SignUpContext = { address: string | undefined; language: Language; captchaToken?: string };

export type SignUpSettings = { enabled: boolean; perAddressPerHour: number };

/** Sign-up turned off by the operator (ATRIUM_SIGNUP=off): the screens say so, createAccount answers it. */
export class SignUpClosedError extends AtriumError {
  constructor() {
    super("sign_up_closed", englishText("errors:signUp.closed"), { status: 403, xrpcName: "Forbidden", messageKey: "errors:signUp.closed" });
  }
}

/** A captcha not answered, or answered wrong: beside the widget. */
export class CaptchaRefusedError extends AtriumError {
  constructor() {
    super("captcha_refused", englishText("errors:signUp.captcha"), { status: 400, field: "captcha", messageKey: "errors:signUp.captcha" });
  }
}

/**
 * People creating accounts here (docs/decisions/0052): the sign-up screens (in the OAuth flow with prompt=create, and
 * on /account) and com.atproto.server.createAccount, one rule for both. Every check that can refuse is made before the
 * DID is registered at the PLC directory, cheapest first — the fields, the handle and email free, the invite code, the
 * captcha, the client address's budget — so that a refusal leaves nothing anywhere; the invite's use is spent in the
 * step that stores the account, and a race lost there (the handle, the email or the code's last use taken meanwhile)
 * tombstones the DID just registered (AccountManager.create, docs/decisions/0030). A code to confirm the address is
 * mailed once the account exists.
 */
export class SignUp {
  constructor(
    private readonly accounts: AccountManager,
    private readonly handles: HandleRules,
    private readonly invites: InviteCodes,
    private readonly budget: LimitStore,
    private readonly confirmation: EmailConfirmation,
    private readonly captcha: Captcha | undefined,
    private readonly settings: SignUpSettings,
    private readonly now: () => number,
  ) {}

  get enabled(): boolean {
    return this.settings.enabled;
  }

  get inviteRequired(): boolean {
    return this.invites.required;
  }

  /** The captcha's site key, when the screens must show one. */
  get captchaSiteKey(): string | undefined {
    return this.captcha?.siteKey;
  }

  requireEnabled(): void {
    if (!this.settings.enabled) throw new SignUpClosedError();
  }

  /** The form's first step: the handle as it would be stored, when the rule allows it and no account holds it. */
  async checkHandle(handle: string): Promise<string> {
    this.requireEnabled();
    const normalized = this.handles.check(handle);
    if (await this.accounts.findByHandle(normalized)) throw new AccountError("handle_taken", `Handle already taken: ${normalized}`, "handle");
    return normalized;
  }

  /** The refusals that need no lookup, every field's at once (the form shows each beside its field). */
  fieldErrors(input: SignUpInput): Partial<Record<SignUpField, AtriumError>> {
    const errors: Partial<Record<SignUpField, AtriumError>> = {};
    const refusal = (check: () => unknown): AtriumError | undefined => {
      try {
        check();
        return undefined;
      } catch (error) {
        if (error instanceof AtriumError) return error;
        throw error;
      }
    };
    errors.handle = refusal(() => this.handles.check(input.handle));
    if (!emailSchema.safeParse(input.email).success) errors.email = new AccountError("email_invalid", "This email address is not supported, please use a different email.", "email");
    if (input.password.length < PASSWORD_MIN_LENGTH || input.password.length > PASSWORD_MAX_LENGTH) {
      errors.password = new AccountError("password_invalid", `Password must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`, "password");
    }
    if (this.invites.required && !input.inviteCode) errors.inviteCode = inviteRefused("No invite code provided");
    if (input.recoveryKey) errors.recoveryKey = refusal(() => parseRecoveryKeyField(input.recoveryKey!));
    for (const field of Object.keys(errors) as SignUpField[]) if (!errors[field]) delete errors[field];
    return errors;
  }

  /**
   * Creates the account, or refuses with the first check that fails (nothing registered, nothing stored).
   * `movingIn`: the DID the account already has (createAccount with `did`, its service token checked by the caller:
   * docs/decisions/0055), which the same rules admit without registering anything; a recovery key is then the DID's
   * business and is not read.
   */
  async create(input: SignUpInput, context: SignUpContext, movingIn?: { did: string }): Promise<CreatedAccount> {
    this.requireEnabled();
    const [first] = Object.values(this.fieldErrors(movingIn ? { ...input, recoveryKey: undefined } : input));
    if (first) throw first;
    const inviteCode = this.invites.required ? input.inviteCode!.trim() : undefined;
    const options = {
      inviteCode,
      beforeRegistering: async () => {
        if (inviteCode !== undefined) await this.invites.requireAvailable(inviteCode);
        await this.requireCaptcha(context);
        await this.spendAddressBudget(context.address);
      },
    };
    const fields = { handle: input.handle, email: input.email, password: input.password };
    const account = movingIn
      ? await this.accounts.createMovingIn(movingIn.did, fields, options)
      : await this.accounts.create({ ...fields, recoveryKey: input.recoveryKey || undefined }, options);
    await this.confirmation.sendAtSignUp(account.did, context.language);
    return account;
  }

  private async requireCaptcha(context: SignUpContext): Promise<void> {
    if (!this.captcha || context.captchaToken === undefined) return;
    if (!(await this.captcha.verify(context.captchaToken, context.address))) throw new CaptchaRefusedError();
  }

  /**
   * One account of the address's budget per hour (ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR), decided in the database so
   * that every process counts alike (LimitStore.spendWithin): a script cannot make accounts by the thousand from one
   * address, even with codes or without a captcha. Per IPv6 /64, as every per-address limit here.
   */
  private async spendAddressBudget(address: string | undefined): Promise<void> {
    if (address === undefined) return;
    const now = this.now();
    const limit = this.settings.perAddressPerHour;
    const { spent, counts } = await this.budget.spendWithin([{ key: `sign-up:${limitBucketOf(address)}`, amount: 1, limit, windowEndsAt: now + HOUR }], now);
    if (spent) return;
    const seconds = Math.max(1, Math.ceil((counts[0]!.windowEndsAt - now) / SECOND));
    throw new TooManyRequestsError(`Too many accounts were created from this address: at most ${limit} an hour. Try again in ${Math.ceil(seconds / 60)} minutes.`, seconds, {
      messageKey: "errors:signUp.tooMany",
      messageValues: { count: Math.ceil((seconds * SECOND) / MINUTE) },
    });
  }
}
