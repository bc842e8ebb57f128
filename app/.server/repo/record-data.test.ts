import { decode } from "@atproto/lex-cbor";
import { jsonToLex } from "@atproto/lex-json";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { illFormedStringIn, recordData, RecordDataError } from "./record-data.ts";

/** A string that may hold lone surrogates: any UTF-16 code units, paired or not. */
const utf16 = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)), maxLength: 8 });

/** What recordData makes of a JSON record: the JSON of its block (as getRecord's JSON would be re-read), or "refused". */
async function blockOrRefusal(value: Record<string, unknown>): Promise<unknown> {
  try {
    return decode((await recordData(value)).block);
  } catch (error) {
    if (error instanceof RecordDataError) return "refused";
    throw error;
  }
}

/**
 * Issue 28, item 10: a lone surrogate has no UTF-8 form, so the DAG-CBOR block (what is signed) held U+FFFD where the
 * JSON kept for getRecord held the surrogate. Every string, values and keys at any depth, must be well-formed.
 */
describe("records hold well-formed Unicode only", () => {
  it("names where a lone surrogate is: a value, a key, deep in arrays and objects", () => {
    expect(illFormedStringIn({ text: "fine 🦋", list: [{ ok: "é" }] })).toBeUndefined();
    expect(illFormedStringIn({ text: "half \ud83e" })).toBe("the string at $.text");
    expect(illFormedStringIn({ text: "\udd8b reversed \ud83e" })).toBe("the string at $.text");
    expect(illFormedStringIn({ a: [{ b: ["ok", "x\udfff"] }] })).toBe("the string at $.a[0].b[1]");
    expect(illFormedStringIn({ a: { ["key\ud800"]: 1 } })).toBe("a key of $.a");
    expect(illFormedStringIn({ ["\udc00"]: "top" })).toBe("a key of $");
  });

  it("a record with one is refused before any block is made, naming the place", async () => {
    await expect(recordData({ $type: "app.bsky.feed.post", text: "a\ud800b" })).rejects.toThrow(
      new RecordDataError("the string at $.text is not well-formed Unicode (it holds a lone surrogate)"),
    );
    await expect(recordData({ $type: "com.example.note", deep: [{ ["k\udbff"]: true }] })).rejects.toBeInstanceOf(RecordDataError);
  });

  it("whatever the strings (values and keys), a record is refused or its block says exactly what its JSON says", async () => {
    await fc.assert(
      fc.asyncProperty(utf16, utf16, utf16, async (text, key, nested) => {
        const value = { $type: "com.example.note", text, [`k${key}`]: [{ nested }] };
        const outcome = await blockOrRefusal(value);
        if (outcome === "refused") expect(illFormedStringIn(value)).toBeDefined();
        else expect(outcome).toEqual(jsonToLex(value as never));
      }),
      { numRuns: 300 },
    );
  });
});
