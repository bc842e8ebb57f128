import { z } from "zod";
import { AtriumError } from "../errors/atrium-error.ts";
import type { AccountStore, LockdownResult, StoredAccount } from "./account-store.ts";
import { canonicalIdentifier, didSchema, emailSchema, generatePlcDid, handleSchema } from "./identifiers.ts";
import { generateSigningKey } from "./signing-key.ts";
import { hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, verifyAgainstDummy, verifyPassword } from "./password.ts";

export type AccountSummary = { did: string; handle: string; email: string; createdAt: Date };

export type AccountField = "handle" | "email" | "password" | "did";

/**
 * The stable codes of AccountError: a malformed or taken field
 * (`handle_invalid`, `handle_taken`, … for each field), a wrong current
 * password, an identifier that names no account, a command line misused.
 */
export type AccountErrorCode = `${AccountField}_invalid` | `${AccountField}_taken` | "password_wrong" | "account_not_found" | "usage";

/** A refusal a person can act on: taken or malformed handle, email, password. */
export class AccountError extends AtriumError {
  declare readonly field?: AccountField;

  constructor(code: AccountErrorCode, message: string, field?: AccountField) {
    super(code, message, { status: 400, field });
  }
}

const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `password must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .max(PASSWORD_MAX_LENGTH, "password is too long");

export type NewAccount = { handle: string; email: string; password: string; did?: string };

function parseField<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, field: AccountField): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new AccountError(`${field}_invalid`, result.error.issues[0]?.message ?? `invalid ${field}`, field);
  return result.data;
}

/** Where a new account's repository is made (app/.server/repo/repo-writer.ts): its first commit and events. */
export interface Repositories {
  createRepository(account: { did: string; signingKey: string; handle: string }): Promise<void>;
}

export class AccountManager {
  constructor(
    private readonly store: AccountStore,
    private readonly now: () => number = Date.now,
    private readonly repositories?: Repositories,
  ) {}

  async create(input: NewAccount): Promise<AccountSummary> {
    const handle = parseField(handleSchema, input.handle, "handle");
    const email = parseField(emailSchema, input.email, "email");
    const password = parseField(passwordSchema, input.password, "password");
    const did = input.did === undefined ? generatePlcDid() : parseField(didSchema, input.did, "did");

    const account: StoredAccount = {
      did,
      handle,
      email,
      passwordHash: await hashPassword(password),
      emailConfirmedAt: null,
      signingKey: await generateSigningKey(),
      createdAt: this.now(),
    };
    const clash = await this.store.insert(account);
    if (clash === "handle") throw new AccountError("handle_taken", `handle ${handle} is already taken`, "handle");
    if (clash === "email") throw new AccountError("email_taken", `email ${email} is already in use`, "email");
    if (clash === "did") throw new AccountError("did_taken", `did ${did} already has an account`, "did");
    await this.startRepository(account);
    return summary(account);
  }

  /**
   * The account's repository: its first commit, and the #identity and #account events (docs/decisions/0027). A
   * crash before it is made leaves an account that the repository migration at the next start completes.
   */
  private async startRepository(account: StoredAccount): Promise<void> {
    await this.repositories?.createRepository({ did: account.did, signingKey: account.signingKey, handle: account.handle });
  }

  async list(): Promise<AccountSummary[]> {
    return (await this.store.list()).map(summary);
  }

  async findByDid(did: string): Promise<AccountSummary | undefined> {
    const account = await this.store.find("did", did);
    return account ? summary(account) : undefined;
  }

  async findByHandle(handle: string): Promise<AccountSummary | undefined> {
    const parsed = handleSchema.safeParse(handle);
    if (!parsed.success) return undefined;
    const account = await this.store.find("handle", parsed.data);
    return account ? summary(account) : undefined;
  }

  /** Looks up an account by handle, email or DID, as a person types it (any case, with or without "@"). */
  async findByIdentifier(identifier: string): Promise<AccountSummary | undefined> {
    const text = canonicalIdentifier(identifier);
    if (!text || text.length > 254) return undefined;
    const by = text.startsWith("did:") ? "did" : text.includes("@") ? "email" : "handle";
    const account = await this.store.find(by, text);
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

  async emailOf(did: string): Promise<{ email: string; emailConfirmed: boolean } | undefined> {
    const account = await this.store.find("did", did);
    return account ? { email: account.email, emailConfirmed: account.emailConfirmedAt !== null } : undefined;
  }

  async signingKeyOf(did: string): Promise<string | undefined> {
    return (await this.store.find("did", did))?.signingKey;
  }

  /** Changes the account's handle; refuses malformed or taken handles. */
  async updateHandle(did: string, handle: string): Promise<AccountSummary> {
    const normalized = parseField(handleSchema, handle, "handle");
    if (!(await this.store.updateHandle(did, normalized, this.now()))) {
      throw new AccountError("handle_taken", `handle ${normalized} is already taken`, "handle");
    }
    const account = await this.store.find("did", did);
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

  /** Deletes the account and, by cascade, its sessions, codes, grants and tokens. */
  async delete(identifier: string): Promise<AccountSummary> {
    const account = await this.requireAccount(identifier);
    await this.store.delete(account.did);
    return account;
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

export function summary(account: Pick<StoredAccount, "did" | "handle" | "email" | "createdAt">): AccountSummary {
  return { did: account.did, handle: account.handle, email: account.email, createdAt: new Date(account.createdAt) };
}
