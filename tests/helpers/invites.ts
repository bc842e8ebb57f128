/**
 * Invite codes for the sign-up tests (docs/decisions/0052), made as the operator makes them: createInviteCode behind
 * HTTP Basic admin:<ATRIUM_ADMIN_PASSWORD>.
 */
import type { TestServer } from "./test-server.ts";

/** The admin password the sign-up tests start their servers with. */
export const ADMIN_PASSWORD = "an admin password of some length";

/** `Authorization: Basic admin:<password>`. */
export function adminAuthorization(password = ADMIN_PASSWORD): string {
  return `Basic ${Buffer.from(`admin:${password}`).toString("base64")}`;
}

/** A new code of `useCount` uses (for `forAccount`, or for nobody in particular); throws unless the server made it. */
export async function adminInviteCode(server: TestServer, useCount = 1, forAccount?: string): Promise<string> {
  const response = await fetch(`${server.issuer}/xrpc/com.atproto.server.createInviteCode`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: adminAuthorization() },
    body: JSON.stringify({ useCount, ...(forAccount ? { forAccount } : {}) }),
  });
  if (response.status !== 200) throw new Error(`createInviteCode answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { code: string }).code;
}
