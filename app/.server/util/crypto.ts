import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** 256 random bits, base64url, with a readable prefix (`tok-…`). */
export function randomToken(prefix: string, bytes = 32): string {
  return `${prefix}-${randomBytes(bytes).toString("base64url")}`;
}

export function sha256Base64url(value: string): string {
  return createHash("sha256").update(value).digest("base64url");
}

export function hmacBase64url(secret: string, value: string): string {
  return createHmac("sha256", secret).update(value).digest("base64url");
}

/** Constant-time comparison of two strings (false when lengths differ). */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
