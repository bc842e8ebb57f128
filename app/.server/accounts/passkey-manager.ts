import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { z } from "zod";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import { MINUTE } from "../util/time.ts";
import type { AccountSummary } from "./account-manager.ts";
import type { ChallengeStore } from "./challenge-store.ts";
import type { PasskeyStore, StoredPasskey } from "./passkey-store.ts";

/**
 * What a passkey assertion is bound to: one authorization request (consent
 * screen), one browser session re-authenticating (docs/decisions/0007), or
 * nothing (signing in to the account pages).
 */
export type PasskeyBinding = { requestIdHash?: string; sessionIdHash?: string };

/** Why a passkey step failed: the key of its words in the catalogue (errors:passkey.<failure>, docs/decisions/0019). */
export type PasskeyFailure =
  | "malformed"
  | "nameMissing"
  | "nameTooLong"
  | "registrationExpired"
  | "registrationFailed"
  | "notVerified"
  | "alreadyRegistered"
  | "challengeSpent"
  | "unknownPasskey"
  | "verificationFailed"
  | "notFound"
  | "accountGone";

/**
 * A passkey sign-in or registration that failed, with a message a person can act on (code `passkey_failed`). The
 * message is the catalogue's English; the screens show the same key in the person's language.
 */
export class PasskeyError extends AtriumError {
  readonly failure: PasskeyFailure;

  constructor(failure: PasskeyFailure, values?: Record<string, string | number>) {
    const messageKey = `errors:passkey.${failure}` as const;
    super("passkey_failed", englishText(messageKey, values), { status: 400, messageKey, messageValues: values });
    this.failure = failure;
  }
}

/** A name that is not a passkey name: empty, or too long. */
function nameFailure(name: string): PasskeyError {
  return name.trim() ? new PasskeyError("nameTooLong", { count: PASSKEY_NAME_MAX }) : new PasskeyError("nameMissing");
}

export type PasskeySummary = { credentialId: string; name: string; createdAt: Date; lastUsedAt: Date | null; backedUp: boolean };

const CHALLENGE_LIFETIME = 5 * MINUTE;
export const PASSKEY_NAME_MAX = 64;

const passkeyName = z.string().trim().min(1, "Give the passkey a name").max(PASSKEY_NAME_MAX, `Names are at most ${PASSKEY_NAME_MAX} characters`);

/** The browser's WebAuthn answers, checked for shape before the library sees them. */
export const authenticationResponseSchema = z
  .object({
    id: z.string().min(1).max(1024),
    rawId: z.string().min(1).max(1024),
    type: z.literal("public-key"),
    response: z
      .object({
        clientDataJSON: z.string().max(8192),
        authenticatorData: z.string().max(8192),
        signature: z.string().max(1024),
        userHandle: z.string().max(1024).optional(),
      })
      .passthrough(),
    clientExtensionResults: z.record(z.unknown()).default({}),
    authenticatorAttachment: z.string().max(64).optional(),
  })
  .passthrough();

export const registrationResponseSchema = z
  .object({
    id: z.string().min(1).max(1024),
    rawId: z.string().min(1).max(1024),
    type: z.literal("public-key"),
    response: z.object({ clientDataJSON: z.string().max(8192), attestationObject: z.string().max(65536) }).passthrough(),
    clientExtensionResults: z.record(z.unknown()).default({}),
  })
  .passthrough();

/** The challenge the browser signed, read from clientDataJSON (verified again by the library). */
function challengeOf(clientDataJSON: string): string {
  try {
    const data = JSON.parse(Buffer.from(clientDataJSON, "base64url").toString("utf8")) as { challenge?: unknown };
    if (typeof data.challenge === "string" && data.challenge.length <= 512) return data.challenge;
  } catch {
    // fall through
  }
  throw new PasskeyError("malformed");
}

/** The issued challenge's bytes (it is base64url), for the options generators. */
function challengeBytes(challenge: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(challenge, "base64url"));
}

/**
 * Passkeys (WebAuthn) with @simplewebauthn/server: relying party ID is the
 * issuer's host, origin the issuer's origin; discoverable credentials; user
 * verification preferred; counters and backup flags kept. Every challenge is
 * single use, short-lived, and bound to what it was issued for (an
 * authorization request, or an account registering a key).
 */
export class PasskeyManager {
  private readonly rpId: string;

  constructor(
    private readonly store: PasskeyStore,
    private readonly challenges: ChallengeStore,
    private readonly issuer: string,
    private readonly now: () => number = Date.now,
    /** Told of a sign-in refused because the passkey's signature counter did not advance (or it was just removed): the operator's log. */
    private readonly onCounterRefused: (credentialId: string) => void = () => {},
  ) {
    this.rpId = new URL(issuer).hostname;
  }

