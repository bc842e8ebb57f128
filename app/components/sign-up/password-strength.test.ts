import { describe, expect, it } from "vitest";
import { passwordStrength } from "./password-strength.ts";

describe("the sign-up form's password strength hint", () => {
  it("says weak for short, common, repeated and keyboard-run passwords, whatever their length", () => {
    for (const weak of ["abc", "password1", "PASSWORD123", "aaaaaaaaaaaaaaaa", "abababababababab", "12345678", "87654321", "qwertyuiop", "ASDFGHJKL"]) {
      expect(passwordStrength(weak, 8), weak).toBe("weak");
    }
  });

  it("says fair for a middling password and strong for several words or a long mix", () => {
    expect(passwordStrength("Tr0ub4dor", 8)).toBe("fair");
    expect(passwordStrength("correct horse battery", 8)).toBe("strong");
    expect(passwordStrength("x7$Kp2!qLm9#", 8)).toBe("strong");
    expect(passwordStrength("mot de passe très long", 8)).toBe("strong");
  });

  it("says nothing before anything is typed", () => {
    expect(passwordStrength("", 8)).toBeUndefined();
  });
});
