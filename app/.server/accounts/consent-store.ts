import { formatItem, parseItems, scopeCovers, type PermissionItem } from "../oauth/scopes/permission-items.ts";

/**
 * What an account has allowed a client, across its approvals, the optional values the person unticked
 * (docs/decisions/0032), both space-separated scope values, and the permissions the person took back since
 * (docs/decisions/0053: oauth/scopes/permission-items.ts). Times are epoch milliseconds.
 */
export type StoredConsent = { clientId: string; scope: string; declined: string; withdrawn: string; createdAt: number; updatedAt: number };

/** One approval: the scope values granted, and the optional values of the request the person declined. */
export type ConsentAnswer = { granted: readonly string[]; declined: readonly string[] };

function valuesOf(text: string): string[] {
  return text.split(" ").filter(Boolean);
}

/**
 * What the consent holds after an approval: the latest answer about a value wins. Granted values join the scope and
 * leave the declined ones; declined values leave the scope (the person said no this time, whatever they said before)
 * and join the declined ones. A permission taken back is given back by an answer about all of it: an approval that
 * grants, or declines, values covering it (docs/decisions/0053); one that only reaches part of it leaves it taken
 * back. Every store applies this, inside its atomic step.
 */
export function mergedConsent(
  existing: Pick<StoredConsent, "scope" | "declined" | "withdrawn"> | undefined,
  answer: ConsentAnswer,
): Pick<StoredConsent, "scope" | "declined" | "withdrawn"> {
  const granted = new Set(answer.granted);
  const declined = new Set(answer.declined);
  const scope = [...valuesOf(existing?.scope ?? "").filter((value) => !declined.has(value)), ...granted];
  const stillDeclined = [...valuesOf(existing?.declined ?? "").filter((value) => !granted.has(value)), ...declined];
  const answered = [...granted, ...declined].join(" ");
  const stillWithdrawn = parseItems(existing?.withdrawn ?? "").filter((item) => !scopeCovers(answered, item));
  return { scope: [...new Set(scope)].join(" "), declined: [...new Set(stillDeclined)].join(" "), withdrawn: stillWithdrawn.map(formatItem).join(" ") };
}

export interface ConsentStore {
  /**
   * Records an approval in what the account allowed the client (`mergedConsent`); concurrent approvals never lose
   * one another's values. `firstTime`: the account had allowed the client nothing before (or not since it was
   * disconnected): a new app (docs/decisions/0053).
   */
  remember(accountDid: string, clientId: string, answer: ConsentAnswer, now: number): Promise<{ firstTime: boolean }>;
  find(accountDid: string, clientId: string): Promise<StoredConsent | undefined>;
  /** The account's remembered consents, most recently changed first. */
  list(accountDid: string): Promise<StoredConsent[]>;
  /**
   * Disconnects the app, in one atomic step: ends every grant the account
   * gave it (with their tokens), the codes not yet redeemed, and the
   * remembered consent. What ended.
   */
  forget(accountDid: string, clientId: string): Promise<{ grants: number; consent: boolean }>;
  /**
   * Takes permissions back from the app (docs/decisions/0053), in one atomic step with remembering and other
   * narrowings: they join what the remembered consent and every live grant of the app hold as taken back, so that its
   * tokens are refused them at their next call and its next refresh says so, and its codes not yet redeemed end (a
   * grant made from one would not carry them). Nothing happens, and undefined is returned, when the app is not
   * connected; otherwise how many grants were narrowed.
   */
  withdraw(accountDid: string, clientId: string, items: readonly PermissionItem[], now: number): Promise<{ grants: number } | undefined>;
}
