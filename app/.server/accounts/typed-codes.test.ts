import { describe, expect, it } from "vitest";
import { CODE_ALPHABET, newTypedCode, normalizeTypedCode } from "./typed-codes.ts";

describe("typed codes (docs/decisions/0030)", () => {
  it("are ten characters of the unambiguous alphabet in two groups of five", () => {
    for (let i = 0; i < 200; i++) {
      const code = newTypedCode();
      expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$/);
    }
    expect(CODE_ALPHABET).toHaveLength(32);
    expect(CODE_ALPHABET).not.toMatch(/[ILOU]/);
  });

  it("are read as typed on a phone: any case, spaces or dashes, O for 0, I or L for 1", () => {
    expect(normalizeTypedCode("7kq2m-xr4pd")).toBe("7KQ2MXR4PD");
    expect(normalizeTypedCode(" 7KQ2M XR4PD ")).toBe("7KQ2MXR4PD");
    expect(normalizeTypedCode("O0IL1-ABCDE")).toBe("00111ABCDE");
  });

  it("refuse what cannot be a code", () => {
    expect(normalizeTypedCode("7KQ2M-XR4P")).toBeUndefined();
    expect(normalizeTypedCode("7KQ2M-XR4PDD")).toBeUndefined();
    expect(normalizeTypedCode("7KQ2M-XR4PU")).toBeUndefined();
    expect(normalizeTypedCode("")).toBeUndefined();
  });
});
