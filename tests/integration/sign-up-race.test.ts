/**
 * A single-use invite code and four people signing up with it at once, through two server processes on one database
 * (docs/decisions/0052): exactly one account is made, the three others are told InvalidInviteCode, and none of their
 * freshly registered DIDs stays at the PLC directory (each is tombstoned).
 *
 * A gate between the servers and the test run's real directory holds the genesis operations until all four have
 * arrived: each sign-up registers only after its own availability check, so by then all four checks have passed, and
 * the race is decided by the store's conditional spend of the code's use, on each engine, without any timing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { ADMIN_PASSWORD, adminInviteCode } from "../helpers/invites.ts";
import { genesisGate, type PlcGate } from "../helpers/plc-gate.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { callAnonymous } from "../helpers/xrpc.ts";

const directoryUrl = inject("plcDirectoryUrl");
const RACERS = 4;

let gate: PlcGate;
let first: TestServer;
let second: TestServer;

beforeAll(async () => {
  gate = await genesisGate(directoryUrl, RACERS);
  const settings = { ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_PLC_DIRECTORY_URL: gate.url };
  first = await startTestServer(settings);
  second = await startTestServer({ ...settings, DATABASE_URL: first.databaseUrl });
}, 120_000);
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop()]);
  await gate?.close();
});

function createAccount(target: TestServer, name: string, inviteCode: string) {
  return callAnonymous<{ did?: string; error?: string }>(target, "com.atproto.server.createAccount", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle: `${name}.test`, email: `${name}@example.com`, password: "a new long password", inviteCode }),
  });
}

describe("concurrent sign-ups with one single-use invite code, across two processes", () => {
  it("make exactly one account; the others are refused and their DIDs tombstoned", async () => {
    const code = await adminInviteCode(first);
    const answers = await Promise.all(Array.from({ length: RACERS }, (_, i) => createAccount(i % 2 ? second : first, `racer${i}`, code)));

    // Every sign-up passed its checks and registered a DID before any was stored.
    expect(gate.genesisDids).toHaveLength(RACERS);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400, 400, 400]);
    for (const refused of answers.filter((answer) => answer.status === 400)) expect(refused.body.error).toBe("InvalidInviteCode");
    const winner = answers.find((answer) => answer.status === 200)!.body.did!;

    const db = first.database();
    const accounts = await rowsOf<{ did: string }>(db, sql`SELECT "did" FROM "Account" WHERE "handle" LIKE ${"racer%"}`);
    expect(accounts.map((account) => account.did)).toEqual([winner]);
    expect(await rowOf(db, sql`SELECT "usedCount" FROM "InviteCode" WHERE "code" = ${code}`)).toEqual({ usedCount: 1 });
    expect(await rowsOf(db, sql`SELECT "usedBy" FROM "InviteCodeUse" WHERE "code" = ${code}`)).toEqual([{ usedBy: winner }]);

    expect((await fetch(`${directoryUrl}/${winner}`)).status).toBe(200);
    for (const loser of gate.genesisDids.filter((did) => did !== winner)) {
      const last = (await (await fetch(`${directoryUrl}/${loser}/log/last`)).json()) as { type: string };
      expect(last.type, loser).toBe("plc_tombstone");
    }
  }, 120_000);
});
