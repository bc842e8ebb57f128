import { z } from "zod";
import type { AccountPageQuery, AccountStore, LockdownResult, OperatorAccountRow, StoredAccount } from "./account-store.ts";
import { AccountError, type AccountErrorCode, type AccountField } from "./account-errors.ts";
import type { IdentityRegistry } from "../identity/plc-identity.ts";
import { canonicalIdentifier, emailSchema, handleSchema } from "./identifiers.ts";
import type { HandleRules } from "./handle-rules.ts";
import { accountKeypair, generateSigningKey, type AccountKeypair, type SigningKeys } from "./signing-key.ts";
import { parseRecoveryKey } from "../identity/rotation-keys.ts";
import { hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, verifyAgainstDummy, verifyPassword } from "./password.ts";

export type AccountSummary = { did: string; handle: string; email: string; createdAt: Date };

/**
 * A new account, with the password hash it was stored with: what a session made for it at once proves (a sign-up's
 * browser session, createAccount's password session: docs/decisions/0052).
 */
export type CreatedAccount = AccountSummary & { proof: { passwordHash: string } };

export { AccountError, type AccountErrorCode, type AccountField };

const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `password must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .max(PASSWORD_MAX_LENGTH, "password is too long");

/** `recoveryKey`: a did:key the person holds, placed above this server's rotation key (docs/decisions/0050). */
export type NewAccount = { handle: string; email: string; password: string; recoveryKey?: string };

/**
 * What a sign-up adds to a plain create (docs/decisions/0052): an invite code, one use of which the store spends in
 * the step that stores the account, and checks to run once the fields are checked and the handle and email found free,
 * before anything is registered at the PLC directory (the invite's availability, a captcha, the address's budget).
 */
export type CreateOptions = { inviteCode?: string; beforeRegistering?: (checked: { handle: string; email: string }) => Promise<void> };

/** A recovery key as the person gave it: a did:key of a curve did:plc accepts, or refused at its field. */
export function parseRecoveryKeyField(text: string): string {
  const parsed = parseRecoveryKey(text);
  if (!parsed.ok) throw new AccountError("recoveryKey_invalid", `recoveryKey ${parsed.reason}`, "recoveryKey");
  return parsed.didKey;
}

function parseField<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, field: AccountField): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new AccountError(`${field}_invalid`, result.error.issues[0]?.message ?? `invalid ${field}`, field);
  return result.data;
}

/** Where a new account's repository is made (app/.server/repo/repo-writer.ts): its first commit and events. */
export interface Repositories {
  createRepository(account: { did: string; signingKey: string; handle: string }, options?: { announced: boolean }): Promise<void>;
}

export type AccountManagerOptions = {
  /** Decides every handle an account takes, at creation and on a change. */
  handles: HandleRules;
  /** Seals the accounts' signing keys in their rows, and opens them to sign (docs/decisions/0050). */
  signingKeys: SigningKeys;
  now?: () => number;
  /** Told after a DID's document changed (a handle change), where the firehose's #identity event is appended. */
  onIdentityChanged?: (did: string) => Promise<void>;
  /** Where a new account's repository is made. */
  repositories?: Repositories;
};

export class AccountManager {
  private readonly handles: HandleRules;
  private readonly signingKeys: SigningKeys;
  private readonly now: () => number;
  private readonly onIdentityChanged: (did: string) => Promise<void>;
  private readonly repositories?: Repositories;

  /**
   * `identity` registers the accounts' DIDs at the PLC directory and keeps their documents' handles current
   * (docs/decisions/0028a-plc-identity.md). `options.handles` decides every handle an account takes, at creation and
   * on a change (accounts/handle-rules.ts).
   */
  constructor(
    private readonly store: AccountStore,
    private readonly identity: IdentityRegistry,
    options: AccountManagerOptions,
  ) {
    this.handles = options.handles;
    this.signingKeys = options.signingKeys;
    this.now = options.now ?? Date.now;
    this.onIdentityChanged = options.onIdentityChanged ?? (async () => {});
    this.repositories = options.repositories;
  }

  /**
   * A new account under a did:plc registered first: the DID is the hash of its signed genesis operation, so the
   * directory must accept it before the account can exist. Nothing is written when the registration fails; a
   * handle or email already taken here is refused before anything is registered, and one taken by a concurrent create
   * after that check gets its registered DID tombstoned (`insertRegistered`). The signing key is sealed for the DID
   * once the DID is known (docs/decisions/0050); a `recoveryKey` goes above this server's rotation key.
   */
  async create(input: NewAccount, options: CreateOptions = {}): Promise<CreatedAccount> {
    const handle = this.handles.check(input.handle);
    const email = parseField(emailSchema, input.email, "email");
    const password = parseField(passwordSchema, input.password, "password");
    const recoveryKey = input.recoveryKey === undefined ? undefined : parseRecoveryKeyField(input.recoveryKey);
    await this.refuseTaken(handle, email);
    await options.beforeRegistering?.({ handle, email });
    const passwordHash = await hashPassword(password);
    const privateJwk = await generateSigningKey();
    const did = await this.identity.register({ handle, signingKey: (await accountKeypair(privateJwk)).did(), recoveryKey });
    const signingKey = this.signingKeys.seal(did, privateJwk);
    const account: StoredAccount = { did, handle, email, passwordHash, emailConfirmedAt: null, signingKey, createdAt: this.now() };
    await this.insertRegistered(account, options.inviteCode);
    await this.startRepository(account);
    return { ...summary(account), proof: { passwordHash } };
  }

  /**
   * An account for a DID that exists already, moving here from another PDS (com.atproto.server.createAccount with
   * `did`, after its service token proved the DID's key: docs/decisions/0055). The same checks as `create`, but
   * nothing is registered and the DID is never touched (nor tombstoned on a refusal: it is the person's, not this
   * server's). The account is stored deactivated, with a fresh signing key of its own (which
   * getRecommendedDidCredentials names for the DID's next operation) and an empty first commit the firehose is not
   * told of, as the reference creates it; importRepo replaces that repository, activateAccount announces it. A DID
   * that already has an account here is refused (`did_taken`).
   */
  async createMovingIn(did: string, input: Omit<NewAccount, "recoveryKey">, options: CreateOptions = {}): Promise<CreatedAccount> {
    const handle = this.handles.check(input.handle);
    const email = parseField(emailSchema, input.email, "email");
    const password = parseField(passwordSchema, input.password, "password");
    await this.refuseTaken(handle, email);
    if (await this.store.profile("did", did)) throw didTaken();
    await options.beforeRegistering?.({ handle, email });
    const passwordHash = await hashPassword(password);
    const now = this.now();
    const signingKey = this.signingKeys.seal(did, await generateSigningKey());
    const account: StoredAccount = { did, handle, email, passwordHash, emailConfirmedAt: null, signingKey, createdAt: now, deactivatedAt: now };
    await this.insert(account, options.inviteCode);
    await this.repositories?.createRepository({ did, signingKey, handle }, { announced: false });
    return { ...summary(account), proof: { passwordHash } };
  }

  /**
   * An account made before DIDs were registered (a random did:plc-shaped identifier the directory never saw): a
   * did:plc is derived from its genesis operation, so that identifier can never be registered. With `newDid`,
   * the account is re-created under a freshly registered DID, keeping its handle, email, password and signing key;
   * what hung on the old DID (sessions, apps, passkeys, records, blobs) is removed with it. Without, refused.
   * An account whose DID the directory knows is left as it is.
   */
  async register(identifier: string, options: { newDid: boolean }): Promise<{ account: AccountSummary; previousDid?: string }> {
    const existing = await this.requireAccount(identifier);
    if (await this.identity.isRegistered(existing.did)) return { account: existing };
    if (!options.newDid) {
      throw new AccountError(
        "did_unregistered",
        `${existing.did} was never registered and cannot be: a did:plc is derived from its first operation. ` +
          "Re-create the account under a new DID with --new-did (its sessions, apps, passkeys, records and blobs are removed).",
        "did",
      );
    }
    const stored = (await this.store.find("did", existing.did))!;
    // The key is kept, sealed again for the new DID (a sealed key opens only for the DID it was sealed for).
    const privateJwk = this.signingKeys.open(existing.did, stored.signingKey);
    const did = await this.identity.register({ handle: stored.handle, signingKey: (await accountKeypair(privateJwk)).did() });
    const account: StoredAccount = { ...stored, did, signingKey: this.signingKeys.seal(did, privateJwk), createdAt: this.now() };
    await this.store.replace(existing.did, account);
    await this.startRepository(account);
    return { account: summary(account), previousDid: existing.did };
  }

  private async refuseTaken(handle: string, email: string): Promise<void> {
    if (await this.store.profile("handle", handle)) throw new AccountError("handle_taken", `handle ${handle} is already taken`, "handle");
    if (await this.store.profile("email", email)) throw new AccountError("email_taken", `email ${email} is already in use`, "email");
  }

  /**
   * Stores an account whose DID was just registered. When the insert fails — a concurrent create took the handle or
   * the email between `refuseTaken` and here (issue 18), or the last use of its invite code (docs/decisions/0052),
   * or the database failed — that DID would stay registered at
   * the directory, naming this PDS, for an account that never existed: it is tombstoned before the refusal goes out
   * (docs/decisions/0030). Should the tombstone fail too, the refusal says which DID was left behind.
   */
  private async insertRegistered(account: StoredAccount, inviteCode?: string): Promise<void> {
    try {
      await this.insert(account, inviteCode);
    } catch (error) {
      throw await this.abandonRegisteredDid(account.did, error);
    }
  }

  private async abandonRegisteredDid(did: string, refusal: unknown): Promise<unknown> {
    try {
      await this.identity.tombstone(did);
      return refusal;
    } catch (failure) {
      const left = `the DID ${did} registered for it could not be tombstoned and stays at the PLC directory (${failure instanceof Error ? failure.message : String(failure)})`;
      if (refusal instanceof AccountError) return new AccountError(refusal.code as AccountErrorCode, `${refusal.message}; ${left}`, refusal.field);
      return new Error(`${refusal instanceof Error ? refusal.message : String(refusal)}; ${left}`, { cause: refusal });
    }
  }

  private async insert(account: StoredAccount, inviteCode?: string): Promise<void> {
    const clash = await this.store.insert(account, inviteCode === undefined ? undefined : { code: inviteCode });
    if (clash === "invite") throw new AccountError("inviteCode_invalid", "Provided invite code not available", "inviteCode");
    if (clash === "handle") throw new AccountError("handle_taken", `handle ${account.handle} is already taken`, "handle");
    if (clash === "email") throw new AccountError("email_taken", `email ${account.email} is already in use`, "email");
    if (clash === "did") throw didTaken();
  }

  /**
   * The account's repository: its first commit, and the #identity and #account events (docs/decisions/0027). A
   * crash before it is made leaves an account that the repository migration at the next start completes.
   */
  private async startRepository(account: StoredAccount): Promise<void> {
    await this.repositories?.createRepository({ did: account.did, signingKey: account.signingKey, handle: account.handle });
  }

  /** One page of the accounts in handle order, as the operator sees them (docs/decisions/0051). */
  async page(query: AccountPageQuery): Promise<OperatorAccountRow[]> {
    return this.store.page(query);
  }

  /** The accounts of these DIDs, as the operator sees them (com.atproto.admin.getAccountInfos). */
  async operatorView(dids: readonly string[]): Promise<OperatorAccountRow[]> {
    return this.store.operatorView(dids);
  }

  /**
   * The operator's change of an account's email (com.atproto.admin.updateAccountEmail): unconfirmed, as the
   * reference leaves it; refuses a malformed or taken address.
   */
  async setEmailByOperator(did: string, email: string): Promise<void> {
    const address = parseField(emailSchema, email, "email");
    const outcome = await this.store.setEmailByOperator(did, address, this.now());
    if (outcome === "taken") throw new AccountError("email_taken", `email ${address} is already in use`, "email");
    if (outcome === "no-account") throw new AccountError("account_not_found", `no account matches ${did}`);
  }

  /**
   * The operator's password reset (com.atproto.admin.updateAccountPassword, pdsadmin account reset-password): every
   * browser session and app grant of the account ends in the same step (docs/decisions/0051).
   */
  async resetPasswordByOperator(did: string, password: string): Promise<void> {
    const checked = parseField(passwordSchema, password, "password");
    if (!(await this.store.resetPasswordByOperator(did, await hashPassword(checked), this.now()))) {
      throw new AccountError("account_not_found", `no account matches ${did}`);
    }
  }

  async findByDid(did: string): Promise<AccountSummary | undefined> {
    const account = await this.store.profile("did", did);
    return account ? summary(account) : undefined;
  }

  async findByHandle(handle: string): Promise<AccountSummary | undefined> {
    const parsed = handleSchema.safeParse(handle);
    if (!parsed.success) return undefined;
    const account = await this.store.profile("handle", parsed.data);
    return account ? summary(account) : undefined;
  }

  /** Looks up an account by handle, email or DID, as a person types it (any case, with or without "@"). */
  async findByIdentifier(identifier: string): Promise<AccountSummary | undefined> {
    const text = canonicalIdentifier(identifier);
    if (!text || text.length > 254) return undefined;
    const by = text.startsWith("did:") ? "did" : text.includes("@") ? "email" : "handle";
    const account = await this.store.profile(by, text);
    return account ? summary(account) : undefined;
  }

  /**
   * The hash `password` matched, when it is the account's (a session made on it checks it again:
   * SessionStore.create); undefined otherwise. For no account (an identifier that named nobody), a check against a
   * dummy hash that takes the same time.
   */
  async passwordProof(did: string | undefined, password: string): Promise<{ passwordHash: string } | undefined> {
    if (password.length === 0 || password.length > PASSWORD_MAX_LENGTH) return undefined;
    const account = did === undefined ? undefined : await this.store.find("did", did);
    if (!account) {
      await verifyAgainstDummy(password);
      return undefined;
    }
    return (await verifyPassword(password, account.passwordHash)) ? { passwordHash: account.passwordHash } : undefined;
  }

  /** What getSession tells an app that may read the email; `emailAuthFactor`: the emailed sign-in code is on (docs/decisions/0047). */
  async emailOf(did: string): Promise<{ email: string; emailConfirmed: boolean; emailAuthFactor: boolean } | undefined> {
    const settings = await this.store.emailSettings(did);
    return settings ? { email: settings.email, emailConfirmed: settings.emailConfirmedAt !== null, emailAuthFactor: settings.emailAuthFactor } : undefined;
  }

  /** Marks the address confirmed if the account still has it (docs/decisions/0052); false otherwise. */
  async confirmEmail(did: string, email: string): Promise<boolean> {
    return this.store.confirmEmail(did, email, this.now());
  }

  /** Turns the emailed sign-in code of password sessions on or off (docs/decisions/0047). */
  async setEmailAuthFactor(did: string, on: boolean): Promise<void> {
    await this.store.setEmailAuthFactor(did, on, this.now());
  }

  /** The account's signing key, opened to sign (its service-auth tokens); undefined when there is no such account. */
  async signingKeypair(did: string): Promise<AccountKeypair | undefined> {
    const account = await this.store.find("did", did);
    return account && this.signingKeys.keypair(did, account.signingKey);
  }

  /**
   * Changes the account's handle; refuses taken handles and those the rules refuse (HandleError: malformed, on a domain
   * not served here, too short or long, reserved). The DID document changes first (a signed PLC
   * update), so that the handle is never claimed here while the network still names the old one; then
   * `onIdentityChanged` (the firehose's #identity event).
   */
  async updateHandle(did: string, handle: string): Promise<AccountSummary> {
    const normalized = this.handles.check(handle);
    const holder = await this.store.profile("handle", normalized);
    if (holder && holder.did !== did) throw new AccountError("handle_taken", `handle ${normalized} is already taken`, "handle");
    const current = await this.store.profile("did", did);
    if (!current) throw new AccountError("account_not_found", `no account matches ${did}`);
    await this.identity.updateHandle(did, normalized);
    if (!(await this.store.updateHandle(did, normalized, this.now()))) {
      // Another account took it between the check and here (the store decides, atomically): this DID's document
      // must not keep naming a handle that resolves to someone else, so it gets its own handle back.
      await this.identity.updateHandle(did, current.handle);
      throw new AccountError("handle_taken", `handle ${normalized} is already taken`, "handle");
    }
    await this.onIdentityChanged(did);
    const account = await this.store.profile("did", did);
    if (!account) throw new AccountError("account_not_found", `no account matches ${did}`);
    return summary(account);
  }

  async setPassword(identifier: string, password: string): Promise<AccountSummary> {
    const account = await this.requireAccount(identifier);
    const checked = parseField(passwordSchema, password, "password");
    await this.store.setPasswordHash(account.did, await hashPassword(checked), this.now());
    return account;
  }

  /**
   * A signed-in person changing their own password: the current one must be right. Every other session of the
   * account ends in the same step (`keepSessionIdHash`: the browser that made the change).
   */
  async changePassword(did: string, currentPassword: string, newPassword: string, keepSessionIdHash: string): Promise<void> {
    const account = await this.store.find("did", did);
    if (!account || !(await verifyPassword(currentPassword, account.passwordHash))) {
      throw new AccountError("password_wrong", "The current password is not right", "password");
    }
    const checked = parseField(passwordSchema, newPassword, "password");
    await this.store.setPasswordHash(did, await hashPassword(checked), this.now(), { keepSessionIdHash });
  }

  /**
   * "Secure your account" after a password change (docs/decisions/0007):
   * removes every passkey, signs out every other browser and, when asked,
   * disconnects every app; all of it or nothing. Keeps only this browser
   * signed in (`keepSessionIdHash`).
   */
  async secure(did: string, keepSessionIdHash: string, options: { disconnectApps: boolean }): Promise<LockdownResult> {
    return this.store.secure(did, keepSessionIdHash, options.disconnectApps);
  }

  private async requireAccount(identifier: string): Promise<AccountSummary> {
    const account = await this.findByIdentifier(identifier);
    if (!account) throw new AccountError("account_not_found", `no account matches ${identifier}`);
    return account;
  }
}

/** The reference's words for a DID that has an account here already (its actor store's "Repo already exists"). */
function didTaken(): AccountError {
  return new AccountError("did_taken", "Repo already exists", "did");
}

export function summary(account: Pick<StoredAccount, "did" | "handle" | "email" | "createdAt">): AccountSummary {
  return { did: account.did, handle: account.handle, email: account.email, createdAt: new Date(account.createdAt) };
}
