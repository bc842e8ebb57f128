import { beforeEach, describe, expect, it } from "vitest";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { hasCode } from "../errors/atrium-error.ts";
import { SqlAttemptStore } from "../stores/sql-attempt-store.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import { AdminAuth, basicCredentials, type AdminThrottleRule } from "./admin-auth.ts";

const PASSWORD = "a password: with colons, and spaces";
const RULE: AdminThrottleRule = { perAddress: 3, global: 5, baseDelayMs: SECOND, maxDelayMs: 8 * SECOND, memoryMs: 15 * MINUTE };

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/** What an attempt got: "ok", "wrong" (401), or the wait in seconds of a 429. */
async function answer(attempt: Promise<void>): Promise<string | number> {
  try {
    await attempt;
    return "ok";
  } catch (error) {
    if (hasCode(error, "admin_auth_required")) return "wrong";
    if (hasCode(error, "temporarily_unavailable")) return error.retryAfterSeconds!;
    throw error;
  }
}

/**
 * The admin credential's rules (docs/decisions/0051), on a real attempt store (SQLite: the counting is the store's,
 * raced on both engines by its own contract suite; these are the rules on top of it).
 */
describe("AdminAuth", () => {
  const shared = useSharedDatabase("sqlite");
  let now: number;
  const auth = (password: string | null = PASSWORD) => new AdminAuth(password ?? undefined, new SqlAttemptStore(shared.db), RULE, () => now);

  beforeEach(() => {
    now = 1_800_000_000_000;
  });

  it("reads Basic credentials as RFC 7617 writes them: the scheme in any case, the password after the first colon", () => {
    expect(basicCredentials(basic("admin", PASSWORD))).toEqual({ user: "admin", password: PASSWORD });
    expect(basicCredentials(`basic   ${Buffer.from("admin:").toString("base64")}`)).toEqual({ user: "admin", password: "" });
    for (const header of [null, "", "Basic", "Basic !!!", `Bearer ${Buffer.from("admin:x").toString("base64")}`, `Basic ${Buffer.from("no colon").toString("base64")}`]) {
      expect(basicCredentials(header), String(header)).toBeUndefined();
    }
  });

  it("takes admin:<password> and nothing else: no header, another user, another password, one character more or less", async () => {
    const admin = auth();
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "10.0.0.1"))).toBe("ok");
    for (const header of [null, basic("Admin", PASSWORD), basic("admin", `${PASSWORD} `), basic("admin", PASSWORD.slice(0, -1)), basic("root", PASSWORD)]) {
      expect(await answer(admin.verifyBasic(header, `10.0.1.${Math.random() * 200 | 0}`)), String(header)).toBe("wrong");
    }
    expect(await answer(admin.verifyPassword(PASSWORD, "10.0.0.2"))).toBe("ok");
    expect(await answer(admin.verifyPassword("nope", "10.0.0.2"))).toBe("wrong");
  });

  it("refuses everything when no password is set, saying why", async () => {
    const off = auth(null);
    expect(off.enabled).toBe(false);
    await expect(off.verifyBasic(basic("admin", ""), "10.0.0.1")).rejects.toThrow(/ATRIUM_ADMIN_PASSWORD/);
    await expect(off.verifyPassword("", "10.0.0.1")).rejects.toThrow(/ATRIUM_ADMIN_PASSWORD/);
  });

  it("counts wrong passwords per address (an IPv6 /64 is one) before checking: past them even the right one waits", async () => {
    const admin = auth();
    for (const address of ["2001:db8::1", "2001:db8::2", "2001:db8::3"]) expect(await answer(admin.verifyBasic(basic("admin", "guess"), address))).toBe("wrong");
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "2001:db8::4"))).toBe(1);
    // Another address is not held up by that one.
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "2001:db9::1"))).toBe("ok");
    now += SECOND;
    expect(await answer(admin.verifyBasic(basic("admin", "guess"), "2001:db8::5"))).toBe("wrong");
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "2001:db8::5"))).toBe(2);
  });

  it("counts every address's wrong passwords together too: a guess spread over many addresses waits as one", async () => {
    const admin = auth();
    for (let i = 0; i < RULE.global; i++) expect(await answer(admin.verifyBasic(basic("admin", `guess ${i}`), `10.9.0.${i}`))).toBe("wrong");
    expect(await answer(admin.verifyBasic(basic("admin", "guess"), "10.9.1.1"))).toBe(1);
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "10.9.1.2"))).toBe(1);
    // Forgotten `memoryMs` after the last failure.
    now += RULE.memoryMs + SECOND;
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "10.9.1.2"))).toBe("ok");
  });

  it("a right password takes its own count back: an operator's many calls never make it wait", async () => {
    const admin = auth();
    for (let i = 0; i < 50; i++) expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "10.0.0.7"))).toBe("ok");
    expect(await answer(admin.verifyBasic(basic("admin", "one slip"), "10.0.0.7"))).toBe("wrong");
    expect(await answer(admin.verifyBasic(basic("admin", PASSWORD), "10.0.0.7"))).toBe("ok");
  });

  it("tags sessions with a MAC of the password: another password, another tag", () => {
    expect(auth().passwordTag("key")).toBe(auth().passwordTag("key"));
    expect(auth().passwordTag("key")).not.toBe(auth(`${PASSWORD}!`).passwordTag("key"));
    expect(auth().passwordTag("key")).not.toBe(auth().passwordTag("other key"));
    expect(auth().passwordTag("key")).not.toContain(PASSWORD);
  });
});
