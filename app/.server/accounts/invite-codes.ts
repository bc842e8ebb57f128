import { randomBytes } from "node:crypto";
import { AccountError } from "./account-errors.ts";
import { ADMIN_ACCOUNT, type EarningAccount, type InviteCodeDetail, type InviteCursor, type InviteSort, type InviteStore, type StoredInviteCode } from "./invite-store.ts";
import { AtriumError } from "../errors/atrium-error.ts";

/**
 * Invite codes (docs/decisions/0052), as the reference PDS makes and spends them: `<this server's host name with dashes
 * for dots>-xxxxx-xxxxx`, ten characters of base32 (50 bits) so that nobody guesses one; made by the operator
 * (createInviteCode(s), for nobody in particular: forAccount "admin", or for accounts), or earned by accounts over time
 * when ATRIUM_INVITE_INTERVAL_DAYS is set (getAccountInviteCodes' routine codes). A code of N uses admits exactly N
 * accounts: the store spends each use in the step that stores the account (SqlAccountStore.insert).
 */
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** The reference's bound on an account's unused routine codes at a time. */
export const MAX_UNUSED_ROUTINE_CODES = 5;

/** A new code's random part, `xxxxx-xxxxx`: 256 is a multiple of 32, so every character is equally likely. */
export function randomInvitePart(): string {
  const characters = [...randomBytes(10)].map((byte) => BASE32[byte & 31]!).join("");
  return `${characters.slice(0, 5)}-${characters.slice(5)}`;
}

/** A new code for the server at `hostname` (the reference's format: it does not read as a link). */
export function newInviteCode(hostname: string): string {
  return `${hostname.replaceAll(".", "-")}-${randomInvitePart()}`;
}

/**
 * How many routine codes an account may be given now (the reference's calculateCodesToCreate, without its epoch): one
 * per `intervalMs` of the account's life, less those it was given already, and never more than
 * MAX_UNUSED_ROUTINE_CODES unused at once. The operator's gifts do not count.
 */
export function routineCodesDue(account: Pick<EarningAccount, "createdAt" | "codes">, intervalMs: number, now: number): number {
  const routine = account.codes.filter((code) => code.createdBy !== ADMIN_ACCOUNT);
  const unused = routine.filter((code) => !code.disabled && code.usedCount < code.availableUses);
  const earned = Math.floor(Math.max(0, now - account.createdAt) / intervalMs);
  return Math.max(0, Math.min(MAX_UNUSED_ROUTINE_CODES - unused.length, earned - routine.length));
}

/** An invite code refused at sign-up: the reference's InvalidInviteCode, under the invite field. */
export function inviteRefused(message = "Provided invite code not available"): AccountError {
  return new AccountError("inviteCode_invalid", message, "inviteCode");
}

export type InviteSettings = {
  /** The host names codes begin with (PUBLIC_URL's). */
  hostname: string;
  /** ATRIUM_INVITE_REQUIRED: a sign-up needs a code (the reference's default). */
  required: boolean;
  /** ATRIUM_INVITE_INTERVAL_DAYS: an account earns a code this often; undefined, none. */
  intervalMs?: number;
  now: () => number;
};

/** com.atproto.admin.getInviteCodes' cursor: `<sort value>::<code>`, as the reference's keyset writes it. */
export function parseInviteCursor(cursor: string): InviteCursor {
  const [value, code, ...rest] = cursor.split("::");
  const number = Number(value);
  if (rest.length || !code || !/^\d+$/.test(value ?? "") || !Number.isSafeInteger(number)) {
    throw new AtriumError("invalid_cursor", "Malformed cursor", { status: 400, xrpcName: "InvalidRequest" });
  }
  return { value: number, code };
}

export class InviteCodes {
  constructor(
    private readonly store: InviteStore,
    private readonly settings: InviteSettings,
  ) {}

  get required(): boolean {
    return this.settings.required;
  }

  /** createInviteCode: one code of `useCount` uses for `forAccount` ("admin": for nobody in particular). */
  async create(useCount: number, forAccount = ADMIN_ACCOUNT): Promise<string> {
    const [created] = await this.createMany(1, useCount, [forAccount]);
    return created!.codes[0]!;
  }

