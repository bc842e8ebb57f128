import type { AuthenticationResponseJSON } from "@simplewebauthn/server";
import type { SignInThrottle } from "../security/sign-in-throttle.ts";
import type { AccountManager, AccountSummary } from "./account-manager.ts";
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
 * same throttle: per account and per client address, growing delays.
 */
export class SignIn {
  constructor(
    private readonly accounts: AccountManager,
    private readonly passkeys: PasskeyManager,
    private readonly throttle: SignInThrottle,
  ) {}

  async withPassword(identifier: string, password: string, address: string | undefined): Promise<AccountSummary> {
    this.throttle.assertAllowed(identifier, address);
    const account = await this.accounts.verifyCredentials(identifier, password);
    if (!account) {
      this.throttle.recordFailure(identifier, address);
      throw new SignInError();
    }
    this.throttle.recordSuccess(identifier);
    return account;
  }

  async withPasskey(response: AuthenticationResponseJSON, binding: { requestIdHash?: string }, address: string | undefined): Promise<AccountSummary> {
    const credentialKey = `passkey:${response.id}`;
    this.throttle.assertAllowed(credentialKey, address);
    let did: string;
    try {
      did = await this.passkeys.authenticate(response, binding);
    } catch (error) {
      if (error instanceof PasskeyError) this.throttle.recordFailure(credentialKey, address);
      throw error;
    }
    this.throttle.recordSuccess(credentialKey);
    const account = await this.accounts.findByDid(did);
    if (!account) throw new PasskeyError("This passkey's account no longer exists");
    return account;
  }
}
