import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, run, sql, statementOf, type Program, type Statement } from "../../app/.server/db/sql.ts";
import { REPLAYS_PER_CLEANUP } from "../../app/.server/stores/sql-replay-store.ts";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { CookieJar, openConsentPage } from "../helpers/consent.ts";
import {
  authorizeAndGetCode,
  countWhere,
  createAlice,
  createPkce,
  newClient,
  newKeys,
  obtainTokens,
  parForm,
  SCOPE,
  tableNames,
  type OAuthErrorBody,
} from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  await createAlice(server);
});
afterAll(() => server?.stop());

const PAST = () => at(Date.now() - 60_000);

async function countOf(statement: Statement): Promise<number> {
  return (await rowOf<{ n: number }>(server.database(), statement))!.n;
}

describe("no secret is stored in plain text (docs/architecture.md, 'Tokens and codes')", () => {
  it("after a full flow, no access token, refresh token, code or request_uri appears in any column of any table", async () => {
    const client = await newClient(server);
    const { code, requestUri, tokens, jar } = await obtainTokens(server, client);
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);

    const secrets: Record<string, string> = {
      request_uri: requestUri,
      "request_uri (random part)": requestUri.slice(requestUri.lastIndexOf(":") + 1),
      code,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      "refreshed access_token": refreshed.body.access_token,
      "refreshed refresh_token": refreshed.body.refresh_token,
    };
    // The random part of each prefixed value ("tok-…"), in case a store strips the prefix.
    for (const [name, value] of Object.entries({ ...secrets })) {
      const dash = value.indexOf("-");
      if (dash > 0 && dash < 8) secrets[`${name} (without prefix)`] = value.slice(dash + 1);
    }
    const session = jar.get("atrium_session") ?? jar.get("__Host-atrium_session");
    expect(session).toBeTruthy();
    secrets["browser session cookie"] = session!;

    const tables = await tableNames(server);
    for (const table of ["AuthorizationRequest", "AuthorizationCode", "Grant", "AccessToken", "RefreshToken", "ReplayRecord"]) {
      expect(tables).toContain(table);
    }
    // The flow did write rows: otherwise an empty database would pass this test.
    expect(await countOf(sql`SELECT COUNT(*) AS "n" FROM "AccessToken"`)).toBeGreaterThan(0);
    expect(await countOf(sql`SELECT COUNT(*) AS "n" FROM "RefreshToken"`)).toBeGreaterThan(0);

    const leaks: string[] = [];
    for (const table of tables) {
      // Table names come from the database's own catalogue, never from input.
      const rows = await rowsOf<Record<string, unknown>>(server.database(), statementOf(`SELECT * FROM "${table}"`)());
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          if (value === null || value === undefined) continue;
          const text = value instanceof Uint8Array ? Buffer.from(value).toString("latin1") : String(value);
          for (const [name, secret] of Object.entries(secrets)) {
            if (text.includes(secret)) leaks.push(`${name} found in ${table}.${column}`);
          }
        }
      }
    }
    expect(leaks).toEqual([]);
  });
});

