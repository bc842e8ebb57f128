/**
 * What the new-sign-in and new-app emails keep (docs/decisions/0056): each account's setting and whether a browser
 * has signed in to it yet, and the one-click links of the emails sent. Times are epoch milliseconds.
 */

/**
 * What one link ends: a browser (the SHA-256 of its device id for the account: every session it signed in with), or
 * an app's access (its client_id, consented to at `since`).
 */
export type EndTarget = { kind: "browser"; deviceHash: string } | { kind: "app"; clientId: string; since: number };

/** A link as stored: only its token's SHA-256; `label` is what the email called the browser or app. */
export type StoredEndLink = {
  tokenHash: string;
  accountDid: string;
  target: EndTarget;
  label: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
};

/** Who an email goes to, and whether they want it. */
export type NoticeRecipient = { handle: string; email: string; signInNotices: boolean };

export interface NoticeStore {
  /**
   * Records that a browser has signed in to the account, in one conditional statement: true when it is the first
   * (the account had none before), which is told of nothing; false for every later one, whatever runs at once.
   */
  claimFirstBrowser(accountDid: string, now: number): Promise<boolean>;
  recipient(accountDid: string): Promise<NoticeRecipient | undefined>;
  setSignInNotices(accountDid: string, on: boolean, now: number): Promise<void>;
  /** Stores a link (and drops a few of any account that expired more than 30 days ago). */
  addLink(link: Omit<StoredEndLink, "usedAt">): Promise<void>;
  /** The link, used or not, expired or not, while its row lasts; with its account's handle. */
  findLink(tokenHash: string): Promise<(StoredEndLink & { handle: string }) | undefined>;
  /** Spends the link, once: true for the one caller that found it unused and unexpired, whatever runs at once. */
  spendLink(tokenHash: string, now: number): Promise<boolean>;
}
