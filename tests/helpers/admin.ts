import type { HttpResult } from "../../scripts/lib/dpop-client.ts";
import type { TestServer } from "./test-server.ts";

/** The admin password the tests' servers are started with (ATRIUM_ADMIN_PASSWORD, docs/decisions/0051). */
export const ADMIN_PASSWORD = "an admin password of the tests";

/** `Authorization: Basic` for admin:<password>, as pdsadmin's curl --user sends it. */
export function basicAuthorization(password: string = ADMIN_PASSWORD, user = "admin"): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
}

/**
 * An admin XRPC call (GET with `params`, POST JSON with `json`), with HTTP Basic admin:<password> unless
 * `authorization` says otherwise (null: none); `headers` adds more (an address for a server that trusts a proxy).
 */
export async function adminCall<T = Record<string, unknown>>(
  server: Pick<TestServer, "issuer">,
  nsid: string,
  options: { params?: Record<string, string | string[]>; json?: unknown; authorization?: string | null; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const url = new URL(`${server.issuer}/xrpc/${nsid}`);
  for (const [name, value] of Object.entries(options.params ?? {})) for (const one of [value].flat()) url.searchParams.append(name, one);
  const headers: Record<string, string> = { ...options.headers };
  const authorization = options.authorization === undefined ? basicAuthorization() : options.authorization;
  if (authorization !== null) headers.Authorization = authorization;
  if (options.json !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, { method: options.json === undefined ? "GET" : "POST", headers, body: options.json === undefined ? undefined : JSON.stringify(options.json) });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a CAR): the text stands.
  }
  return { status: response.status, body: body as T, headers: response.headers };
}

/** updateSubjectStatus's takedown (or its reversal, `applied` false) of an account, as pdsadmin sends it. */
export function takedownAccount(server: Pick<TestServer, "issuer">, did: string, applied: boolean, ref = "a test takedown") {
  return adminCall(server, "com.atproto.admin.updateSubjectStatus", {
    json: { subject: { $type: "com.atproto.admin.defs#repoRef", did }, takedown: applied ? { applied, ref } : { applied } },
  });
}
