/**
 * The orphan DID (issue 18's leftover; docs/decisions/0030): two creates of one handle, run as two processes of the
 * account command line tool on one database, both pass the "is it taken" check and both register a did:plc at the
 * test run's real PLC directory; one insert wins. The loser's DID must not stay registered for an account that never
 * existed: it is tombstoned, and the directory no longer resolves it.
 *
 * A small gate stands between the two processes and the real directory and holds their genesis operations until
 * both have arrived: each process registers only after its check, so by then both checks have passed, and the race
 * is decided by the inserts, on each engine, without any timing.
 */
import { execFile } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../app/.server/config.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { plcIdentity } from "../../app/.server/services.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { rowsOf } from "../helpers/databases.ts";
import { createServerDatabase, type ServerDatabase } from "../helpers/test-database.ts";

const run = promisify(execFile);
const directoryUrl = inject("plcDirectoryUrl");

type Gate = { url: string; genesisDids: string[]; close(): Promise<void> };

/** Forwards everything to the real directory, holding the first `hold` genesis posts until all of them arrived. */
async function genesisGate(hold: number): Promise<Gate> {
  const genesisDids: string[] = [];
  const waiting: (() => void)[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const forward = () => {
        fetch(`${directoryUrl}${request.url}`, { method: request.method, headers: { "content-type": "application/json" }, body: request.method === "POST" ? body : undefined })
          .then(async (answer) => {
            response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
            response.end(Buffer.from(await answer.arrayBuffer()));
          })
          .catch(() => response.destroy());
      };
      const isGenesis = request.method === "POST" && (JSON.parse(body.toString() || "{}") as { prev?: unknown }).prev === null;
      if (!isGenesis || genesisDids.length >= hold) return forward();
      genesisDids.push(decodeURIComponent(request.url!.slice(1)));
      waiting.push(forward);
      if (waiting.length === hold) waiting.splice(0).forEach((release) => release());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    genesisDids,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function createByCli(database: ServerDatabase, directory: string, account: { handle: string; email: string }) {
  const args = ["--import", "tsx", "scripts/account.ts", "create", "--handle", account.handle, "--email", account.email, "--password", "a long enough password"];
  const env = { ...process.env, DATABASE_URL: database.url, ATRIUM_PLC_DIRECTORY_URL: directory };
  try {
    const { stdout } = await run(process.execPath, args, { cwd: PROJECT_ROOT, env });
    return { code: 0, stdout, stderr: "" };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

let database: ServerDatabase;
let gate: Gate;

beforeAll(async () => {
  database = await createServerDatabase();
  // The command line tool migrates the database itself; one create first, so that the two racing processes do not
  // race the migration as well.
  expect((await createByCli(database, directoryUrl, { handle: "earliest.test", email: "earliest@example.com" })).code).toBe(0);
  gate = await genesisGate(2);
}, 120_000);

afterAll(async () => {
  await gate?.close();
  await database?.remove();
});

describe("two creates of one handle at once", () => {
  it("one account is made; the loser's freshly registered DID is tombstoned at the directory", async () => {
    const results = await Promise.all([
      createByCli(database, gate.url, { handle: "contested.test", email: "one@example.com" }),
      createByCli(database, gate.url, { handle: "contested.test", email: "two@example.com" }),
    ]);
    // Both registered a DID (both passed the check before the gate let either through).
    expect(gate.genesisDids).toHaveLength(2);
    expect(results.map((result) => result.code).sort()).toEqual([0, 1]);
    const loser = results.find((result) => result.code === 1)!;
    expect(loser.stderr).toContain("handle contested.test is already taken");
    expect(loser.stderr).not.toContain("could not be tombstoned");

    const db = database.open();
    const stored = await rowsOf<{ did: string }>(db, sql`SELECT "did" FROM "Account" WHERE "handle" = ${"contested.test"}`);
    expect(stored).toHaveLength(1);
    const winnerDid = stored[0]!.did;
    const loserDid = gate.genesisDids.find((did) => did !== winnerDid)!;
    expect(gate.genesisDids).toContain(winnerDid);

    // The winner's DID resolves; the loser's does not any more, and its log ends with a tombstone.
    expect((await fetch(`${directoryUrl}/${winnerDid}`)).status).toBe(200);
    const gone = await fetch(`${directoryUrl}/${loserDid}`);
    expect([404, 410]).toContain(gone.status);
    expect(await gone.text()).toContain("DID not available");
    const last = (await (await fetch(`${directoryUrl}/${loserDid}/log/last`)).json()) as { type: string; prev: string; sig: string };
    expect(last.type).toBe("plc_tombstone");
    expect(last.prev).toMatch(/^bafy/);

    // The tombstone is idempotent, so that a step that failed after it can be retried: done again, or for a DID the
    // directory never saw, it changes nothing (the server's own PlcIdentity, with the rotation key of this database).
    const identity = await plcIdentity(loadConfig({ DATABASE_URL: database.url, ATRIUM_PLC_DIRECTORY_URL: directoryUrl }), db, Date.now());
    await identity.tombstone(loserDid);
    await identity.tombstone("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa");
    const log = (await (await fetch(`${directoryUrl}/${loserDid}/log`)).json()) as { type: string }[];
    expect(log.map((operation) => operation.type)).toEqual(["plc_operation", "plc_tombstone"]);
  }, 120_000);
});
