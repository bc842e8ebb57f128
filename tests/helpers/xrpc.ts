/**
 * Helpers for the /xrpc integration tests: tokens carrying exactly a given
 * scope (a loopback client whose client_id declares it), unauthenticated
 * XRPC calls, and the assertions for the data server's refusals.
 */
import { expect } from "vitest";
import { DpopClient, generateDpopKey, readResult, type HttpResult, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { obtainTokens } from "./flow.ts";
import type { TestServer } from "./test-server.ts";

export type XrpcErrorBody = { error?: string; message?: string };

/** A loopback client_id declaring `scope` (draft-ietf-oauth-client-id-metadata loopback clients, atproto profile). */
export function loopbackClientId(scope: string): string {
  return `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope })}`;
}

export type ScopedToken = { client: DpopClient; tokens: TokenSet; accessToken: string };

/** Runs PAR → consent (as Alice) → code exchange for a client declaring and requesting `scope`. */
export async function tokenWithScope(server: TestServer, scope: string): Promise<ScopedToken> {
  const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(scope));
  const { tokens } = await obtainTokens(server, client, { scope });
  if (tokens.scope.split(" ").sort().join(" ") !== scope.split(" ").sort().join(" ")) {
    throw new Error(`token scope ${JSON.stringify(tokens.scope)} differs from the requested ${JSON.stringify(scope)}`);
  }
  return { client, tokens, accessToken: tokens.access_token };
}

/**
 * A token per named scope, obtained one after another as one person signs in:
 * simultaneous sign-ins beyond the free attempts wait, by design
 * (docs/decisions/0009-sign-in-attempts-counted-first.md).
 */
export async function tokensForScopes<K extends string>(server: TestServer, scopes: Record<K, string>): Promise<Record<K, ScopedToken>> {
  const tokens = {} as Record<K, ScopedToken>;
  for (const [name, scope] of Object.entries(scopes) as [K, string][]) tokens[name] = await tokenWithScope(server, scope);
  return tokens;
}

/** Calls an XRPC method with the token (GET for a query, POST JSON when `json` is given). */
export function call<T = unknown>(
  token: ScopedToken,
  nsid: string,
  options: { params?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  return token.client.xrpc<T>(token.accessToken, nsid, options);
}

/** A raw authenticated request (own body and headers) to /xrpc/<nsid>, with DPoP and nonce retry. */
export function callRaw<T = unknown>(
  token: ScopedToken,
  method: string,
  nsid: string,
  init: { body?: BodyInit; headers?: Record<string, string>; params?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const url = new URL(`${token.client.issuer}/xrpc/${nsid}`);
  for (const [name, value] of Object.entries(init.params ?? {})) url.searchParams.set(name, value);
  return token.client.requestWithToken<T>(method, url.href, token.accessToken, { body: init.body, headers: init.headers });
}

/** An XRPC call without any credentials. */
export async function callAnonymous<T = unknown>(
  server: TestServer,
  nsid: string,
  options: { method?: string; params?: Record<string, string>; body?: BodyInit; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const url = new URL(`${server.issuer}/xrpc/${nsid}`);
  for (const [name, value] of Object.entries(options.params ?? {})) url.searchParams.set(name, value);
  const response = await fetch(url, { method: options.method ?? "GET", body: options.body, headers: options.headers });
  return readResult<T>(response);
}

/** 403 with a DPoP insufficient_scope challenge and an XRPC body naming the permission that was missing. */
export function expectInsufficientScope(result: HttpResult, neededScope: string): void {
  const body = result.body as XrpcErrorBody;
  expect({ status: result.status, error: body?.error }).toEqual({ status: 403, error: "InsufficientScope" });
  expect(result.headers.get("WWW-Authenticate") ?? "").toMatch(/^DPoP error="insufficient_scope"/);
  expect(typeof body.message).toBe("string");
  expect(body.message).toContain(neededScope);
}

/** An XRPC error answer: exact status and error name, a message string, never a 5xx. */
export function expectXrpcError(result: HttpResult, status: number, error: string): XrpcErrorBody {
  const body = result.body as XrpcErrorBody;
  expect({ status: result.status, error: typeof body === "object" && body ? body.error : body }).toEqual({ status, error });
  expect(typeof body.message).toBe("string");
  expect(body.message!.length).toBeGreaterThan(0);
  return body;
}

/** A 401 with the given DPoP challenge code in WWW-Authenticate and an XRPC body. */
export function expectTokenChallenge(result: HttpResult, code: string, xrpcError: string): void {
  expectXrpcError(result, 401, xrpcError);
  expect(result.headers.get("WWW-Authenticate") ?? "").toMatch(new RegExp(`^DPoP error="${code}"`));
}

/** What `@atproto/api`'s AtpAgent throws for a refused call: an XRPCError with the answer's status, XRPC name and message. */
export async function agentRefusal(promise: Promise<unknown>): Promise<{ status: number; error: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    const { status, error: name, message } = error as { status: number; error: string; message: string };
    return { status, error: name, message };
  }
  throw new Error("expected a refusal");
}
