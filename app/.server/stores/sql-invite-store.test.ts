import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { accountFor, countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { ADMIN_ACCOUNT, type StoredInviteCode } from "../accounts/invite-store.ts";
import { InviteCodes, routineCodesDue } from "../accounts/invite-codes.ts";
import { DAY } from "../util/time.ts";
import { SqlAccountStore } from "./sql-account-store.ts";
import { SqlInviteStore } from "./sql-invite-store.ts";

const NOW = 1_800_000_000_000;

function inviteCode(code: string, overrides: Partial<StoredInviteCode> = {}): StoredInviteCode {
  return { code, availableUses: 1, usedCount: 0, disabled: false, forAccount: ADMIN_ACCOUNT, createdBy: ADMIN_ACCOUNT, createdAt: NOW, ...overrides };
}

/**
 * Invite codes on each engine (docs/decisions/0052): a use is spent in the step that stores the account, so that a
 * code of N uses admits exactly N accounts however many sign-ups race for it; routine codes are earned once however
 * many calls ask at once; pages, disabling, the account flag.
 */
describe.each(ENGINES)("SqlInviteStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let invites: SqlInviteStore;
  let accounts: SqlAccountStore;

  beforeEach(() => {
    invites = new SqlInviteStore(shared.db);
    accounts = new SqlAccountStore(shared.db);
  });

  it("an account stored with a code spends one use and records who used it; refusals spend nothing", async () => {
    await invites.insert([inviteCode("host-aaaaa-bbbbb", { availableUses: 2 })]);
    expect(await invites.availability("host-aaaaa-bbbbb")).toBe("available");
    expect(await accounts.insert(accountFor("did:plc:one", { createdAt: NOW + 1 }), { code: "host-aaaaa-bbbbb" })).toBeUndefined();
    // A taken handle is refused before the code is looked at: its use stays.
    expect(await accounts.insert(accountFor("did:plc:other", { handle: "one.test" }), { code: "host-aaaaa-bbbbb" })).toBe("handle");
    expect(await accounts.insert(accountFor("did:plc:two", { createdAt: NOW + 2 }), { code: "host-aaaaa-bbbbb" })).toBeUndefined();
    expect(await invites.availability("host-aaaaa-bbbbb")).toBe("used-up");
    expect(await accounts.insert(accountFor("did:plc:three"), { code: "host-aaaaa-bbbbb" })).toBe("invite");
    expect(await accounts.insert(accountFor("did:plc:four"), { code: "host-nope-nope" })).toBe("invite");
    expect(await countRows(shared.db, "Account")).toBe(2);
    const [detail] = await invites.page("recent", 10);
    expect(detail).toMatchObject({ code: "host-aaaaa-bbbbb", availableUses: 2, usedCount: 2 });
    expect(detail!.uses).toEqual([
      { usedBy: "did:plc:two", usedAt: NOW + 2 },
      { usedBy: "did:plc:one", usedAt: NOW + 1 },
    ]);
  });

  it("a disabled code admits nobody", async () => {
    await invites.insert([inviteCode("host-ccccc-ddddd", { availableUses: 5 }), inviteCode("host-eeeee-fffff", { forAccount: "did:plc:giver" })]);
    await invites.disable({ codes: ["host-ccccc-ddddd"], accounts: ["did:plc:giver"] });
    expect(await invites.availability("host-ccccc-ddddd")).toBe("disabled");
    expect(await invites.availability("host-eeeee-fffff")).toBe("disabled");
    expect(await invites.availability("host-unknown")).toBe("unknown");
    expect(await accounts.insert(accountFor("did:plc:one"), { code: "host-ccccc-ddddd" })).toBe("invite");
    expect(await countRows(shared.db, "Account")).toBe(0);
  });

  for (const uses of [1, 3]) {
    it(`race: twelve sign-ups with a code of ${uses} use${uses > 1 ? "s" : ""} ${raceOn(engine, 4)} make exactly ${uses} account${uses > 1 ? "s" : ""}`, async () => {
      await invites.insert([inviteCode("host-race0-race0", { availableUses: uses })]);
      const stores = shared.others(4).map((db) => new SqlAccountStore(db));
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => stores[i % stores.length]!.insert(accountFor(`did:plc:racer${i}`), { code: "host-race0-race0" })),
      );
      expect(answers.filter((answer) => answer === undefined)).toHaveLength(uses);
      expect(answers.filter((answer) => answer === "invite")).toHaveLength(12 - uses);
      expect(await countRows(shared.db, "Account")).toBe(uses);
      expect(await countRows(shared.db, "InviteCodeUse")).toBe(uses);
      expect((await invites.page("usage", 1))[0]).toMatchObject({ usedCount: uses });
    });
  }

  it("pages every code newest first, or most used first, with uses, and goes on from a cursor", async () => {
    await invites.insert([
      inviteCode("host-a", { createdAt: NOW, availableUses: 3 }),
      inviteCode("host-b", { createdAt: NOW + 1, availableUses: 3 }),
      inviteCode("host-c", { createdAt: NOW + 1, availableUses: 3 }),
    ]);
    for (const [did, code] of [["did:plc:x", "host-a"], ["did:plc:y", "host-a"], ["did:plc:z", "host-c"]] as const) {
      expect(await accounts.insert(accountFor(did), { code })).toBeUndefined();
    }
    const codes = new InviteCodes(invites, { hostname: "host", required: true, now: () => NOW });
    const first = await codes.page("recent", 2);
    expect(first.codes.map((code) => code.code)).toEqual(["host-c", "host-b"]);
    expect(first.cursor).toBe(`${NOW + 1}::host-b`);
    const rest = await codes.page("recent", 2, first.cursor);
    expect(rest.codes.map((code) => code.code)).toEqual(["host-a"]);
    expect(rest.codes[0]!.uses.map((use) => use.usedBy).sort()).toEqual(["did:plc:x", "did:plc:y"]);
    expect(rest.cursor).toBeUndefined();
    const byUse = await codes.page("usage", 2);
    expect(byUse.codes.map((code) => [code.code, code.usedCount])).toEqual([["host-a", 2], ["host-c", 1]]);
    expect((await codes.page("usage", 2, byUse.cursor)).codes.map((code) => code.code)).toEqual(["host-b"]);
    await expect(codes.page("recent", 2, "not a cursor")).rejects.toMatchObject({ status: 400, message: "Malformed cursor" });
  });

  it(`race: eight calls for an account's routine codes ${raceOn(engine, 4)} give it what it earned once`, async () => {
    await insertAccount(shared.db, "did:plc:earner", { createdAt: NOW - 3 * DAY - 1 });
    const calls = shared.others(4).map((db) => new InviteCodes(new SqlInviteStore(db), { hostname: "atrium.test", required: true, intervalMs: DAY, now: () => NOW }));
    await Promise.all(Array.from({ length: 8 }, (_, i) => calls[i % calls.length]!.ofAccount("did:plc:earner", { includeUsed: true, createAvailable: true })));
    const codes = await invites.ofAccounts(["did:plc:earner"]);
    expect(codes).toHaveLength(3);
    for (const code of codes) expect(code).toMatchObject({ availableUses: 1, disabled: false, forAccount: "did:plc:earner", createdBy: "did:plc:earner" });
    for (const code of codes) expect(code.code).toMatch(/^atrium-test-[a-z2-7]{5}-[a-z2-7]{5}$/);
  });

  it("an account whose invites the operator turned off earns its codes disabled; turned on again, new ones work", async () => {
    await insertAccount(shared.db, "did:plc:quiet", { createdAt: NOW - 2 * DAY });
    expect(await invites.setAccountInvitesDisabled("did:plc:quiet", true, NOW)).toBe(true);
    expect(await invites.setAccountInvitesDisabled("did:plc:nobody", true, NOW)).toBe(false);
    let now = NOW;
    const codes = new InviteCodes(invites, { hostname: "atrium.test", required: true, intervalMs: DAY, now: () => now });
    expect(await codes.ofAccount("did:plc:quiet", { includeUsed: true, createAvailable: true })).toEqual([]);
    expect((await invites.ofAccounts(["did:plc:quiet"])).map((code) => code.disabled)).toEqual([true, true]);
    await codes.setAccountInvites("did:plc:quiet", true);
    now += DAY;
    const earned = await codes.ofAccount("did:plc:quiet", { includeUsed: true, createAvailable: true });
    expect(earned).toHaveLength(1);
    expect(await invites.availability(earned[0]!.code)).toBe("available");
  });
});

