import type { AccountState } from "../../accounts/account-status.ts";

/**
 * What the operator page, /admin, renders (docs/decisions/0051). Times are ISO 8601; the components write them in
 * the screen's language.
 */

/** One account as the operator sees it. */
export type OperatorAccount = {
  did: string;
  handle: string;
  email: string;
  emailConfirmed: boolean;
  status: AccountState;
  /** Since when it is taken down or deactivated, when it is. */
  statusSince?: string;
  /** The takedown's reason (the reference's `ref`), when taken down. */
  takedownReason?: string;
  createdAt: string;
  lastSignInAt?: string;
};

/** The sign-in form; `disabled`: this server has no admin password, and the page says how to set one. */
export type AdminSignInView = { kind: "admin-sign-in"; csrfToken: string; disabled: boolean; notice?: string };

/** A page of the accounts: `query` as typed, links to the next and the first page when there are. */
export type AdminAccountsView = {
  kind: "admin-accounts";
  csrfToken: string;
  query: string;
  accounts: OperatorAccount[];
  nextHref?: string;
  firstHref?: string;
  notice?: string;
};

/** One of an account's invite codes, as the operator sees it (docs/decisions/0052). */
export type OperatorInvite = { code: string; used: number; uses: number; disabled: boolean; createdAt: string };

/** One account, its invite codes, and the takedown or untakedown form. */
export type AdminAccountView = { kind: "admin-account"; csrfToken: string; account: OperatorAccount; invites: OperatorInvite[]; notice?: string };

export type AdminView = AdminSignInView | AdminAccountsView | AdminAccountView;
