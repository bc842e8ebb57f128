import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { createDpopProof, generateDpopKey, type DpopKey } from "../../scripts/lib/dpop-client.ts";
import { execute, rowsOf } from "../helpers/databases.ts";
import { CookieJar } from "../helpers/consent.ts";
import { CLIENT_ID, parForm } from "../helpers/flow.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { fetchFrom, type SourceFetch } from "../helpers/raw-http.ts";

/**
 * Disk growth through pushed requests (docs/decisions/0022): a loopback client needs no registration, so one address
 * pushing at the PAR limit could keep every request it pushed, with all of its parameters, for a day. Now a request
 * waits for an answer at most its lifetime, one address may have only ATRIUM_PAR_PENDING_PER_ADDRESS of them waiting,
 * and once expired only the way back of a request whose screen was shown stays. Attacked in parallel, with forged
 * X-Forwarded-For, through nginx over two processes on one database; what stays is measured in rows and bytes.
 */

const PENDING = 30;
const ATTACKS = 45;
const HOUR = 60 * 60 * 1000;
/** Every parameter at its largest: what a row costs at worst while it waits. */
const LARGEST = { state: "s".repeat(2048), login_hint: "h".repeat(512), ui_locales: Array(42).fill("en-US").join(" ") };

type Row = Record<string, unknown> & { idHash: string; parameters: string | null; wayBack: string | null; pushedFrom: string | null };

let proxied: ProxiedServers;
let key: DpopKey;

beforeAll(async () => {
  proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "1", ATRIUM_PAR_PENDING_PER_ADDRESS: String(PENDING) });
  key = await generateDpopKey();
});
afterAll(() => proxied?.stop());

const database = () => proxied.servers[0]!.database();

async function nonceFor(client: SourceFetch): Promise<string> {
  const response = await client(`${proxied.issuer}/oauth/token`, { method: "POST", body: new URLSearchParams({ grant_type: "refresh_token" }) });
  return response.headers.get("DPoP-Nonce")!;
}

/** One PAR request from `client`, its X-Forwarded-For forged. */
async function push(client: SourceFetch, nonce: string, form: Record<string, string>, forged: string): Promise<{ status: number; body: Record<string, string>; retryAfter: string | null }> {
  const url = `${proxied.issuer}/oauth/par`;
  const proof = await createDpopProof(key, { method: "POST", url, nonce });
  const response = await client(url, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", DPoP: proof, "X-Forwarded-For": forged },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string>, retryAfter: response.headers.get("retry-after") };
}

/** The bytes a row's values take (text as UTF-8, times and numbers as 8), the same measure on both engines. */
function bytesOf(row: Record<string, unknown>): number {
  return Object.values(row).reduce<number>((sum, value) => sum + (value === null ? 0 : typeof value === "string" ? Buffer.byteLength(value) : 8), 0);
}

async function stored(): Promise<{ rows: Row[]; bytes: number }> {
  const rows = await rowsOf<Row>(database(), sql`SELECT * FROM "AuthorizationRequest"`);
  return { rows, bytes: rows.reduce((sum, row) => sum + bytesOf(row), 0) };
}

/** Moves every stored request an hour into the past, as an hour of the server's clock would. */
async function anHourLater(): Promise<void> {
  const rows = await rowsOf<{ idHash: string; expiresAt: number; purgeAt: number }>(database(), sql`SELECT "idHash", "expiresAt", "purgeAt" FROM "AuthorizationRequest"`);
  for (const row of rows) {
    await execute(database(), sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(row.expiresAt - HOUR)}, "purgeAt" = ${at(row.purgeAt - HOUR)} WHERE "idHash" = ${row.idHash}`);
  }
}

async function openScreen(requestUri: string): Promise<number> {
  const jar = new CookieJar();
  const url = `${proxied.issuer}/oauth/authorize?${new URLSearchParams({ client_id: CLIENT_ID, request_uri: requestUri })}`;
  const response = await fetch(url, { headers: { cookie: jar.header() }, redirect: "manual" });
  await response.arrayBuffer();
  return response.status;
}

describe("what pushed requests leave in the database, behind nginx over two processes", () => {
  it(`${ATTACKS} parallel pushes of the largest requests from one address (forged X-Forwarded-For): ${PENDING} wait, the rest get 429 OAuth JSON`, async () => {
    const attacker = fetchFrom("127.0.0.2");
    const nonce = await nonceFor(attacker);
    const answers = await Promise.all(Array.from({ length: ATTACKS }, (_, i) => push(attacker, nonce, parForm(LARGEST), `198.51.100.${i + 1}`)));
    const created = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(created).toHaveLength(PENDING);
    expect(refused).toHaveLength(ATTACKS - PENDING);
    for (const answer of refused) {
      expect(answer.body).toEqual({ error: "temporarily_unavailable", error_description: expect.stringMatching(/waiting for an answer \(at most 30\); try again in \d+ seconds$/) });
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    }
    const { rows, bytes } = await stored();
    expect(rows).toHaveLength(PENDING);
    // What waits is bounded: 30 rows of at most ~3.5 KB each here.
    expect(bytes).toBeLessThan(PENDING * 4 * 1024);

    // Another address is not held up by the attacker's bound.
    const bystander = fetchFrom("127.0.0.3");
    expect((await push(bystander, await nonceFor(bystander), parForm(), "203.0.113.9")).status).toBe(201);
  });

  it("an hour later, of the attacker's requests nothing stays; of the shown ones only their small way back", async () => {
    const visitor = fetchFrom("127.0.0.4");
    const nonce = await nonceFor(visitor);
    // Three requests whose screens people open: two with an ordinary state, one with a state too long to keep.
    const opened: string[] = [];
    for (const form of [parForm({ state: "x".repeat(300) }), parForm({ state: "y".repeat(40) }), parForm(LARGEST)]) {
      const answer = await push(visitor, nonce, form, "203.0.113.10");
      expect(answer.status).toBe(201);
      expect(await openScreen(answer.body.request_uri!)).toBe(200);
      opened.push(sha256Base64url(answer.body.request_uri!));
    }
    await anHourLater();

    // The attacker goes on at its bound: each push deletes a batch of rows past their time.
    const attacker = fetchFrom("127.0.0.2");
    const attackerNonce = await nonceFor(attacker);
    const again = await Promise.all(Array.from({ length: PENDING }, (_, i) => push(attacker, attackerNonce, parForm(LARGEST), `198.51.100.${i + 100}`)));
    expect(again.filter((answer) => answer.status === 201)).toHaveLength(PENDING);

    const { rows } = await stored();
    const waiting = rows.filter((row) => row.parameters !== null);
    const kept = rows.filter((row) => row.parameters === null);
    expect(waiting).toHaveLength(PENDING);
    expect(kept.map((row) => row.idHash).sort()).toEqual(opened.slice(0, 2).sort());
    for (const row of kept) {
      expect(row.pushedFrom).toBeNull();
      expect(Object.keys(JSON.parse(row.wayBack!) as object).sort()).toEqual(["redirect_uri", "response_mode", "state"]);
      // A way back is small: the request's id, client, redirect URI, state (at most 512) and times.
      expect(bytesOf(row)).toBeLessThan(1024);
    }
  });
});
