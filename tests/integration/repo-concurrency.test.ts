/**
 * Concurrent writes to one repository from two server processes on one database (docs/decisions/0027): every
 * acknowledged write is in the final repository, which @atproto/repo verifies, and the sequencer holds one #commit
 * per write whose `since` chain runs through the log in order (sequence order is commit order).
 */
import { decode } from "@atproto/lex-cbor";
import { verifyRepoCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { rowsOf } from "../helpers/databases.ts";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";
import { accountDidKey } from "../helpers/xrpc-extra.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
const WRITES = 30;

let first: TestServer;
let second: TestServer;
let alice: { did: string };
let tokens: ScopedToken[];

beforeAll(async () => {
  first = await startTestServer();
  second = await startTestServer({ DATABASE_URL: first.databaseUrl });
  alice = await createAlice(first);
  tokens = [await tokenWithScope(first, "atproto transition:generic"), await tokenWithScope(second, "atproto transition:generic")];
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

describe("writers of one repository in two processes", () => {
  it(`${WRITES} createRecord calls at once, alternating between the processes: all acknowledged, all committed, in one chain`, async () => {
    const results = await Promise.all(
      Array.from({ length: WRITES }, (_, i) =>
        call<{ cid: string; commit: { cid: string; rev: string } }>(tokens[i % 2]!, "com.atproto.repo.createRecord", {
          json: { repo: alice.did, collection: NOTE, rkey: `race${String(i).padStart(2, "0")}`, record: { text: `write ${i}`, createdAt: "2026-11-26T00:00:00.000Z" } },
        }),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(Array(WRITES).fill(200));
    expect(new Set(results.map((result) => result.body.commit.cid)).size).toBe(WRITES);

    const didKey = await accountDidKey(alice.did);
    const car = new Uint8Array(await (await fetch(`${second.issuer}/xrpc/com.atproto.sync.getRepo?did=${alice.did}`)).arrayBuffer());
    const verified = await verifyRepoCar(car, alice.did, didKey);
    expect(verified.creates.map((op) => op.rkey).sort()).toEqual(Array.from({ length: WRITES }, (_, i) => `race${String(i).padStart(2, "0")}`));
    for (const result of results) expect(verified.creates.find((op) => op.cid.toString() === result.body.cid)).toBeDefined();

    const rows = await rowsOf<{ body: Uint8Array }>(first.database(), sql`SELECT "body" FROM "RepoEvent" WHERE "did" = ${alice.did} AND "type" = ${"commit"} ORDER BY "seq"`);
    const commits = rows.map((row) => decode(new Uint8Array(row.body)) as { rev: string; since: string | null });
    expect(commits).toHaveLength(WRITES + 1);
    for (let i = 1; i < commits.length; i++) expect(commits[i]!.since).toBe(commits[i - 1]!.rev);
  });
});
