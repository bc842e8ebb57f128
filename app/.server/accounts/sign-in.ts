import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import { AtriumError } from "../errors/atrium-error.ts";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
import { canonicalIdentifier } from "./identifiers.ts";
import { PasskeyError, type PasskeyManager } from "./passkey-manager.ts";

/** A wrong password: the message never says which part was wrong (code `sign_in_failed`). */
export class SignInError extends AtriumError {
  constructor(message = "The handle, email or password is not right.") {
    super("sign_in_failed", message, { status: 400, field: "password" });
  }
}

/**
 * Every way a person signs in (consent screen, account pages), behind the
 * same throttle: per account and per client address, growing delays. Each
 * attempt is counted before its credentials are checked
 * (docs/decisions/0009-sign-in-attempts-counted-first.md).
 */
export class SignIn {
  constructor(
    private readonly accounts: AccountManager,
    private readonly passkeys: PasskeyManager,
    private readonly throttle: SignInThrottle,
  ) {}

  /**
   * `identifier` is whatever names the account: handle, email or DID, in any
   * case. Attempts count against the account itself, so every alias shares
   * one counter; an identifier that names no account gets a counter of its
   * own and is otherwise treated exactly alike (same checks, same time).
   */
  async withPassword(identifier: string, password: string, address: string | undefined): Promise<AccountSummary> {
    const account = await this.accounts.findByIdentifier(identifier);
    const attempt = this.throttle.claim(account ? { account: account.did } : { typed: canonicalIdentifier(identifier) }, address);
    if (!(await this.accounts.passwordMatches(account?.did, password)) || !account) throw new SignInError();
    this.throttle.succeeded(attempt);
    return account;
  }

  async withPasskey(response: AuthenticationResponseJSON, binding: { requestIdHash?: string }, address: string | undefined): Promise<AccountSummary> {
    const attempt = this.throttle.claim({ passkey: response.id }, address);
    const did = await this.passkeys.authenticate(response, binding);
    this.throttle.succeeded(attempt);
    const account = await this.accounts.findByDid(did);
    if (!account) throw new PasskeyError("This passkey's account no longer exists");
    return account;
  }
}
