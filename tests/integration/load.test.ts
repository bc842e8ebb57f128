/**
 * Bounded load: 32 concurrent clients for LOAD_SECONDS (default 30) each of
 * (i) refresh-token rotation, 32 independent grants each refreshing in a
 * loop, and (ii) authenticated XRPC reads (com.atproto.server.getSession).
 * No request may fail; request counts and p50/p99 latencies are printed.
 *
 * All load comes from 127.0.0.1, so the per-address request limits are
 * raised for this server: the point is the server's capacity, not its
 * abuse limits (they have their own tests).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { manyGrants, percentile, type GrantSession } from "../helpers/session-grants.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

const CONCURRENCY = 32;
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 30);
const TEST_TIMEOUT = LOAD_SECONDS * 1000 + 60_000;

let server: TestServer;
let sessions: GrantSession[];

beforeAll(async () => {
  server = await startTestServer({
    ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "1000000",
    ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
    ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "10000000",
    ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "1000000",
  });
  await createAlice(server);
  sessions = await manyGrants(server.issuer, CONCURRENCY);
}, 120_000);
afterAll(() => server?.stop());

type Outcome = { count: number; latencies: number[]; errors: string[]; seconds: number };

/** Runs `step` in a loop on every session until the deadline; one latency per logical request. */
async function drive(step: (session: GrantSession) => Promise<void>): Promise<Outcome> {
  const latencies: number[] = [];
  const errors: string[] = [];
  const started = performance.now();
  const deadline = started + LOAD_SECONDS * 1000;
  await Promise.all(
    sessions.map(async (session) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        try {
          await step(session);
          latencies.push(performance.now() - t0);
        } catch (error) {
          errors.push(String(error instanceof Error ? error.message : error));
          if (errors.length > 50) return;
        }
      }
    }),
  );
  return { count: latencies.length, latencies, errors, seconds: (performance.now() - started) / 1000 };
}

function report(name: string, outcome: Outcome): void {
  const line = {
    name,
    concurrency: CONCURRENCY,
    seconds: Number(outcome.seconds.toFixed(1)),
    ok: outcome.count,
    errors: outcome.errors.length,
    perSecond: Number((outcome.count / outcome.seconds).toFixed(1)),
    p50ms: Number(percentile(outcome.latencies, 50).toFixed(1)),
    p99ms: Number(percentile(outcome.latencies, 99).toFixed(1)),
    maxms: Number(Math.max(...outcome.latencies).toFixed(1)),
  };
  console.log(`LOAD ${JSON.stringify(line)}`);
}

describe(`load: ${CONCURRENCY} concurrent clients for ${LOAD_SECONDS} s each`, () => {
  it("(i) refresh-token rotation on 32 independent grants: zero errors", { timeout: TEST_TIMEOUT }, async () => {
    const outcome = await drive(async (session) => {
      const refreshed = await session.client.refresh(session.tokens.refresh_token);
      if (refreshed.status !== 200) throw new Error(`refresh: HTTP ${refreshed.status} ${JSON.stringify(refreshed.body)}`);
      session.tokens = refreshed.body;
    });
    report("refresh", outcome);
    expect(outcome.errors.slice(0, 5)).toEqual([]);
    expect(outcome.count).toBeGreaterThan(0);
    // Every grant survived with exactly one live refresh token and one access token.
    const shape = server
      .db()
      .prepare(
        `SELECT (SELECT COUNT(*) FROM "RefreshToken" r WHERE r.grantId = g.id AND r.usedAt IS NULL) AS live,
                (SELECT COUNT(*) FROM "AccessToken" a WHERE a.grantId = g.id) AS access
         FROM "Grant" g`,
      )
      .all() as { live: number; access: number }[];
    expect(shape).toHaveLength(CONCURRENCY);
    expect(shape.every((row) => row.live === 1 && row.access === 1)).toBe(true);
  });

  it("(ii) authenticated XRPC reads (com.atproto.server.getSession): zero errors", { timeout: TEST_TIMEOUT }, async () => {
    const outcome = await drive(async (session) => {
      const read = await session.client.xrpc<{ did?: string }>(session.tokens.access_token, "com.atproto.server.getSession");
      if (read.status !== 200 || typeof read.body.did !== "string") throw new Error(`getSession: HTTP ${read.status} ${JSON.stringify(read.body)}`);
    });
    report("getSession", outcome);
    expect(outcome.errors.slice(0, 5)).toEqual([]);
    expect(outcome.count).toBeGreaterThan(0);
  });
});