describe("routineCodesDue (the reference's calculateCodesToCreate)", () => {
  const code = (overrides: Partial<StoredInviteCode>) => ({ ...inviteCode("c", { createdBy: "did:plc:a" }), uses: [], ...overrides });
  it("one per interval of the account's life, less those given, at most five unused at once; gifts do not count", () => {
    expect(routineCodesDue({ createdAt: NOW - 3.5 * DAY, codes: [] }, DAY, NOW)).toBe(3);
    expect(routineCodesDue({ createdAt: NOW - 3.5 * DAY, codes: [code({}), code({ createdBy: ADMIN_ACCOUNT })] }, DAY, NOW)).toBe(2);
    expect(routineCodesDue({ createdAt: NOW - 30 * DAY, codes: [] }, DAY, NOW)).toBe(5);
    expect(routineCodesDue({ createdAt: NOW - 30 * DAY, codes: Array.from({ length: 5 }, () => code({ usedCount: 1 })) }, DAY, NOW)).toBe(5);
    expect(routineCodesDue({ createdAt: NOW - 30 * DAY, codes: Array.from({ length: 5 }, () => code({})) }, DAY, NOW)).toBe(0);
    expect(routineCodesDue({ createdAt: NOW + DAY, codes: [] }, DAY, NOW)).toBe(0);
  });
});