  async registrationOptions(account: AccountSummary): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.store.list(account.did);
    const challenge = this.challenges.issue("register", { accountDid: account.did }, CHALLENGE_LIFETIME);
    return generateRegistrationOptions({
      rpName: "Atrium",
      rpID: this.rpId,
      userName: account.handle,
      userDisplayName: account.handle,
      userID: new TextEncoder().encode(account.did),
      attestationType: "none",
      excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId })),
      authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
      supportedAlgorithmIDs: [-7, -257],
      // The library sends these bytes base64url-encoded: the browser signs exactly the string issued.
      challenge: challengeBytes(challenge),
    });
  }

  async register(account: AccountSummary, name: string, response: RegistrationResponseJSON): Promise<PasskeySummary> {
    const checkedName = passkeyName.safeParse(name);
    if (!checkedName.success) throw nameFailure(name);
    const challenge = challengeOf(response.response.clientDataJSON);
    if (!(await this.challenges.consume(challenge, "register", { accountDid: account.did }))) {
      throw new PasskeyError("registrationExpired");
    }
    let verification;
    try {
      verification = await verifyRegistrationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.issuer,
        expectedRPID: this.rpId,
        requireUserVerification: false,
      });
    } catch (error) {
      throw new PasskeyError("registrationFailed", { detail: error instanceof Error ? error.message : "verification failed" });
    }
    if (!verification.verified) throw new PasskeyError("notVerified");
    const info = verification.registrationInfo;
    const passkey: StoredPasskey = {
      credentialId: info.credential.id,
      accountDid: account.did,
      name: checkedName.data,
      publicKey: info.credential.publicKey,
      counter: info.credential.counter,
      transports: info.credential.transports ? JSON.stringify(info.credential.transports) : null,
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
      createdAt: this.now(),
      lastUsedAt: null,
    };
    // A credential ID already registered (to this account or another): one message either way.
    if (!(await this.store.insert(passkey))) throw new PasskeyError("alreadyRegistered");
    return summary(passkey);
  }

  /** Options for a sign-in or re-authentication, bound as `binding` says. */
  async authenticationOptions(binding: PasskeyBinding): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const challenge = this.challenges.issue("authenticate", binding, CHALLENGE_LIFETIME);
    return generateAuthenticationOptions({ rpID: this.rpId, userVerification: "preferred", allowCredentials: [], challenge: challengeBytes(challenge) });
  }

  /** Verifies a sign-in and returns the account's DID and the passkey that signed; the challenge is spent whatever the outcome. */
  async authenticate(response: AuthenticationResponseJSON, binding: PasskeyBinding): Promise<{ accountDid: string; credentialId: string }> {
    const challenge = challengeOf(response.response.clientDataJSON);
    if (!(await this.challenges.consume(challenge, "authenticate", binding))) {
      throw new PasskeyError("challengeSpent");
    }
    const passkey = await this.store.find(response.id);
    if (!passkey) throw new PasskeyError("unknownPasskey");
    let verification;
    try {
      verification = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.issuer,
        expectedRPID: this.rpId,
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(passkey.publicKey) as Uint8Array<ArrayBuffer>,
          // The counter is decided once, by the store's UPDATE against the row (recordUse, below), not here against
          // the count read above: 0 lets every count through the library's own check, which would refuse the same
          // counts with an English message that names the stored one.
          counter: 0,
          transports: passkey.transports ? (JSON.parse(passkey.transports) as never) : undefined,
        },
        requireUserVerification: false,
      });
    } catch (error) {
      throw new PasskeyError("verificationFailed", { detail: error instanceof Error ? error.message : "verification failed" });
    }
    if (!verification.verified) throw new PasskeyError("notVerified");
    const { newCounter, credentialBackedUp } = verification.authenticationInfo;
    // Refused when the counter did not advance past the stored one, also when another sign-in recorded it meanwhile:
    // of two answers with one counter, a cloned authenticator's and its original's, only the first signs in.
    if (!(await this.store.recordUse(passkey.credentialId, newCounter, credentialBackedUp, this.now()))) {
      this.onCounterRefused(passkey.credentialId);
      throw new PasskeyError("notVerified");
    }
    return { accountDid: passkey.accountDid, credentialId: passkey.credentialId };
  }

  async list(accountDid: string): Promise<PasskeySummary[]> {
    return (await this.store.list(accountDid)).map(summary);
  }

  async rename(accountDid: string, credentialId: string, name: string): Promise<void> {
    const checked = passkeyName.safeParse(name);
    if (!checked.success) throw nameFailure(name);
    if (!(await this.store.rename(accountDid, credentialId, checked.data))) throw new PasskeyError("notFound");
  }

  async remove(accountDid: string, credentialId: string): Promise<void> {
    if (!(await this.store.remove(accountDid, credentialId))) throw new PasskeyError("notFound");
  }

  /** Whether to offer passkey sign-in: the hinted account has one, or (without a hint) any account does. */
  async offerPasskeys(accountDid?: string): Promise<boolean> {
    return this.store.exists(accountDid);
  }
}

function summary(passkey: StoredPasskey): PasskeySummary {
  const { credentialId, name, createdAt, lastUsedAt, backedUp } = passkey;
  return { credentialId, name, createdAt: new Date(createdAt), lastUsedAt: lastUsedAt === null ? null : new Date(lastUsedAt), backedUp };
}
