import { isValidHandle } from "@atproto/syntax";
import { z } from "zod";

/**
 * atproto handle syntax (https://atproto.com/specs/handle), as @atproto/syntax checks it: a DNS name of at least two
 * labels, ASCII letters, digits and hyphens, at most 253 characters, its last label not starting with a digit.
 * Handles are case-insensitive and stored lowercase.
 */
export const handleSchema = z
  .string()
  .trim()
  .max(253, "handle is too long")
  .refine(isValidHandle, "handle must be a domain name such as alice.example.com")
  .transform((value) => value.toLowerCase());

export const emailSchema = z
  .string()
  .trim()
  .max(254, "email is too long")
  .email("email must be an address such as alice@example.com")
  .transform((value) => value.toLowerCase());

/** did:plc (24 base32 characters) or did:web; the forms this server hosts. */
export const didSchema = z
  .string()
  .trim()
  .regex(/^did:(plc:[a-z2-7]{24}|web:[a-zA-Z0-9.%-]+(:[a-zA-Z0-9._%-]+)*)$/, "did must be a did:plc or did:web identifier");

/**
 * What a person typed to name an account (handle, email or DID), in the one
 * form every lookup and counter uses: NFKC (full-width and other compatibility
 * forms fold to ASCII), trimmed, without a leading "@", lower case.
 */
export function canonicalIdentifier(typed: string): string {
  return typed.normalize("NFKC").trim().replace(/^@/, "").toLowerCase();
}

export function isHandle(value: string): boolean {
  return handleSchema.safeParse(value).success;
}
