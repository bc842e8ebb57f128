import { createHash, randomBytes } from "node:crypto";
import { AtriumError } from "../errors/atrium-error.ts";
import { englishText } from "../i18n/translate.ts";
import { randomToken } from "../util/crypto.ts";
import { hasHiddenCharacters } from "../util/visible-text.ts";
import type { AppPasswordStore, ListedAppPassword, StoredAppPassword } from "./app-password-store.ts";
import { hashWithSalt } from "./password.ts";

/**
 * App passwords (com.atproto.server.createAppPassword, docs/decisions/0047): a password of its own for each app, so that
 * an app never holds the account's password and can be cut off alone. As the reference PDS makes them: sixteen
 * characters of base32 in four groups, `abcd-ef23-ghij-k4lm` (80 random bits), shown once; scrypt-hashed with a salt
 * derived from the account's DID, so that a sign-in computes one hash and finds the app password by it.
 */

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const SHAPE = /^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/;
/** The most characters of an app password's name (the Bluesky app's limit). */
export const APP_PASSWORD_NAME_MAX_LENGTH = 32;
/** The salt of the work done for an identifier that names no account (the same work as for one that does). */
const NOBODY = "did:plc:nobody";

/** A new app password: 16 characters of base32 (256 is a multiple of 32: no bias), grouped by four. */
export function newAppPassword(): string {
  const characters = [...randomBytes(16)].map((byte) => ALPHABET[byte & 31]!).join("");
  return characters.match(/.{4}/g)!.join("-");
}

/** What was typed, as the app password it may be (letters in either case), or undefined when it cannot be one. */
export function asAppPassword(typed: string): string | undefined {
  const lower = typed.toLowerCase();
  return SHAPE.test(lower) ? lower : undefined;
}

export type AppPasswordErrorCode = "app_password_name_invalid" | "app_password_name_taken";

/** A name refused for an app password: empty, too long, hidden characters, or already the account's. */
export class AppPasswordError extends AtriumError {
  constructor(code: AppPasswordErrorCode, name: string) {
    const messageKey = code === "app_password_name_taken" ? "errors:appPasswords.nameTaken" : "errors:appPasswords.nameInvalid";
    const messageValues = { name, count: APP_PASSWORD_NAME_MAX_LENGTH };
    super(code, englishText(messageKey, messageValues), { status: 400, xrpcName: "InvalidRequest", field: "name", messageKey, messageValues });
  }
}

/** The name as stored (spaces folded), or undefined when it is refused. */
export function appPasswordName(typed: string): string | undefined {
  const name = typed.trim().replace(/\s+/g, " ");
  if (!name || [...name].length > APP_PASSWORD_NAME_MAX_LENGTH || hasHiddenCharacters(name)) return undefined;
  return name;
}

/** The one created, with its password: the only time it is ever shown. */
export type CreatedAppPassword = { name: string; password: string; createdAt: Date; privileged: boolean };

export class AppPasswords {
  constructor(
    private readonly store: AppPasswordStore,
    private readonly now: () => number = Date.now,
  ) {}

  async create(accountDid: string, typedName: string, privileged: boolean): Promise<CreatedAppPassword> {
    const name = appPasswordName(typedName);
    if (name === undefined) throw new AppPasswordError("app_password_name_invalid", typedName.trim());
    const password = newAppPassword();
    const createdAt = this.now();
    const stored: StoredAppPassword = {
      id: randomToken("app"),
      accountDid,
      name,
      passwordHash: await hashOf(accountDid, password),
      privileged,
      createdAt,
      lastUsedAt: null,
    };
    if (!(await this.store.insert(stored))) throw new AppPasswordError("app_password_name_taken", name);
    return { name, password, createdAt: new Date(createdAt), privileged };
  }

  async list(accountDid: string): Promise<ListedAppPassword[]> {
    return this.store.list(accountDid);
  }

  /** Deletes it; its sessions end with it, at once. */
  async revoke(accountDid: string, name: string): Promise<boolean> {
    return this.store.revoke(accountDid, name);
  }

  /** The account's app password of that id (its page's address names it), if any. */
  async find(accountDid: string, id: string): Promise<ListedAppPassword | undefined> {
    return (await this.store.list(accountDid)).find((one) => one.id === id);
  }

  /**
   * Takes the chat back from the account's privileged app password of that id (docs/decisions/0053): its sessions
   * keep the rest, from their next call and refresh. False when the account has no privileged app password of that id.
   */
  async dropPrivilege(accountDid: string, id: string): Promise<boolean> {
    return this.store.dropPrivilege(accountDid, id);
  }

  /**
   * The account's app password that `typed` is, if any. Something that cannot be an app password costs nothing, for
   * every account alike (its shape is what the caller typed); anything else costs one scrypt hash, for an
   * identifier that names no account (`accountDid` undefined) too.
   */
  async check(accountDid: string | undefined, typed: string): Promise<StoredAppPassword | undefined> {
    const password = asAppPassword(typed);
    if (password === undefined) return undefined;
    const hash = await hashOf(accountDid ?? NOBODY, password);
    return accountDid === undefined ? undefined : this.store.find(accountDid, hash);
  }
}

/** The reference's salt: the first 16 bytes of the SHA-256 of the DID. */
function hashOf(accountDid: string, password: string): Promise<string> {
  return hashWithSalt(password, createHash("sha256").update(accountDid).digest().subarray(0, 16));
}
