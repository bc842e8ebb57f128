import type { InviteCodeRow } from "../db/rows.generated.ts";

/** The forAccount and createdBy of codes the operator made (the reference's). */
export const ADMIN_ACCOUNT = "admin";

/** An invite code as stored (docs/decisions/0052). Times are epoch milliseconds. */
export type StoredInviteCode = InviteCodeRow;

/** One account an invite code admitted. */
export type InviteUse = { usedBy: string; usedAt: number };

/** A code with the accounts it admitted, newest first (com.atproto.server.defs#inviteCode). */
export type InviteCodeDetail = StoredInviteCode & { uses: InviteUse[] };

/** Whether a code may admit one more account now: the reference refuses the three alike (InvalidInviteCode). */
export type InviteAvailability = "available" | "unknown" | "disabled" | "used-up";

/** com.atproto.admin.getInviteCodes' orders: newest first, or most used first; ties by code, descending. */
export type InviteSort = "recent" | "usage";

/** Where a page of codes starts: after the code `code` whose sort value (creation time or uses) was `value`. */
export type InviteCursor = { value: number; code: string };

/** What the routine codes of an account are decided from (InviteCodes.earn). */
export type EarningAccount = { did: string; createdAt: number; invitesDisabled: boolean; codes: InviteCodeDetail[] };

/** Invite codes, their uses, and the account flag that disables the ones an account earns. */
export interface InviteStore {
  /** Stores new codes (all or none). */
  insert(codes: readonly StoredInviteCode[]): Promise<void>;
  /**
   * The account's routine codes (those it earned, not the operator's gifts) in one step under a lock of the account:
   * `plan` sees the account and its codes and says which to add, so that two calls at once add them once. Undefined
   * when no such account; otherwise the codes added.
   */
  earn(did: string, plan: (account: EarningAccount) => StoredInviteCode[]): Promise<StoredInviteCode[] | undefined>;
  /** Whether `code` may admit one more account now. */
  availability(code: string): Promise<InviteAvailability>;
  /** Every code made for these accounts, with their uses. */
  ofAccounts(dids: readonly string[]): Promise<InviteCodeDetail[]>;
  /** A page of every code, in `sort` order, after `cursor`. */
  page(sort: InviteSort, limit: number, cursor?: InviteCursor): Promise<InviteCodeDetail[]>;
  /** Disables the codes named and every code made for the accounts named. */
  disable(selection: { codes: readonly string[]; accounts: readonly string[] }): Promise<void>;
  /** Sets the account's flag; false when there is no such account. */
  setAccountInvitesDisabled(did: string, disabled: boolean, now: number): Promise<boolean>;
}
