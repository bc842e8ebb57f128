import { describe, expect, it } from "vitest";
import { passwordStrength } from "./password-strength.ts";

describe("passwordStrength", () => {
  it("says too short below the minimum, counted in characters", () => {
    expect(passwordStrength("", 8)).toBe("too-short");
    expect(passwordStrength("Ab1!xyz", 8)).toBe("too-short");
    expect(passwordStrength("日本語のパスワ", 8)).toBe("too-short");
  });

  it("gives next to nothing for what guessers try first", () => {
    for (const guess of ["password", "Password1", "aaaaaaaaaaaa", "12345678", "abcdefghij", "qwertyqwerty", "87654321"]) {
      expect(passwordStrength(guess, 8), guess).toBe("weak");
    }
  });

  it("grows with length more than with kinds of character", () => {
    expect(passwordStrength("sunflower7", 8)).toBe("fair");
    expect(passwordStrength("Tr0ub4dor&3", 8)).toBe("strong");
    expect(passwordStrength("correct horse battery", 8)).toBe("very-strong");
    expect(passwordStrength("correct horse battery staple", 8)).toBe("very-strong");
  });
});
