/**
 * Client metadata documents for the tests of their fetch and their cache (tests/integration/client-fetch-hardening,
 * client-metadata-cache): a PAR that names a client_id, the refusal it should get, and a loopback host that serves
 * documents, well or badly.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "vitest";
import { createPkce, DpopClient, generateDpopKey, type HttpResult } from "../../scripts/lib/dpop-client.ts";
import { SCOPE, type OAuthErrorBody } from "./flow.ts";
import type { TestServer } from "./test-server.ts";

/** A PAR for `clientId` with a valid DPoP proof and the current nonce; returns the answer and how long it took. */
export async function pushFor(server: TestServer, clientId: string, redirectUri = "https://app.example.com/callback") {
  const client = new DpopClient(server.issuer, await generateDpopKey(), clientId);
  // Prime the nonce so the timed request is the one that reaches the client_id check.
  await client.pushAuthorizationRequest({});
  const pkce = createPkce();
  const started = performance.now();
  const result = await client.pushAuthorizationRequest({
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: "hardening-state",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  return { result, ms: performance.now() - started };
}

export function expectInvalidClientMetadata(result: HttpResult<unknown>, context: string) {
  const body = result.body as OAuthErrorBody;
  expect({ context, status: result.status, contentType: result.headers.get("content-type"), error: body?.error }).toEqual({
    context,
    status: 400,
    contentType: expect.stringContaining("application/json"),
    error: "invalid_client_metadata",
  });
  expect(typeof body.error_description).toBe("string");
}

export type HostRoute = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A node:http server on 127.0.0.1 with one handler per path and a hit counter. */
export class DocumentHost {
  readonly hits = new Map<string, number>();
  private readonly routes = new Map<string, HostRoute>();
  private readonly timers = new Set<NodeJS.Timeout>();
  origin = "";
  private server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
    const route = this.routes.get(path);
    if (!route) {
      res.writeHead(404, { "Content-Type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    route(req, res);
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", () => resolve()));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  route(path: string, handler: HostRoute): string {
    this.routes.set(path, handler);
    return `${this.origin}${path}`;
  }

  later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  /** A valid metadata document for the client_id `clientId`, served from this host. */
  document(clientId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      client_id: clientId,
      client_name: "Hardening Test App",
      dpop_bound_access_tokens: true,
      redirect_uris: [`${this.origin}/callback`],
      scope: SCOPE,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      application_type: "web",
      token_endpoint_auth_method: "none",
      ...extra,
    };
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
