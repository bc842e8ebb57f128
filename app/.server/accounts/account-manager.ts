import { z } from "zod";
import { AtriumError } from "../errors/atrium-error.ts";
import type { PrismaClient } from "../generated/prisma/client.ts";
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

export class AccountManager {
  constructor(private readonly prisma: PrismaClient) {}

  async create(input: NewAccount): Promise<AccountSummary> {
    const handle = parseField(handleSchema, input.handle, "handle");
    const email = parseField(emailSchema, input.email, "email");
    const password = parseField(passwordSchema, input.password, "password");
    const did = input.did === undefined ? generatePlcDid() : parseField(didSchema, input.did, "did");

    const clash = await this.prisma.account.findFirst({ where: { OR: [{ handle }, { email }, { did }] } });
    if (clash?.handle === handle) throw new AccountError("handle_taken", `handle ${handle} is already taken`, "handle");
    if (clash?.email === email) throw new AccountError("email_taken", `email ${email} is already in use`, "email");
    if (clash?.did === did) throw new AccountError("did_taken", `did ${did} already has an account`, "did");

    const passwordHash = await hashPassword(password);
    const signingKey = await generateSigningKey();
    try {
      const account = await this.prisma.account.create({ data: { did, handle, email, passwordHash, signingKey } });
      return summary(account);
    } catch (error) {
      // A concurrent create took the handle or email between the check and the insert.
      if ((error as { code?: string }).code === "P2002") throw new AccountError("handle_taken", "handle or email is already taken");
      throw error;
    }
  }

  async list(): Promise<AccountSummary[]> {
    const accounts = await this.prisma.account.findMany({ orderBy: { createdAt: "asc" } });
    return accounts.map(summary);
  }

  async findByDid(did: string): Promise<AccountSummary | undefined> {
    const account = await this.prisma.account.findUnique({ where: { did } });
    return account ? summary(account) : undefined;
  }

  async findByHandle(handle: string): Promise<AccountSummary | undefined> {
    const parsed = handleSchema.safeParse(handle);
    if (!parsed.success) return undefined;
    const account = await this.prisma.account.findUnique({ where: { handle: parsed.data } });
    return account ? summary(account) : undefined;
  }

  /** Looks up an account by handle, email or DID, as a person types it (any case, with or without "@"). */
  async findByIdentifier(identifier: string): Promise<AccountSummary | undefined> {
    const text = canonicalIdentifier(identifier);
    if (!text || text.length > 254) return undefined;
    const where = text.startsWith("did:") ? { did: text } : text.includes("@") ? { email: text } : { handle: text };
    const account = await this.prisma.account.findUnique({ where });
    return account ? summary(account) : undefined;
  }

  /**
   * Whether `password` is the account's; for no account (an identifier that
   * named nobody), a check against a dummy hash that takes the same time.
   */
  async passwordMatches(did: string | undefined, password: string): Promise<boolean> {
    if (password.length === 0 || password.length > PASSWORD_MAX_LENGTH) return false;
    const account = did === undefined ? null : await this.prisma.account.findUnique({ where: { did }, select: { passwordHash: true } });
    if (!account) return verifyAgainstDummy(password);
    return verifyPassword(password, account.passwordHash);
  }

  async emailOf(did: string): Promise<{ email: string; emailConfirmed: boolean } | undefined> {
    const account = await this.prisma.account.findUnique({ where: { did }, select: { email: true, emailConfirmedAt: true } });
    return account ? { email: account.email, emailConfirmed: account.emailConfirmedAt !== null } : undefined;
  }

  async signingKeyOf(did: string): Promise<string | undefined> {
    const account = await this.prisma.account.findUnique({ where: { did }, select: { signingKey: true } });
    return account?.signingKey;
  }

  /** Changes the account's handle; refuses malformed or taken handles. */
  async updateHandle(did: string, handle: string): Promise<AccountSummary> {
    const normalized = parseField(handleSchema, handle, "handle");
    const holder = await this.prisma.account.findUnique({ where: { handle: normalized } });
    if (holder && holder.did !== did) throw new AccountError("handle_taken", `handle ${normalized} is already taken`, "handle");
    try {
      return summary(await this.prisma.account.update({ where: { did }, data: { handle: normalized } }));
    } catch (error) {
      if ((error as { code?: string }).code === "P2002") throw new AccountError("handle_taken", `handle ${normalized} is already taken`, "handle");
      throw error;
    }
  }

  async setPassword(identifier: string, password: string): Promise<AccountSummary> {
    const account = await this.requireAccount(identifier);
    const checked = parseField(passwordSchema, password, "password");
    await this.prisma.account.update({ where: { did: account.did }, data: { passwordHash: await hashPassword(checked) } });
    return account;
  }

  /** A signed-in person changing their own password: the current one must be right. */
  async changePassword(did: string, currentPassword: string, newPassword: string): Promise<void> {
    const account = await this.prisma.account.findUnique({ where: { did } });
    if (!account || !(await verifyPassword(currentPassword, account.passwordHash))) {
      throw new AccountError("password_wrong", "The current password is not right", "password");
    }
    const checked = parseField(passwordSchema, newPassword, "password");
    await this.prisma.account.update({ where: { did }, data: { passwordHash: await hashPassword(checked) } });
  }

  /** Deletes the account and, by cascade, its sessions, codes, grants and tokens. */
  async delete(identifier: string): Promise<AccountSummary> {
    const account = await this.requireAccount(identifier);
    await this.prisma.account.delete({ where: { did: account.did } });
    return account;
  }

  private async requireAccount(identifier: string): Promise<AccountSummary> {
    const account = await this.findByIdentifier(identifier);
    if (!account) throw new AccountError("account_not_found", `no account matches ${identifier}`);
    return account;
  }
}

function summary(account: { did: string; handle: string; email: string; createdAt: Date }): AccountSummary {
  return { did: account.did, handle: account.handle, email: account.email, createdAt: account.createdAt };
}
