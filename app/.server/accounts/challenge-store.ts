export type ChallengePurpose = "authenticate" | "register";

export type NewChallenge = {
  challenge: string;
  purpose: ChallengePurpose;
  requestIdHash?: string;
  accountDid?: string;
  lifetimeMs: number;
};

export interface ChallengeStore {
  create(challenge: NewChallenge): void;
  /**
   * Spends a live challenge issued for exactly this purpose and binding.
   * True for the one caller that wins (DESIGN 4.1); false for unknown,
   * expired, already spent, or bound to something else.
   */
  consume(challenge: string, binding: { purpose: ChallengePurpose; requestIdHash?: string; accountDid?: string }): boolean;
}
