export type ChallengePurpose = "authenticate" | "register";

/**
 * What a challenge was issued for. Consuming it needs the same purpose and
 * exactly the same binding: every field equal, absent ones absent.
 */
export type ChallengeBinding = {
  /** The authorization request (hashed request_uri) a consent-screen sign-in belongs to. */
  requestIdHash?: string;
  /** The account a registration belongs to. */
  accountDid?: string;
  /** The browser session (hashed id) a re-authentication belongs to (docs/decisions/0007). */
  sessionIdHash?: string;
};

export interface ChallengeStore {
  /** A fresh challenge (base64url) for `purpose` and `binding`, usable until `lifetimeMs` from now. */
  issue(purpose: ChallengePurpose, binding: ChallengeBinding, lifetimeMs: number): string;
  /**
   * Spends a live challenge issued for exactly this purpose and binding.
   * True for the one caller that wins (docs/decisions/0002); false for unknown,
   * forged, expired, already spent, or bound to something else.
   */
  consume(challenge: string, purpose: ChallengePurpose, binding: ChallengeBinding): Promise<boolean>;
}
