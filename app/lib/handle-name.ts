/**
 * The name part of a handle under one of this server's domains, as the reference PDS requires it there: one label
 * in front of the domain, 3 to 18 letters, digits or hyphens, starting and ending with a letter or digit ("Handle
 * too short", "Handle too long", "Invalid characters in handle" for a dot). Shared by the handle page's server
 * (which decides) and its live preview (which only shows what the server will read).
 */
export const HANDLE_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
export const HANDLE_NAME_MIN = 3;
export const HANDLE_NAME_MAX = 18;

/** What a typed name is read as: compatibility-normalised, trimmed, without a leading "@", in lower case. */
export function normalizeHandleName(typed: string): string {
  return typed.normalize("NFKC").trim().replace(/^@/, "").toLowerCase();
}
