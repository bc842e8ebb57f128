/**
 * What an account has allowed a client, across its approvals, and the optional values the person unticked
 * (docs/decisions/0032). Both are space-separated scope values. Times are epoch milliseconds.
 */
export type StoredConsent = { clientId: string; scope: string; declined: string; createdAt: number; updatedAt: number };

/** One approval: the scope values granted, and the optional values of the request the person declined. */
export type ConsentAnswer = { granted: readonly string[]; declined: readonly string[] };

function valuesOf(text: string): string[] {
  return text.split(" ").filter(Boolean);
}

/**
 * What the consent holds after an approval: the latest answer about a value wins. Granted values join the scope and
 * leave the declined ones; declined values leave the scope (the person said no this time, whatever they said before)
 * and join the declined ones. Every store applies this, inside its atomic step.
 */
export function mergedConsent(existing: Pick<StoredConsent, "scope" | "declined"> | undefined, answer: ConsentAnswer): Pick<StoredConsent, "scope" | "declined"> {
  const granted = new Set(answer.granted);
  const declined = new Set(answer.declined);
  const scope = [...valuesOf(existing?.scope ?? "").filter((value) => !declined.has(value)), ...granted];
  const stillDeclined = [...valuesOf(existing?.declined ?? "").filter((value) => !granted.has(value)), ...declined];
  return { scope: [...new Set(scope)].join(" "), declined: [...new Set(stillDeclined)].join(" ") };
}

export interface ConsentStore {
  /**
   * Records an approval in what the account allowed the client (`mergedConsent`); concurrent approvals never lose
   * one another's values.
   */
  remember(accountDid: string, clientId: string, answer: ConsentAnswer, now: number): Promise<void>;
  find(accountDid: string, clientId: string): Promise<StoredConsent | undefined>;
  /** The account's remembered consents, most recently changed first. */
  list(accountDid: string): Promise<StoredConsent[]>;
  /**
   * Disconnects the app, in one atomic step: ends every grant the account
   * gave it (with their tokens), the codes not yet redeemed, and the
   * remembered consent. What ended.
   */
  forget(accountDid: string, clientId: string): Promise<{ grants: number; consent: boolean }>;
}
