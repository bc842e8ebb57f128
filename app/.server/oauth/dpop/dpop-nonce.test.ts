import { describe, expect, it } from "vitest";
import { DpopNonces } from "./dpop-nonce.ts";

const SECRET = "nonce-secret-that-is-long-enough-0123456789";
const WINDOW = 3 * 60_000;
// Start in the middle of a window so small offsets do not cross a boundary.
const T0 = 1_000_000 * WINDOW + WINDOW / 2;

function at(time: number, secret = SECRET): DpopNonces {
  return new DpopNonces(secret, WINDOW, () => time);
}

describe("DpopNonces", () => {
  it("accepts its current nonce", () => {
    const nonces = at(T0);
    const nonce = nonces.current();
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(nonces.isValid(nonce)).toBe(true);
  });

  it("is stable within a window and changes across windows", () => {
    expect(at(T0).current()).toBe(at(T0 + WINDOW / 2 - 1).current());
    expect(at(T0).current()).not.toBe(at(T0 + WINDOW).current());
  });

  it("is shared by processes with the same secret", () => {
    expect(at(T0).current()).toBe(new DpopNonces(SECRET, WINDOW, () => T0).current());
  });

  it("accepts the previous window's nonce", () => {
    const previous = at(T0 - WINDOW).current();
    expect(at(T0).isValid(previous)).toBe(true);
  });

  it("accepts the next window's nonce (clock skew between processes)", () => {
    const next = at(T0 + WINDOW).current();
    expect(at(T0).isValid(next)).toBe(true);
  });

  it("refuses a nonce two windows away in either direction", () => {
    expect(at(T0).isValid(at(T0 - 2 * WINDOW).current())).toBe(false);
    expect(at(T0).isValid(at(T0 + 2 * WINDOW).current())).toBe(false);
  });

  it("follows its clock: a nonce expires once two windows have passed", () => {
    let time = T0;
    const nonces = new DpopNonces(SECRET, WINDOW, () => time);
    const nonce = nonces.current();
    time += WINDOW;
    expect(nonces.isValid(nonce)).toBe(true);
    time += WINDOW;
    expect(nonces.isValid(nonce)).toBe(false);
  });

  it("refuses a nonce made under a different secret", () => {
    const foreign = at(T0, "a-different-secret-that-is-long-enough-000").current();
    expect(foreign).not.toBe(at(T0).current());
    expect(at(T0).isValid(foreign)).toBe(false);
  });

  it("refuses junk without throwing", () => {
    const nonces = at(T0);
    expect(nonces.isValid("")).toBe(false);
    expect(nonces.isValid("x")).toBe(false);
    expect(nonces.isValid(nonces.current() + "x")).toBe(false);
    expect(nonces.isValid("é".repeat(43))).toBe(false);
  });
});
