import { describe, expect, it } from "vitest";
import { didSchema, emailSchema, handleSchema, isHandle } from "./identifiers.ts";

describe("handleSchema", () => {
  it.each([
    ["alice.test", "alice.test"],
    ["Alice.Example.COM", "alice.example.com"],
    ["  bob.example.com ", "bob.example.com"],
    ["a.co", "a.co"],
    ["xn--ls8h.test", "xn--ls8h.test"],
    ["my-name.bsky.social", "my-name.bsky.social"],
    ["1password.example", "1password.example"],
    ["a.b.c.d.e.example", "a.b.c.d.e.example"],
    [`${"a".repeat(63)}.test`, `${"a".repeat(63)}.test`],
  ])("accepts %s as %s", (input, expected) => {
    const result = handleSchema.safeParse(input);
    expect(result.success).toBe(true);
    expect(result.data).toBe(expected);
  });

  it.each([
    "alice",
    "bad handle",
    "bad handle.test",
    "-a.test",
    "a-.test",
    "a.1com",
    "a.123",
    "alice.test.",
    ".alice.test",
    "alice..test",
    "al_ice.test",
    "alice@example.com",
    "",
    `${"a".repeat(64)}.test`,
    `${"abcdefghi.".repeat(25)}test`, // 254 characters
  ])("refuses %j", (input) => {
    expect(handleSchema.safeParse(input).success).toBe(false);
    expect(isHandle(input)).toBe(false);
  });

  it("explains the expected form", () => {
    const result = handleSchema.safeParse("alice");
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/domain name/);
  });
});

describe("emailSchema", () => {
  it("accepts and lowercases an address", () => {
    expect(emailSchema.parse(" Alice@Example.COM ")).toBe("alice@example.com");
    expect(emailSchema.parse("a.b+tag@sub.example.org")).toBe("a.b+tag@sub.example.org");
  });

  it.each(["alice", "alice@", "@example.com", "alice@example", "alice example@example.com", "", `${"a".repeat(250)}@example.com`])(
    "refuses %j",
    (input) => {
      expect(emailSchema.safeParse(input).success).toBe(false);
    },
  );
});

describe("didSchema", () => {
  it.each(["did:plc:abcdefghijklmnopqrstuvwx", "did:plc:ewvi7nxzyoun6zhxrhs64oiz", "did:web:example.com", "did:web:localhost%3A3000", "did:web:example.com:user:alice"])(
    "accepts %s",
    (input) => {
      expect(didSchema.parse(input)).toBe(input);
    },
  );

  it.each([
    "did:plc:abc",
    "did:plc:abcdefghijklmnopqrstuvwxy", // 25 characters
    "did:plc:ABCDEFGHIJKLMNOPQRSTUVWX",
    "did:plc:abcdefghijklmnopqrstuv01", // 0 and 1 are not base32
    "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
    "did:web:",
    "did:web:exa mple.com",
    "plc:abcdefghijklmnopqrstuvwx",
    "",
  ])("refuses %j", (input) => {
    expect(didSchema.safeParse(input).success).toBe(false);
  });
});
