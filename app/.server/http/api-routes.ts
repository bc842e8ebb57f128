import { getConfig } from "../config.ts";
import { authorizationServerMetadata, protectedResourceMetadata } from "../oauth/metadata/server-metadata.ts";
import { parParametersSchema } from "../oauth/request/par-manager.ts";
import { revocationRequestSchema, tokenRequestSchema } from "../oauth/token/token-manager.ts";
import { handleXrpc } from "../xrpc/router.ts";
import type { ApiRequest } from "./api-request.ts";
import { jsonResponse, type ApiResponse } from "./api-response.ts";
import { jsonEndpoint, methodNotAllowed, noStoreJson } from "./endpoint.ts";
import { publicRequestUrl, readForm } from "./request-input.ts";

/**
 * The JSON endpoints clients call directly (DESIGN §1): discovery, PAR,
 * token, revoke, userinfo, jwks and /xrpc. Each is a thin adapter over the
 * provider core. The Express entry routes these paths here before Remix,
 * which serves only the screens.
 */

type Endpoint = (request: ApiRequest) => Promise<ApiResponse>;

const postOnly = (handler: Endpoint): Endpoint => (request) => (request.method === "POST" ? handler(request) : methodNotAllowed("POST"));

const discovery = (document: () => unknown): Endpoint => async () =>
  jsonResponse(document(), 200, { "Cache-Control": "public, max-age=60" });

const endpoints: Record<string, Endpoint> = {
  "/.well-known/oauth-authorization-server": discovery(() => authorizationServerMetadata(getConfig())),
  "/.well-known/oauth-protected-resource": discovery(() => protectedResourceMetadata(getConfig())),

  /** RFC 9126 pushed authorization request; DPoP proof required (atproto OAuth profile). */
  "/oauth/par": postOnly((request) =>
    jsonEndpoint("authorization-server", async ({ config, dpop, par }) => {
      const form = await readForm(request);
      const proof = await dpop.verify({ proof: request.headers.get("DPoP"), method: "POST", url: publicRequestUrl(config.issuer, request) });
      // RFC 9126 §2.2: "201 Created".
      return noStoreJson(await par.push(parParametersSchema.parse(form), proof.jkt), 201);
    }),
  ),

  /** RFC 6749 §3.2: authorization_code (with PKCE) and refresh_token; DPoP required (RFC 9449 §5). */
  "/oauth/token": postOnly((request) =>
    jsonEndpoint("authorization-server", async ({ config, dpop, tokens }) => {
      const form = await readForm(request);
      const proof = await dpop.verify({ proof: request.headers.get("DPoP"), method: "POST", url: publicRequestUrl(config.issuer, request) });
      return noStoreJson(await tokens.exchange(tokenRequestSchema.parse(form), proof.jkt));
    }),
  ),

  /**
   * RFC 7009 revocation: the client names itself (and a confidential one
   * authenticates); a token issued to another client is refused. No DPoP
   * proof is required (generic RFC 7009 clients send none). Either token ends
   * its whole grant.
   */
  "/oauth/revoke": postOnly((request) =>
    jsonEndpoint("authorization-server", async ({ tokens }) => {
      await tokens.revoke(revocationRequestSchema.parse(await readForm(request)));
      // RFC 7009 §2.2: 200 also when the token was invalid or unknown. The body is an empty JSON object, as the
      // reference provider answers: the official atproto client treats any other body as a failed sign-out.
      return noStoreJson({});
    }),
  ),

  /** OIDC Core §5.3 userinfo, protected by a DPoP-bound access token (RFC 9449 §7). */
  "/oauth/userinfo": (request) =>
    jsonEndpoint("resource", async ({ config, accessTokens }) => {
      const subject = await accessTokens.verify({
        authorization: request.headers.get("Authorization"),
        dpop: request.headers.get("DPoP"),
        method: request.method,
        url: publicRequestUrl(config.issuer, request),
      });
      return noStoreJson({ sub: subject.did, preferred_username: subject.handle });
    }),

  /** The server signs nothing that clients verify (tokens are opaque), so the set is empty. */
  "/oauth/jwks": () =>
    jsonEndpoint("authorization-server", async () => jsonResponse({ keys: [] }, 200, { "Cache-Control": "public, max-age=300" })),
};

/** The response for an API path, or undefined when the path is not one (Remix then answers). */
export function handleApiRequest(path: string, request: ApiRequest): Promise<ApiResponse> | undefined {
  const endpoint = endpoints[path];
  if (endpoint) return endpoint(request);
  if (path.startsWith("/xrpc/")) return handleXrpc(path.slice("/xrpc/".length), request);
  return undefined;
}
