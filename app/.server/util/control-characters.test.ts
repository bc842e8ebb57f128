import { describe, expect, it } from "vitest";
import { firstWithControlCharacter, hasControlCharacter, hasTypedControlCharacter, jsonHasControlCharacter } from "./control-characters.ts";

describe("control characters in what a request names (issue 28)", () => {
  it("every C0 control, DEL and every C1 control is one; printable text, spaces and other scripts are not", () => {
    for (let code = 0; code <= 0x1f; code++) expect(hasControlCharacter(`a${String.fromCharCode(code)}b`), code.toString(16)).toBe(true);
    for (let code = 0x7f; code <= 0x9f; code++) expect(hasControlCharacter(String.fromCharCode(code)), code.toString(16)).toBe(true);
    for (const text of ["alice.test", "did:plc:abc", "a b", "é ü ß", "日本語", "😀", "\u00a0", "\u200b"]) expect(hasControlCharacter(text), text).toBe(false);
  });

  it("a person's form field may carry TAB, LF and CR (pasted), never another control", () => {
    for (const text of ["a\tb", "a\nb", "a\r\nb"]) expect(hasTypedControlCharacter(text)).toBe(false);
    for (const text of ["\u0000", "a\u0001", "\u000b", "\u000c", "\u001b[31m", "\u007f", "\u0085"]) expect(hasTypedControlCharacter(text), JSON.stringify(text)).toBe(true);
  });

  it("names the first parameter holding one, by its name or its value", () => {
    expect(firstWithControlCharacter(new URLSearchParams("a=1&b=2%00&c=%01"))).toBe("b");
    expect(firstWithControlCharacter(new URLSearchParams("x%00=1"))).toBe("x\u0000");
    expect(firstWithControlCharacter(new URLSearchParams("a=1&b=two"))).toBeUndefined();
    expect(firstWithControlCharacter([["name", "a\tb"]], hasTypedControlCharacter)).toBeUndefined();
  });

  it("finds one in any string of a JSON value, keys included, however deep, without recursion", () => {
    expect(jsonHasControlCharacter({ a: [1, { b: "ok" }], c: null })).toBe(false);
    expect(jsonHasControlCharacter({ a: [1, { b: "o\u0000k" }] })).toBe(true);
    expect(jsonHasControlCharacter({ "k\u001f": 1 })).toBe(true);
    let deep: unknown = "\u0000";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(jsonHasControlCharacter(deep)).toBe(true);
  });
});
