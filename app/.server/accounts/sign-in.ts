import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { AtriumError } from "../errors/atrium-error.ts";
import { english } from "../i18n/translate.ts";
import { hasCode } from "../errors/atrium-error.ts";
import { NO_METRICS, type Metrics, type SignInMethod } from "../observability/metrics.ts";
import type { ClaimedAttempt, SignInSubject, SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
import type { AppPasswords } from "./app-passwords.ts";
import type { SessionCredential } from "./password-sessions.ts";
import type { CredentialProof } from "./session-store.ts";
import { canonicalIdentifier } from "./identifiers.ts";
import { PasskeyError, type PasskeyBinding, type PasskeyManager } from "./passkey-manager.ts";
import { accountTakenDown } from "./account-status.ts";

/** A wrong password: the message never says which part was wrong (code `sign_in_failed`). */
export class SignInError extends AtriumError {
  constructor() {
    super("sign_in_failed", english("errors:signIn.failed"), { status: 400, field: "password", messageKey: "errors:signIn.failed" });
  }
}

/** An account that just proved itself, with what it proved: its session is stored only while that still holds. */
export type SignedInAccount = AccountSummary & { proof: CredentialProof };

/**
 * Every way a person signs in (consent screen, account pages), behind the
 * same throttle: per account and per client address, growing delays. Each
 * attempt is counted before its credentials are checked
 * (docs/decisions/0009-sign-in-attempts-counted-first.md). Wrong credentials
 * and throttled attempts are counted for the metrics by method, never by
 * account (docs/decisions/0014).
 */
export class SignIn {
  constructor(
    private readonly accounts: AccountManager,
    private readonly passkeys: PasskeyManager,
    private readonly throttle: SignInThrottle,
    private readonly metrics: Pick<Metrics, "signInFailed" | "rateLimited"> = NO_METRICS,
    /** App passwords, which only password sessions accept (`forPasswordSession`); never the screens. */
    private readonly appPasswords?: AppPasswords,
    /** Whether the operator took the account down (docs/decisions/0051): its password or passkey then signs in nobody. */
    private readonly isTakenDown: (did: string) => Promise<boolean> = async () => false,
  ) {}

  /**
   * `identifier` is whatever names the account: handle, email or DID, in any case. From a browser that signed in to
   * the account before (`knownDevice`), the attempt counts against that browser's own counter only. Otherwise it
   * counts against what was typed and the client address, which refuse visibly, and quietly against the account
   * itself, which every alias shares (docs/decisions/0009, 0023a). An identifier that names no account is treated
   * exactly alike (same checks, same answers, same time).
   */
  async withPassword(
    identifier: string,
    password: string,
    address: string | undefined,
    knownDevice: (accountDid: string) => string | undefined = () => undefined,
  ): Promise<SignedInAccount> {
    const account = await this.accounts.findByIdentifier(identifier);
    const device = account ? knownDevice(account.did) : undefined;
    const attempt = device
      ? await this.claim({ device: { account: account!.did, id: device } }, address)
      : await this.claimPassword(identifier, account?.did, address, () => this.accounts.passwordProof(undefined, password));
    const proof = await this.check(attempt, () => this.accounts.passwordProof(account?.did, password));
    // No account matches no password (passwordProof checks a dummy hash then), so `check` has thrown without one.
    await this.refuseTakenDown(account!.did);
    return { ...account!, proof };
  }

  /**
   * com.atproto.server.createSession (docs/decisions/0047): the account's password or one of its app passwords,
   * counted on the same counters as every sign-in on the screens (what was typed and the client address visibly, the
   * account quietly), so that the XRPC method opens no way around them and no email↔handle oracle. There is no
   * known device here: every attempt counts against the account. The work done is the same whether or not the
   * identifier names an account: an app password's shape costs one more hash, for everyone alike.
   */
  async forPasswordSession(identifier: string, password: string, address: string | undefined): Promise<{ account: AccountSummary; credential: SessionCredential }> {
    const account = await this.accounts.findByIdentifier(identifier);
    const attempt = await this.claimPassword(identifier, account?.did, address, () => this.sessionCredential(undefined, password));
    const credential = await this.check(attempt, () => this.sessionCredential(account?.did, password));
    return { account: account!, credential };
  }

  /** An app password first when what was typed has its shape (what bots sign in with), then the account's password. */
  private async sessionCredential(did: string | undefined, password: string): Promise<SessionCredential | undefined> {
    const appPassword = await this.appPasswords?.check(did, password);
    if (appPassword) return { appPassword };
    return this.accounts.passwordProof(did, password);
  }

  /**
   * A signed-in browser proving its account's password again (a recent
   * authentication, a password change): counted against that browser
   * session's own counter, so neither the address nor anyone guessing the
   * account elsewhere can keep the owner from it.
   */
  async confirmPassword(accountDid: string, password: string, sessionIdHash: string): Promise<void> {
    await this.check(await this.claim({ session: sessionIdHash }, undefined), () => this.accounts.passwordProof(accountDid, password));
  }

  private async check<P>(attempt: ClaimedAttempt, verify: () => Promise<P | undefined>): Promise<P> {
    const proof = await verify();
    if (proof === undefined) {
      await this.failed(attempt, "password");
      throw new SignInError();
    }
    await this.throttle.succeeded(attempt);
    return proof;
  }

  /**
   * A password attempt from a browser the account does not know. While the account's counter is waiting, the
   * password is not checked (guessing stays capped) and the answer is a wrong password's, after the same work
   * (`dummyCheck`: a check of what was typed against dummy hashes; an empty or overlong password is refused at once
   * either way), and the attempt counted as failed on what was typed and the address.
   */
  private async claimPassword(identifier: string, accountDid: string | undefined, address: string | undefined, dummyCheck: () => Promise<unknown>): Promise<ClaimedAttempt> {
    const { attempt, capped } = await this.countRefusals(() => this.throttle.claimPassword(canonicalIdentifier(identifier), accountDid, address));
    if (!capped) return attempt;
    this.metrics.rateLimited("sign_in");
    await dummyCheck();
    await this.throttle.failed(attempt);
    throw new SignInError();
  }

  /** Claims an attempt; a refusal (a wait) is counted as a sign-in rate limit. */
  private async claim(subject: SignInSubject, address: string | undefined): Promise<ClaimedAttempt> {
    return this.countRefusals(() => this.throttle.claim(subject, address));
  }

  private async countRefusals<T>(claim: () => Promise<T>): Promise<T> {
    try {
      return await claim();
    } catch (error) {
      if (hasCode(error, "temporarily_unavailable")) this.metrics.rateLimited("sign_in");
      throw error;
    }
  }

  private async failed(attempt: ClaimedAttempt, method: SignInMethod): Promise<void> {
    await this.throttle.failed(attempt);
    this.metrics.signInFailed(method);
  }

  async withPasskey(response: AuthenticationResponseJSON, binding: PasskeyBinding, address: string | undefined): Promise<SignedInAccount> {
    const attempt = await this.claim({ passkey: response.id }, address);
    let signed: { accountDid: string; credentialId: string };
    try {
      signed = await this.passkeys.authenticate(response, binding);
    } catch (error) {
      await this.failed(attempt, "passkey");
      throw error;
    }
    await this.throttle.succeeded(attempt);
    const account = await this.accounts.findByDid(signed.accountDid);
    if (!account) {
      this.metrics.signInFailed("passkey");
      throw new PasskeyError("accountGone");
    }
    await this.refuseTakenDown(account.did);
    return { ...account, proof: { passkey: signed.credentialId } };
  }

  /**
   * A taken-down account signs in nowhere on the screens: told so only once the password or passkey proved right, as
   * the reference's OAuth sign-in says "Account was taken down" (the session store refuses it too, should the takedown
   * land meanwhile: SessionStore.create).
   */
  private async refuseTakenDown(did: string): Promise<void> {
    if (await this.isTakenDown(did)) throw accountTakenDown();
  }
}