  /** createInviteCodes: `codeCount` codes of `useCount` uses for each account (or for nobody in particular). */
  async createMany(codeCount: number, useCount: number, forAccounts: readonly string[] = [ADMIN_ACCOUNT]): Promise<{ account: string; codes: string[] }[]> {
    const now = this.settings.now();
    const made = forAccounts.map((account) => ({ account, codes: Array.from({ length: codeCount }, () => newInviteCode(this.settings.hostname)) }));
    await this.store.insert(
      made.flatMap(({ account, codes }) =>
        codes.map((code): StoredInviteCode => ({ code, availableUses: useCount, usedCount: 0, disabled: false, forAccount: account, createdBy: ADMIN_ACCOUNT, createdAt: now })),
      ),
    );
    return made;
  }

  /** Refuses a code that cannot admit one more account now (checked again, atomically, when the account is stored). */
  async requireAvailable(code: string): Promise<void> {
    if ((await this.store.availability(code)) !== "available") throw inviteRefused();
  }

  /**
   * getAccountInviteCodes: the account's codes, less the disabled ones and, unless `includeUsed`, the used-up ones;
   * with `createAvailable`, first the routine codes it is due (when sign-up needs codes and accounts earn them).
   */
  async ofAccount(did: string, options: { includeUsed: boolean; createAvailable: boolean }): Promise<InviteCodeDetail[]> {
    const { intervalMs } = this.settings;
    if (options.createAvailable && this.settings.required && intervalMs !== undefined) {
      const earned = await this.store.earn(did, (account) => this.routineCodes(account, intervalMs));
      if (earned === undefined) throw new AtriumError("account_not_found", "Account not found", { status: 400, xrpcName: "NotFound" });
    }
    const codes = await this.store.ofAccounts([did]);
    return codes.filter((code) => !code.disabled && (options.includeUsed || code.usedCount < code.availableUses));
  }

  /** The operator page's view of an account's codes (docs/decisions/0051): every one made for it, disabled and used-up ones too. */
  async allOfAccount(did: string): Promise<InviteCodeDetail[]> {
    return this.store.ofAccounts([did]);
  }

  /** An account's routine codes are single-use, and made disabled while the operator turned its invites off (as the reference). */
  private routineCodes(account: EarningAccount, intervalMs: number): StoredInviteCode[] {
    const now = this.settings.now();
    return Array.from({ length: routineCodesDue(account, intervalMs, now) }, () => ({
      code: newInviteCode(this.settings.hostname),
      availableUses: 1,
      usedCount: 0,
      disabled: account.invitesDisabled,
      forAccount: account.did,
      createdBy: account.did,
      createdAt: now,
    }));
  }

  /** com.atproto.admin.getInviteCodes: a page, and the cursor of the next (when the page is full). */
  async page(sort: InviteSort, limit: number, cursor?: string): Promise<{ codes: InviteCodeDetail[]; cursor?: string }> {
    const codes = await this.store.page(sort, limit, cursor === undefined ? undefined : parseInviteCursor(cursor));
    const last = codes.at(-1);
    if (!last || codes.length < limit) return { codes };
    return { codes, cursor: `${sort === "recent" ? last.createdAt : last.usedCount}::${last.code}` };
  }

  /** com.atproto.admin.disableInviteCodes: the operator's own codes cannot be disabled by account (the reference's rule). */
  async disable(selection: { codes: readonly string[]; accounts: readonly string[] }): Promise<void> {
    if (selection.accounts.includes(ADMIN_ACCOUNT)) throw new AtriumError("invalid_request", "cannot disable admin invite codes", { status: 400, xrpcName: "InvalidRequest" });
    await this.store.disable(selection);
  }

  /** com.atproto.admin.disableAccountInvites / enableAccountInvites. */
  async setAccountInvites(did: string, enabled: boolean): Promise<void> {
    if (!(await this.store.setAccountInvitesDisabled(did, !enabled, this.settings.now()))) {
      throw new AtriumError("account_not_found", "Account not found", { status: 400, xrpcName: "NotFound" });
    }
  }
}
