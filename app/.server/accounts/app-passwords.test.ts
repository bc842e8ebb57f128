import { describe, expect, it } from "vitest";
import { appPasswordName, asAppPassword, newAppPassword, APP_PASSWORD_NAME_MAX_LENGTH } from "./app-passwords.ts";

/** App passwords' form and names (docs/decisions/0047). */
describe("app passwords", () => {
  it("are the reference's xxxx-xxxx-xxxx-xxxx of base32, every letter of the alphabet used", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const password = newAppPassword();
      expect(password).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/);
      for (const character of password.replace(/-/g, "")) seen.add(character);
    }
    expect(seen.size).toBe(32);
  });

  it("are recognised as typed in either case; anything else is not one", () => {
    expect(asAppPassword("ABCD-ef23-GHIJ-k4lm")).toBe("abcd-ef23-ghij-k4lm");
    for (const typed of ["abcd-ef23-ghij-k4l", "abcd-ef23-ghij-k4lm ", "abcd ef23 ghij k4lm", "abcd-ef23-ghij-k4l1", "correct horse battery"]) {
      expect(asAppPassword(typed), typed).toBeUndefined();
    }
  });

  it("names: trimmed and spaces folded, any script, at most 32 characters, no hidden characters", () => {
    expect(appPasswordName("  my   bot ")).toBe("my bot");
    expect(appPasswordName("ボット")).toBe("ボット");
    expect(appPasswordName("x".repeat(APP_PASSWORD_NAME_MAX_LENGTH))).toBe("x".repeat(APP_PASSWORD_NAME_MAX_LENGTH));
    for (const name of ["", "   ", "x".repeat(APP_PASSWORD_NAME_MAX_LENGTH + 1), "bot\u202Eevil", "bot\u0000"]) expect(appPasswordName(name), JSON.stringify(name)).toBeUndefined();
  });
});
