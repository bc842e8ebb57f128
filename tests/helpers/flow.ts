/**
 * Shared steps for the integration tests: a loopback client, a full
 * PAR → consent → code run, raw DPoP-proofed requests, and small helpers
 * for looking at the server's SQLite file.
 */
import { sql, statementOf } from "../../app/.server/db/sql.ts";
import { rowOf, rowsOf } from "./databases.ts";
import { createDpopProof, createPkce, DpopClient, generateDpopKey, readResult, type DpopKey, type HttpResult, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { approveWithPassword, CookieJar } from "./consent.ts";
import { createAccount, type TestServer } from "./test-server.ts";

export const REDIRECT = "http://127.0.0.1/callback";
export const SCOPE = "atproto transition:generic";
export const CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: REDIRECT, scope: SCOPE })}`;

export const ALICE = { handle: "alice.test", email: "alice@example.com", password: "correct horse battery" };

export type OAuthErrorBody = { error?: string; error_description?: string };

export async function createAlice(server: TestServer): Promise<{ did: string; handle: string }> {
  return createAccount(server, ALICE);
}

export async function newClient(server: TestServer, key?: DpopKey): Promise<DpopClient> {
  return new DpopClient(server.issuer, key ?? (await generateDpopKey()), CLIENT_ID);
}

export type AuthorizedCode = {
  code: string;
  verifier: string;
  redirectUri: string;
  requestUri: string;
  authorizeUrl: string;
  jar: CookieJar;
  state: string;
};

/**
 * Pushes an authorization request with `client`, approves it on the consent
 * screen as Alice, and returns the code from the redirect.
 */
export async function authorizeAndGetCode(
  server: TestServer,
  client: DpopClient,
  options: { scope?: string; redirectUri?: string; state?: string } = {},
): Promise<AuthorizedCode> {
  const pkce = createPkce();
  const redirectUri = options.redirectUri ?? "http://127.0.0.1:54321/callback";
  const state = options.state ?? `state-${Math.random().toString(36).slice(2)}`;
  const par = await client.pushAuthorizationRequest({
    redirect_uri: redirectUri,
    scope: options.scope ?? SCOPE,
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  if (par.status !== 201) throw new Error(`PAR failed (${par.status}): ${JSON.stringify(par.body)}`);
  const authorizeUrl = client.authorizeUrl(par.body.request_uri);
  const jar = new CookieJar();
  const location = await approveWithPassword(authorizeUrl, jar, ALICE.handle, ALICE.password);
  if (location.searchParams.get("iss") !== server.issuer) throw new Error(`unexpected redirect ${location.href}`);
  if (location.searchParams.get("state") !== state) throw new Error(`state not returned: ${location.href}`);
  const code = location.searchParams.get("code");
  if (!code) throw new Error(`no code in redirect ${location.href}`);
  return { code, verifier: pkce.verifier, redirectUri, requestUri: par.body.request_uri, authorizeUrl, jar, state };
}

/** A full run to tokens; throws unless the exchange answers 200. */
export async function obtainTokens(
  server: TestServer,
  client: DpopClient,
  options: { scope?: string } = {},
): Promise<AuthorizedCode & { tokens: TokenSet }> {
  const authorized = await authorizeAndGetCode(server, client, options);
  const exchanged = await client.exchangeCode(authorized.code, authorized.verifier, authorized.redirectUri);
  if (exchanged.status !== 200) throw new Error(`code exchange failed (${exchanged.status}): ${JSON.stringify(exchanged.body)}`);
  return { ...authorized, tokens: exchanged.body };
}

/** Form parameters of a valid PAR request for the loopback client. */
export function parForm(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const pkce = createPkce();
  const base: Record<string, string | undefined> = {
    client_id: CLIENT_ID,
    response_type: "code",
    redirect_uri: "http://127.0.0.1:54321/callback",
    scope: SCOPE,
    state: "state-abc",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    ...overrides,
  };
  const form: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined) form[name] = value;
  return form;
}

/** POSTs a form with exactly the given DPoP header (or none); no retry. */
export async function rawPost<T = OAuthErrorBody>(
  url: string,
  form: URLSearchParams | Record<string, string>,
  dpop?: string,
  headers: Record<string, string> = {},
): Promise<HttpResult<T>> {
  const allHeaders: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded", ...headers };
  if (dpop !== undefined) allHeaders.DPoP = dpop;
  const response = await fetch(url, { method: "POST", headers: allHeaders, body: form instanceof URLSearchParams ? form : new URLSearchParams(form) });
  return readResult<T>(response);
}

/** GETs a protected resource with exactly the given headers; no retry. */
export async function rawGet<T = OAuthErrorBody>(url: string, headers: Record<string, string>): Promise<HttpResult<T>> {
  return readResult<T>(await fetch(url, { headers }));
}

/** A current server nonce: every /oauth/* JSON answer carries one, even a refusal. */
export async function fetchNonce(server: TestServer): Promise<string> {
  const response = await rawPost(`${server.issuer}/oauth/token`, { grant_type: "refresh_token" });
  const nonce = response.headers.get("DPoP-Nonce");
  if (!nonce) throw new Error(`no DPoP-Nonce header (status ${response.status})`);
  return nonce;
}

/** A DPoP-proofed POST made with `key` and a current nonce, without retry. */
export async function proofedPost<T = OAuthErrorBody>(
  server: TestServer,
  key: DpopKey,
  path: string,
  form: URLSearchParams | Record<string, string>,
  nonce?: string,
): Promise<HttpResult<T>> {
  const url = `${server.issuer}${path}`;
  const proof = await createDpopProof(key, { method: "POST", url, nonce: nonce ?? (await fetchNonce(server)) });
  return rawPost<T>(url, form, proof);
}

/** Every table of the database (the SQLite catalogue, or PostgreSQL's public schema), Prisma's own excepted. */
export async function tableNames(server: TestServer): Promise<string[]> {
  const db = server.database();
  const rows =
    db.engine === "sqlite"
      ? await rowsOf<{ name: string }>(db, sql`SELECT "name" FROM sqlite_master WHERE "type" = 'table' AND "name" NOT LIKE 'sqlite_%'`)
      : await rowsOf<{ name: string }>(db, sql`SELECT "table_name" AS "name" FROM information_schema.tables WHERE "table_schema" = 'public' AND "table_type" = 'BASE TABLE'`);
  return rows.map((row) => row.name);
}

/** The values of column `column` of `table` (used to spot rows that appeared during a step). Names come from the test, never from input. */
export async function columnValues(server: TestServer, table: string, column: string): Promise<Set<string>> {
  const rows = await rowsOf<{ v: string }>(server.database(), statementOf(`SELECT "${column}" AS "v" FROM "${table}"`)());
  return new Set(rows.map((row) => row.v));
}

/** Runs `step` and returns the keys of the rows of `table` it created. */
export async function newKeys<T>(server: TestServer, table: string, column: string, step: () => Promise<T>): Promise<{ result: T; keys: string[] }> {
  const before = await columnValues(server, table, column);
  const result = await step();
  const keys = [...(await columnValues(server, table, column))].filter((key) => !before.has(key));
  return { result, keys };
}

export async function countWhere(server: TestServer, table: string, column: string, value: string): Promise<number> {
  return (await rowOf<{ n: number }>(server.database(), statementOf(`SELECT COUNT(*) AS "n" FROM "${table}" WHERE "${column}" = ?`)(value)))!.n;
}

export { generateDpopKey, createDpopProof, createPkce };
export type { DpopKey, HttpResult, TokenSet };
