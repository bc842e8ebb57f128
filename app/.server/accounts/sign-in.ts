import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { NO_METRICS, type Metrics } from "../observability/metrics.ts";
import type { ClaimedAttempt, SignInSubject, SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
import { canonicalIdentifier } from "./identifiers.ts";
import { PasskeyError, type PasskeyManager } from "./passkey-manager.ts";

/** A wrong password or passkey: the message never says which part was wrong. */
export class SignInError extends Error {
  constructor(message = "The handle, email or password is not right.") {
    super(message);
    this.name = "SignInError";
  }
}

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
  ) {}

  /**
   * `identifier` is whatever names the account: handle, email or DID, in any
   * case. Attempts count against the account itself, so every alias shares
   * one counter; an identifier that names no account gets a counter of its
   * own and is otherwise treated exactly alike (same checks, same time).
   */
  async withPassword(identifier: string, password: string, address: string | undefined): Promise<AccountSummary> {
    const account = await this.accounts.findByIdentifier(identifier);
    const attempt = this.claim(account ? { account: account.did } : { typed: canonicalIdentifier(identifier) }, address);
    if (!(await this.accounts.passwordMatches(account?.did, password)) || !account) {
      this.metrics.signInFailed("password");
      throw new SignInError();
    }
    this.throttle.succeeded(attempt);
    return account;
  }

  async withPasskey(response: AuthenticationResponseJSON, binding: { requestIdHash?: string }, address: string | undefined): Promise<AccountSummary> {
    const attempt = this.claim({ passkey: response.id }, address);
    let did: string;
    try {
      did = await this.passkeys.authenticate(response, binding);
    } catch (error) {
      if (error instanceof PasskeyError) this.metrics.signInFailed("passkey");
      throw error;
    }
    this.throttle.succeeded(attempt);
    const account = await this.accounts.findByDid(did);
    if (!account) {
      this.metrics.signInFailed("passkey");
      throw new PasskeyError("This passkey's account no longer exists");
    }
    return account;
  }

  private claim(subject: SignInSubject, address: string | undefined): ClaimedAttempt {
    try {
      return this.throttle.claim(subject, address);
    } catch (error) {
      if (error instanceof TooManyRequestsError) this.metrics.rateLimited("sign_in");
      throw error;
    }
  }
}
