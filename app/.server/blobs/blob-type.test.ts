import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { detectMediaType, MediaSniffer, signatureType } from "./blob-type.ts";

/**
 * The sniffer reads an upload piece by piece as it streams (docs/decisions/0043); its answer must be the one the whole
 * bytes give, however the pieces fall, and the text rules must be those of reading the whole text: valid UTF-8
 * without control characters is text, and JSON when `JSON.parse` of the trimmed text takes it as an object or array.
 */

/**
 * The rules on the whole bytes at once, as uploads were sniffed before they streamed: the oracle of the text rules (the
 * signatures read only the first bytes; their test is below).
 */
function whole(bytes: Uint8Array): string | undefined {
  const signed = signatureType(bytes);
  if (signed) return signed;
  if (bytes.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  for (const char of text) {
    const code = char.charCodeAt(0);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f) return undefined;
  }
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      JSON.parse(trimmed);
      return "application/json";
    } catch {
      // plain text
    }
  }
  return "text/plain";
}

/** `bytes` pushed in pieces cut at `cuts` (offsets, any order, repeats allowed). */
function sniffInPieces(bytes: Uint8Array, cuts: number[]): string | undefined {
  const sniffer = new MediaSniffer();
  const offsets = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const offset of [...offsets, bytes.length]) {
    sniffer.push(bytes.subarray(from, offset));
    from = offset;
  }
  return sniffer.result();
}

const encode = (text: string) => new TextEncoder().encode(text);
const cuts = fc.array(fc.nat(), { maxLength: 12 });

/** Texts near JSON: JSON values with their separators, broken in places, with white space of every kind around. */
const jsonish = fc
  .tuple(
    fc.constantFrom("", " ", "\n", "\u00a0", "\ufeff", "\u2028", "\t ", "x"),
    fc.oneof(fc.json(), fc.jsonValue().map((value) => JSON.stringify(value, null, 1) ?? "null")),
    fc.constantFrom("", " ", "\r\n", "\u3000", "]", "}", ",", "0"),
    fc.nat(),
    fc.constantFrom("", "\"", "\\", "\\u00", "\\x", "-", "0", "01", "-0", "1e", "1e+", ".", ".5", "tru", "nul", "\u0001", "\t", " ", "\u00a0", "\u00e9", "\ud83d\ude00"),
  )
  .map(([before, json, after, at, insert]) => {
    const cut = json.length === 0 ? 0 : at % json.length;
    return before + (at % 3 === 0 ? json.slice(0, cut) + insert + json.slice(cut) : json) + after;
  });

describe("MediaSniffer", () => {
  it("answers as the whole text does, for texts near JSON cut into any pieces", () => {
    fc.assert(
      fc.property(jsonish, cuts, (text, pieces) => {
        const bytes = encode(text);
        expect(sniffInPieces(bytes, pieces)).toBe(whole(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it.each([
    "[01]", "[-01]", "[00]", "[-0]", "[0]", "[1.]", "[.5]", "[1.5]", "[1e]", "[1e+]", "[1e+5]", "[0e1]", "[1E-2]", "[-]", "[--1]",
    '{"a":1,}', "[1,]", '{"a" : 1}', '{"a"\u00a0:1}', '{"a":1 , "b":[true,false,null]}', "[tru]", "[truee]", "[nulll]",
    '["\\x"]', '["\\u12"]', '["\\u12G4"]', '["\\u12aF"]', '["a\tb"]', '["\\/\\b\\f"]', "[1]]", "[[1]", "{}", "[]", "{]", "[}",
    " \u00a0[]\u3000", "[] x", "\ufeff{}", '{"a"}', '{1:2}', "[1 2]", '[""]', '{"":""}', "[\r\n1\r\n]",
  ])("%j reads as the whole text does", (text) => {
    expect(sniffInPieces(encode(text), [1, 3])).toBe(whole(encode(text)));
  });

  it("answers as the whole bytes do, for arbitrary bytes cut into any pieces (broken UTF-8, control bytes)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), cuts, (bytes, pieces) => {
        expect(sniffInPieces(bytes, pieces)).toBe(whole(bytes));
        expect(detectMediaType(bytes)).toBe(whole(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it("finds the signatures in the first bytes, even when they arrive one at a time", () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const webp = Uint8Array.from([...encode("RIFF"), 1, 0, 0, 0, ...encode("WEBPVP8L")]);
    const mp4 = Uint8Array.from([0, 0, 0, 0x18, ...encode("ftypmp42")]);
    for (const [bytes, type] of [
      [png, "image/png"],
      [webp, "image/webp"],
      [mp4, "video/mp4"],
      [Uint8Array.from([0xff, 0xd8, 0xff, 0xe0]), "image/jpeg"],
      [encode("GIF89a\u0001\u0000"), "image/gif"],
    ] as const) {
      expect(sniffInPieces(bytes, [...bytes.keys()])).toBe(type);
    }
  });

  it("an HTML page with one invalid byte is not text: its declared type is not confirmed as text", () => {
    const page = Uint8Array.from([...encode("<html><script>alert(1)</script>"), 0xff, ...encode("</html>")]);
    expect(sniffInPieces(page, [3, 40])).toBeUndefined();
  });

  it("a character cut between two pieces is still read as text; one cut off at the end is not", () => {
    const text = encode("caf\u00e9 \ud83d\ude00");
    expect(sniffInPieces(text, [4, 8])).toBe("text/plain");
    expect(sniffInPieces(text.subarray(0, text.length - 1), [4])).toBeUndefined();
  });

  it("JSON that is deep or large is still recognised piece by piece", () => {
    const deep = "[".repeat(5000) + "]".repeat(5000);
    expect(sniffInPieces(encode(deep), [1, 2, 4999, 5000])).toBe("application/json");
    const large = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ i, s: `v\\"${i}\u00e9`, f: i / 7, e: -1.5e-7 })));
    expect(sniffInPieces(encode(large), [1000, 65536, 65537])).toBe("application/json");
  });
});
