import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

/**
 * scrypt password hashes (RFC 7914) stored as scrypt$N$r$p$salt$hash, so the
 * cost can be raised later without breaking stored hashes.
 */
const COST = { N: 1 << 15, r: 8, p: 1 };
/**
 * Test servers only (ATRIUM_TEST_FAST_PASSWORD_HASHES, refused for any issuer but plain http on loopback:
 * app/.server/config.ts; docs/decisions/0036): a 32× cheaper hash, because the test suite checks thousands of
 * passwords on two cores. The production cost is covered by password.test.ts and by the account CLI's own test.
 */
const TEST_COST = { N: 1 << 10, r: 8, p: 1 };
let cost = COST;
const KEY_LENGTH = 32;
const MAX_MEMORY = 128 * COST.N * COST.r * 2;

/** New hashes (and the dummy) use TEST_COST in this process from now on, or COST again: for test servers only (see TEST_COST). */
export function setTestPasswordCost(on = true): void {
  cost = on ? TEST_COST : COST;
}

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;

function derive(password: string, salt: Buffer, options: ScryptOptions, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFKC"), salt, length, { ...options, maxmem: MAX_MEMORY * 2 }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  return hashWithSalt(password, randomBytes(16));
}

/**
 * The hash of `password` with a salt the caller chose, at the current cost: app passwords are salted with their
 * account's DID, so that a sign-in finds one by its hash (accounts/app-passwords.ts). The cost is part of the stored
 * text, so a sign-in looks up the text computed at the cost new hashes use.
 */
export async function hashWithSalt(password: string, salt: Buffer): Promise<string> {
  const key = await derive(password, salt, cost, KEY_LENGTH);
  return ["scrypt", cost.N, cost.r, cost.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** False for a wrong password and for a stored hash that is damaged or uses parameters out of range. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) return false;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  const expected = Buffer.from(hash, "base64url");
  // A damaged hash must never verify: an empty derived key would compare equal to an empty stored one.
  if (expected.length !== KEY_LENGTH || !validCost(cost)) return false;
  try {
    const actual = await derive(password, Buffer.from(salt, "base64url"), cost, KEY_LENGTH);
    return timingSafeEqual(actual, expected);
  } catch {
    return false;
  }
}

function validCost({ N, r, p }: { N: number; r: number; p: number }): boolean {
  const powerOfTwo = Number.isInteger(N) && N >= 2 && (N & (N - 1)) === 0;
  return powerOfTwo && N <= COST.N && Number.isInteger(r) && r >= 1 && r <= 32 && Number.isInteger(p) && p >= 1 && p <= 16;
}

let dummyHash: Promise<string> | undefined;

/** Spends the same time as a real check, so an unknown account is not revealed by timing. */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword("dummy password for timing equalisation");
  await verifyPassword(password, await dummyHash);
  return false;
}