describe("lazy expiry: expired rows are treated as absent and deleted when read (docs/architecture.md, 'Lazy expiry')", () => {
  it("an expired request_uri shows an error page and its row is deleted", async () => {
    const client = await newClient(server);
    const pkce = createPkce();
    const { result: par, keys } = await newKeys(server, "AuthorizationRequest", "idHash", () =>
      client.pushAuthorizationRequest({
        redirect_uri: "http://127.0.0.1:54321/callback",
        scope: SCOPE,
        state: "expiring",
        code_challenge: pkce.challenge,
        code_challenge_method: "S256",
      }),
    );
    expect(par.status).toBe(201);
    expect(keys).toHaveLength(1);
    const idHash = keys[0]!;
    // Past the day an expired request keeps its way back to the app (docs/decisions/0020).
    await execute(server.database(), sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(Date.now() - 60_000 - 24 * 60 * 60 * 1000)} WHERE "idHash" = ${idHash}`);

    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri), new CookieJar());
    expect(page.status).toBe(400);
    expect(page.csrfToken).toBeUndefined();
    expect(page.html).not.toMatch(/[?&#]code=/);
    expect(await countWhere(server, "AuthorizationRequest", "idHash", idHash)).toBe(0);
  });

  it("an expired authorization code is invalid_grant and its row is deleted", async () => {
    const client = await newClient(server);
    const { result: authorized, keys } = await newKeys(server, "AuthorizationCode", "codeHash", () => authorizeAndGetCode(server, client));
    expect(keys).toHaveLength(1);
    const codeHash = keys[0]!;
    await execute(server.database(), sql`UPDATE "AuthorizationCode" SET "expiresAt" = ${PAST()} WHERE "codeHash" = ${codeHash}`);

    const result = await client.exchangeCode(authorized.code, authorized.verifier, authorized.redirectUri);
    expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_grant" });
    expect(await countWhere(server, "AuthorizationCode", "codeHash", codeHash)).toBe(0);
  });

  it("an expired access token is refused at userinfo (401); its row stays until the grant's next refresh, so revoking it still ends the grant", async () => {
    const client = await newClient(server);
    const { result, keys } = await newKeys(server, "AccessToken", "tokenHash", () => obtainTokens(server, client));
    expect(keys).toHaveLength(1);
    const tokenHash = keys[0]!;
    expect((await client.userinfo(result.tokens.access_token)).status).toBe(200);
    await execute(server.database(), sql`UPDATE "AccessToken" SET "expiresAt" = ${PAST()} WHERE "tokenHash" = ${tokenHash}`);

    const info = await client.userinfo(result.tokens.access_token);
    expect(info.status).toBe(401);
    expect((info.body as OAuthErrorBody).error).toBe("invalid_token");
    expect(info.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
    // Other clients' token issuance does not sweep it away either (one access token per grant bounds the table).
    await obtainTokens(server, await newClient(server));
    expect(await countWhere(server, "AccessToken", "tokenHash", tokenHash)).toBe(1);

    // Signing out an hour later: the official atproto client revokes the (expired) access token it holds.
    expect((await client.revoke(result.tokens.access_token)).status).toBe(200);
    expect((await client.refresh(result.tokens.refresh_token)).status).toBe(400);
    expect(await countWhere(server, "AccessToken", "tokenHash", tokenHash)).toBe(0);
  });

  it("an expired refresh token is invalid_grant and its row is deleted", async () => {
    const client = await newClient(server);
    const { result, keys } = await newKeys(server, "RefreshToken", "tokenHash", () => obtainTokens(server, client));
    expect(keys).toHaveLength(1);
    const tokenHash = keys[0]!;
    await execute(server.database(), sql`UPDATE "RefreshToken" SET "expiresAt" = ${PAST()} WHERE "tokenHash" = ${tokenHash}`);

    const refreshed = await client.refresh(result.tokens.refresh_token);
    expect({ status: refreshed.status, error: (refreshed.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_grant" });
    expect(await countWhere(server, "RefreshToken", "tokenHash", tokenHash)).toBe(0);
  });

  it("an expired grant ends its refresh token (invalid_grant) and its access token (401)", async () => {
    const client = await newClient(server);
    const { result, keys } = await newKeys(server, "Grant", "id", () => obtainTokens(server, client));
    expect(keys).toHaveLength(1);
    await execute(server.database(), sql`UPDATE "Grant" SET "expiresAt" = ${PAST()} WHERE "id" = ${keys[0]!}`);

    expect((await client.userinfo(result.tokens.access_token)).status).toBe(401);
    const refreshed = await client.refresh(result.tokens.refresh_token);
    expect({ status: refreshed.status, error: (refreshed.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_grant" });
    expect(await countWhere(server, "Grant", "id", keys[0]!)).toBe(0);
  });
});

describe("the DPoP replay table stays bounded without a sweeper (docs/architecture.md, 'Lazy expiry')", () => {
  it("one recorded proof in four removes a batch of expired rows, so 500 stale rows drain away", async () => {
    const count = () => countOf(sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord"`);
    const expiredNow = () => countOf(sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord" WHERE "expiresAt" <= ${at(Date.now())}`);

    const past = Date.now() - 3_600_000;
    const keys = Array.from({ length: 500 }, () => `test-expired-${randomBytes(16).toString("base64url")}`);
    await server.database().transaction(function* (): Program<void> {
      for (const [i, key] of keys.entries()) yield* run(sql`INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${key}, ${at(past - i)})`);
    });
    const expiredBefore = await expiredNow();
    expect(expiredBefore).toBeGreaterThanOrEqual(500);
    const liveBefore = (await count()) - expiredBefore;

    const client = await newClient(server);
    const proofed = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const result = await client.pushAuthorizationRequest(parForm({ client_id: undefined, response_type: undefined }));
        expect(result.status).toBe(201);
      }
    };

    // Any REPLAYS_PER_CLEANUP consecutive proofs the process records include one that removes a batch of 20
    // (docs/decisions/0039): four batches here.
    await proofed(4 * REPLAYS_PER_CLEANUP);
    const expiredMid = await expiredNow();
    expect(expiredMid).toBeLessThanOrEqual(expiredBefore - 4 * 20);

    // Enough proofs for 25 more batches drain what is left.
    await proofed(25 * REPLAYS_PER_CLEANUP);
    expect(await expiredNow()).toBe(0);
    expect(await countOf(sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord" WHERE "key" LIKE 'test-expired-%'`)).toBe(0);

    // What remains is only the live proofs: at most one row per request made (plus the first nonce retry).
    const total = await count();
    const requests = 29 * REPLAYS_PER_CLEANUP;
    expect(total).toBeLessThanOrEqual(liveBefore + requests + 1);
    expect(total).toBeGreaterThanOrEqual(liveBefore + requests);
  });
});
