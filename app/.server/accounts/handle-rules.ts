import { HANDLE_NAME_MAX, HANDLE_NAME_MIN } from "../../lib/handle-name.ts";
import { InvalidHandleError, isValidTld, normalizeAndEnsureValidHandle } from "@atproto/syntax";
import { AccountError } from "./account-errors.ts";
import { RESERVED_HANDLE_NAMES } from "./reserved-handle-names.ts";

/**
 * The one rule for a handle an account takes here (docs/decisions/0045-hardening-handles-budgets-preferences-input.md),
 * whatever the way in: account creation (the account tool, later sign-up and createAccount), updateHandle, the
 * account page. As the reference PDS decides it: atproto handle syntax (@atproto/syntax, lower-cased), a TLD that may
 * be used (not .local, .arpa, .invalid, .localhost, .internal, .example, .alt, .onion), then, under one of this
 * server's domains (ATRIUM_USER_DOMAINS), one label of 3 to 18 characters in front of it that is not a reserved name.
 * A handle on any other domain would have to be proved by DNS or HTTPS (https://atproto.com/specs/handle#handle-resolution),
 * which this server does not do yet: it is refused as an unsupported domain.
 */
export { HANDLE_NAME_MAX, HANDLE_NAME_MIN };

/** Why a handle was refused: the account page says each in words of its own, XRPC by the reference's error names. */
export type HandleRefusal = "syntax" | "disallowed_tld" | "unsupported_domain" | "characters" | "too_short" | "too_long" | "reserved";

/** A refused handle: `handle_invalid`, `handle_reserved` or `handle_unsupported`, with the reason. */
export class HandleError extends AccountError {
  constructor(
    readonly reason: HandleRefusal,
    message: string,
  ) {
    super(reason === "reserved" ? "handle_reserved" : reason === "unsupported_domain" ? "handle_unsupported" : "handle_invalid", message, "handle");
  }
}

export class HandleRules {
  /** ATRIUM_USER_DOMAINS, each lower-cased with its leading dot, longest first (the most specific one names the label). */
  readonly domains: readonly string[];

  constructor(userDomains: readonly string[]) {
    this.domains = [...new Set(userDomains.map(withDot))].sort((a, b) => b.length - a.length);
  }

  /** The handle as it is stored (lower case), or a HandleError saying why not. */
  check(handle: string): string {
    const normalized = syntaxChecked(handle);
    if (!isValidTld(normalized)) throw new HandleError("disallowed_tld", "Handle TLD is invalid or disallowed");
    const domain = this.domains.find((suffix) => normalized.endsWith(suffix));
    if (domain === undefined) {
      throw new HandleError(
        "unsupported_domain",
        `Not a supported handle domain: handles here end with ${this.domains.join(" or ")} (a domain of your own, proved by DNS or HTTPS, is not supported yet)`,
      );
    }
    const name = normalized.slice(0, -domain.length);
    if (name.includes(".")) throw new HandleError("characters", "Invalid characters in handle");
    if (name.length < HANDLE_NAME_MIN) throw new HandleError("too_short", "Handle too short");
    if (name.length > HANDLE_NAME_MAX) throw new HandleError("too_long", "Handle too long");
    if (RESERVED_HANDLE_NAMES.has(name)) throw new HandleError("reserved", "Reserved handle");
    return normalized;
  }
}

/** atproto handle syntax (https://atproto.com/specs/handle#handle-identifier-syntax), lower-cased; nothing trimmed. */
function syntaxChecked(handle: string): string {
  try {
    return normalizeAndEnsureValidHandle(handle);
  } catch (error) {
    if (error instanceof InvalidHandleError) throw new HandleError("syntax", error.message);
    throw error;
  }
}

/** ATRIUM_USER_DOMAINS may be written with or without the leading dot. */
export function withDot(domain: string): string {
  const lower = domain.toLowerCase();
  return lower.startsWith(".") ? lower : `.${lower}`;
}
