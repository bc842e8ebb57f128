import { beforeAll, describe, expect, it } from "vitest";
import { hashPassword, verifyAgainstDummy, verifyPassword } from "./password.ts";

const PASSWORD = "correct horse battery staple";
let stored: string;

beforeAll(async () => {
  stored = await hashPassword(PASSWORD);
});

describe("password hashing", () => {
  it("stores scrypt$N$r$p$salt$hash without the password", () => {
    const parts = stored.split("$");
    expect(parts).toHaveLength(6);
    expect(parts.slice(0, 4)).toEqual(["scrypt", "32768", "8", "1"]);
    expect(Buffer.from(parts[4]!, "base64url")).toHaveLength(16);
    expect(Buffer.from(parts[5]!, "base64url")).toHaveLength(32);
    expect(stored).not.toContain(PASSWORD);
  });

  it("verifies the right password", async () => {
    expect(await verifyPassword(PASSWORD, stored)).toBe(true);
  });

  it("refuses a wrong password", async () => {
    expect(await verifyPassword("correct horse battery stapler", stored)).toBe(false);
    expect(await verifyPassword("", stored)).toBe(false);
    expect(await verifyPassword(PASSWORD.toUpperCase(), stored)).toBe(false);
  });

  it("normalises Unicode (NFKC) before hashing", async () => {
    const composed = await hashPassword("caf\u00e9-password");
    expect(await verifyPassword("cafe\u0301-password", composed)).toBe(true);
  });

  it("salts: the same password hashes differently each time, and both verify", async () => {
    const again = await hashPassword(PASSWORD);
    expect(again).not.toBe(stored);
    expect(again.split("$")[4]).not.toBe(stored.split("$")[4]);
    expect(await verifyPassword(PASSWORD, again)).toBe(true);
  });

  it("returns false, without throwing, for malformed stored hashes", async () => {
    const [, , , , salt, hash] = stored.split("$");
    const malformed = [
      "",
      "not a hash",
      "scrypt",
      "scrypt$32768$8$1",
      `scrypt$32768$8$1$${salt}`,
      `scrypt$32768$8$1$${salt}$`,
      `bcrypt$32768$8$1$${salt}$${hash}`,
      `$2b$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234`,
    ];
    for (const value of malformed) {
      await expect(verifyPassword(PASSWORD, value), value).resolves.toBe(false);
    }
  });

  it("returns false, without throwing, for unusable cost parameters", async () => {
    const [, , , , salt, hash] = stored.split("$");
    for (const value of [`scrypt$abc$8$1$${salt}$${hash}`, `scrypt$1000$8$1$${salt}$${hash}`, `scrypt$1048576$8$1$${salt}$${hash}`]) {
      await expect(verifyPassword(PASSWORD, value), value).resolves.toBe(false);
    }
  });

  it("does not accept any password against a stored hash that decodes to zero bytes", async () => {
    const [, , , , salt] = stored.split("$");
    // "!!!" and "A" are not valid base64url for any byte: Buffer decodes them to an empty buffer.
    for (const value of [`scrypt$32768$8$1$${salt}$!!!`, `scrypt$32768$8$1$${salt}$A`]) {
      await expect(verifyPassword("any password at all", value), value).resolves.toBe(false);
    }
  });

  it("verifyAgainstDummy always answers false", async () => {
    expect(await verifyAgainstDummy(PASSWORD)).toBe(false);
    expect(await verifyAgainstDummy("dummy password for timing equalisation")).toBe(false);
  });
});
