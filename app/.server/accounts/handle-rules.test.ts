import { describe, expect, it } from "vitest";
import { HandleError, HandleRules, type HandleRefusal } from "./handle-rules.ts";

function refusal(rules: HandleRules, handle: string): { reason: HandleRefusal; code: string } | "taken" {
  try {
    rules.check(handle);
    return "taken";
  } catch (error) {
    if (!(error instanceof HandleError)) throw error;
    return { reason: error.reason, code: error.code };
  }
}

describe("HandleRules: the handle an account may take here (issue 28, as the reference PDS decides it)", () => {
  const rules = new HandleRules([".test"]);

  it("takes one label of 3 to 18 letters, digits or hyphens in front of a domain of the server's, lower-cased", () => {
    expect(rules.check("abc.test")).toBe("abc.test");
    expect(rules.check(`${"b".repeat(18)}.test`)).toBe(`${"b".repeat(18)}.test`);
    expect(rules.check("Alice-Smith.TEST")).toBe("alice-smith.test");
    expect(rules.check("x9z.test")).toBe("x9z.test");
  });

  it("refuses another person's subdomain, a name too short or too long, and a reserved name", () => {
    expect(refusal(rules, "support.alice.test")).toEqual({ reason: "characters", code: "handle_invalid" });
    expect(refusal(rules, "x.test")).toEqual({ reason: "too_short", code: "handle_invalid" });
    expect(refusal(rules, "ab.test")).toEqual({ reason: "too_short", code: "handle_invalid" });
    expect(refusal(rules, `${"a".repeat(19)}.test`)).toEqual({ reason: "too_long", code: "handle_invalid" });
    expect(refusal(rules, `${"a".repeat(45)}.test`)).toEqual({ reason: "too_long", code: "handle_invalid" });
    for (const name of ["admin", "support", "bsky", "pds", "www", "security", "Admin"]) {
      expect(refusal(rules, `${name}.test`), name).toEqual({ reason: "reserved", code: "handle_reserved" });
    }
  });

  it("refuses what is no handle by atproto's syntax, nothing trimmed: a control character or a space is no part of one", () => {
    for (const handle of ["", ".test", "alice..test", "-alice.test", "alice-.test", "al_ice.test", " alice.test", "alice.test\n", "\ralice.test", "ali\u0000ce.test", "ａｌｉｃｅ.test", `${"a".repeat(64)}.test`]) {
      expect(refusal(rules, handle), JSON.stringify(handle)).toEqual({ reason: "syntax", code: "handle_invalid" });
    }
  });

  it("refuses a handle on any other domain as unsupported, saying which domains are served and that a domain of one's own is not", () => {
    expect(refusal(rules, "alice.example.com")).toEqual({ reason: "unsupported_domain", code: "handle_unsupported" });
    expect(refusal(rules, "alicetest")).toEqual({ reason: "syntax", code: "handle_invalid" });
    expect(() => rules.check("alice.example.com")).toThrow(/handles here end with \.test .*not supported yet/);
  });

  it("refuses a TLD no handle may have, even when the operator serves it", () => {
    const local = new HandleRules([".local", "example"]);
    expect(refusal(local, "alice.local")).toEqual({ reason: "disallowed_tld", code: "handle_invalid" });
    expect(refusal(local, "alice.example")).toEqual({ reason: "disallowed_tld", code: "handle_invalid" });
  });

  it("with several domains, the label is the one in front of the longest that matches, written with or without its dot", () => {
    const nested = new HandleRules(["example.com", ".pds.example.com"]);
    expect(nested.domains).toEqual([".pds.example.com", ".example.com"]);
    expect(nested.check("alice.pds.example.com")).toBe("alice.pds.example.com");
    expect(nested.check("alice.example.com")).toBe("alice.example.com");
    expect(refusal(nested, "bob.alice.example.com")).toEqual({ reason: "characters", code: "handle_invalid" });
  });
});
