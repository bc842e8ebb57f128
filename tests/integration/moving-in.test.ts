/**
 * Moving an account here from another PDS (docs/decisions/0055), through the official client (`@atproto/api`'s
 * AtpAgent) as the reference's documented migration drives it. The account exists here deactivated, with its DID
 * registered at the run's PLC directory (what createAccount with `did` leaves: that method belongs to account
 * creation); the repository comes from @atproto/repo's Repo.create, as the old PDS makes it, signed with the key the
 * DID document names. After the import, @atproto/repo's own verification checks what this server serves.
 */
import { AtpAgent } from "@atproto/api";
import { Secp256k1Keypair } from "@atproto/crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountKeypair } from "../../app/.server/accounts/signing-key.ts";
import { at, sql } from "../../app/.server/db/sql.ts";
import { SqlRepoStore } from "../../app/.server/stores/sql-repo-store.ts";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { exportRepository, foreignRepositoryCar, verifiedRepository, type ForeignRecord } from "../helpers/repositories.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { createAlice } from "../helpers/flow.ts";
import { callRaw, tokenWithScope } from "../helpers/xrpc.ts";

const MAX_IMPORT_BYTES = 1024 * 1024;
const CAROL = { handle: "carol.test", email: "carol@example.com", password: "carol's long password" };
const POST = "app.bsky.feed.post";

let server: TestServer;
let carol: { did: string; handle: string };
let carolsKey: Awaited<ReturnType<typeof accountKeypair>>;

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_IMPORT_MAX_BYTES: String(MAX_IMPORT_BYTES) });
  carol = await createAccount(server, CAROL);
  await createAlice(server);
  const row = await rowOf<{ signingKey: string }>(server.database(), sql`SELECT "signingKey" FROM "Account" WHERE "did" = ${carol.did}`);
  carolsKey = await accountKeypair(row!.signingKey);
  await execute(server.database(), sql`UPDATE "Account" SET "deactivatedAt" = ${at(Date.now())} WHERE "did" = ${carol.did}`);
});
afterAll(async () => {
  await server?.stop();
});

const post = (rkey: string, text: string): ForeignRecord => ({ collection: POST, rkey, value: { $type: POST, text, createdAt: "2026-11-01T00:00:00.000Z" } });

async function signedIn(): Promise<AtpAgent> {
  const agent = new AtpAgent({ service: server.issuer });
  await agent.login({ identifier: CAROL.handle, password: CAROL.password });
  return agent;
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; error: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { status, error: name, message } = error as { status: number; error: string; message: string };
    return { status, error: name, message };
  }
  throw new Error("expected a refusal");
}

/** Carol's repository as stored, checked by @atproto/repo with her key here: its records' paths. */
async function storedPaths(): Promise<string[]> {
  const car = await exportRepository(new SqlRepoStore(server.database(), { blobGraceMs: 3600_000, eventRetentionMs: 3600_000 }), carol.did);
  return (await verifiedRepository(car, carol.did, carolsKey.did())).creates.map((op) => `${op.collection}/${op.rkey}`).sort();
}

const importRepo = (agent: AtpAgent, car: Uint8Array, encoding = "application/vnd.ipld.car") => agent.com.atproto.repo.importRepo(car, { encoding: encoding as "application/vnd.ipld.car" });

describe("com.atproto.repo.importRepo", () => {
  it("takes in the old server's repository from a deactivated account's password session, whole, and re-signed here", async () => {
    const agent = await signedIn();
    expect(agent.session?.active).toBe(false);
    const made = await foreignRepositoryCar(carol.did, carolsKey, [post("3k2aaaaaaaa22", "first"), post("3k2aaaaaaab22", "second")]);
    await importRepo(agent, made.car);

    expect(await storedPaths()).toEqual([`${POST}/3k2aaaaaaaa22`, `${POST}/3k2aaaaaaab22`]);
    const head = await rowOf<{ rev: string }>(server.database(), sql`SELECT "rev" FROM "RepoRoot" WHERE "did" = ${carol.did}`);
    expect(head!.rev > made.rev).toBe(true);
    // The reference sequences nothing on import: the relays hear of the repository at activateAccount.
    expect(await rowsOf(server.database(), sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${carol.did} AND "type" = 'sync'`)).toEqual([]);
  });

  it("refuses, changing nothing: a CAR another key signed, a body past ATRIUM_IMPORT_MAX_BYTES, another media type, an OAuth token", async () => {
    const agent = await signedIn();
    const before = await storedPaths();

    const forged = await foreignRepositoryCar(carol.did, await Secp256k1Keypair.create(), [post("3k2aaaaaaac22", "forged")]);
    expect(await refusal(importRepo(agent, forged.car))).toMatchObject({ status: 400, error: "InvalidRequest", message: expect.stringMatching(/not signed by the key/) });

    const large = await foreignRepositoryCar(carol.did, carolsKey, Array.from({ length: 300 }, (_, i) => post(`3k2${String(i).padStart(6, "0")}a22`, `${"y".repeat(4000)}${i}`)));
    expect(large.car.byteLength).toBeGreaterThan(MAX_IMPORT_BYTES);
    expect(await refusal(importRepo(agent, large.car))).toMatchObject({ status: 413 });

    expect(await refusal(importRepo(agent, forged.car, "application/octet-stream"))).toMatchObject({ status: 400, message: expect.stringMatching(/Content-Type must be application\/vnd.ipld.car/) });

    expect(await storedPaths()).toEqual(before);
    expect(await rowsOf(server.database(), sql`SELECT "id" FROM "RepoImport"`)).toEqual([]);
  });

  it("an OAuth app, whatever its scope, may not replace a repository", async () => {
    const token = await tokenWithScope(server, "atproto transition:generic");
    const made = await foreignRepositoryCar(carol.did, carolsKey, [post("3k2aaaaaaad22", "oauth")]);
    const answer = await callRaw<{ error?: string }>(token, "POST", "com.atproto.repo.importRepo", { body: Buffer.from(made.car), headers: { "Content-Type": "application/vnd.ipld.car" } });
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 403, error: "Forbidden" });
  });
});
