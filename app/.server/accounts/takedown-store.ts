/**
 * The operator's takedowns (docs/decisions/0051; com.atproto.admin.updateSubjectStatus and getSubjectStatus): of an
 * account, of one record, of one blob. A takedown's `ref` is the operator's reference or reason
 * (com.atproto.admin.defs#statusAttr); null takes it back.
 */
export type TakedownChange = { ref: string } | null;

export interface TakedownStore {
  /**
   * One transaction, under the locks a sign-in and every commit of the account take (credentials, then data): the
   * account is marked taken down (or not), and on a takedown every browser session, authorization code and grant
   * (with its tokens) of the account is deleted; when the account's state changed, the #account event saying its new
   * status is appended. A takedown of a taken-down account only replaces its reference and appends nothing.
   */
  changeAccountTakedown(did: string, change: TakedownChange, now: number): Promise<{ found: boolean; changed: boolean }>;
  /** Takes a record down (or restores it); false when the account has no record at that key. */
  changeRecordTakedown(did: string, collection: string, rkey: string, change: TakedownChange): Promise<boolean>;
  /** The record's CID and takedown reference (null: served); undefined when there is no such record. */
  recordTakedown(did: string, collection: string, rkey: string): Promise<{ cid: string; ref: string | null } | undefined>;
  /** Takes an account's blob down (or restores it); false when the account has no blob of that CID. */
  changeBlobTakedown(did: string, cid: string, change: TakedownChange): Promise<boolean>;
  /** The blob's takedown reference (null: served); undefined when the account has no blob of that CID. */
  blobTakedown(did: string, cid: string): Promise<{ ref: string | null } | undefined>;
}
