import type { Services } from "../services.ts";
import { authorizationServerMetadata, protectedResourceMetadata, type EndpointName } from "../oauth/metadata/server-metadata.ts";
import { parParametersSchema } from "../oauth/request/par-manager.ts";
import { revocationRequestSchema, tokenRequestSchema } from "../oauth/token/token-manager.ts";
import { handleXrpc, xrpcRouteLabel } from "../xrpc/router.ts";
import { healthEndpoint } from "../observability/health.ts";
import { SERVER_VERSION } from "../version.ts";
import type { ApiRequest } from "./api-request.ts";
import { jsonResponse, type ApiResponse } from "./api-response.ts";
import { oauthEndpoint, noStoreJson } from "./endpoint.ts";
import { MAX_BODY_BYTES } from "./limits.ts";
import { publicRequestUrl, readForm } from "./request-input.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { limitBucketOf } from "./forwarded-address.ts";
import { handleOfHost } from "../identity/handle-host.ts";
import { oauthErrorAnswer, xrpcErrorAnswer } from "./error-answers.ts";
import { canonicalNsid, isNsid } from "../repo/identifiers.ts";

/**
 * The one route table of the JSON endpoints that clients call directly:
 * discovery, PAR, token, revoke, userinfo, jwks and /xrpc. Everything the
 * entry needs to know about an endpoint is here: the fast Node handler
 * (server/api-server.ts) reads path, methods, CORS, limit class, body limit
 * and error shape; the discovery document names its endpoints from it; the
 * route-table test checks both; the metrics label requests by an entry's
 * path (docs/decisions/0014). Each handler is a thin adapter over the
 * provider core. Screens are not here: Express hands them to Remix.
 */

/** The JSON error body of the endpoint: OAuth (RFC 6749 §5.2) or XRPC (`{error, message}`). */
export type ErrorShape = "oauth" | "xrpc";
/** The per-address request limit that counts an endpoint (ATRIUM_RATE_LIMIT_*_PER_MINUTE). */
export type LimitClass = "par" | "token" | "xrpc";
export type HttpMethod = "GET" | "HEAD" | "POST";

export type ApiRoute = {
  /** The path served; with `prefix`, every path that starts with it (and is not served by an exact route). */
  path: string;
  prefix?: true;
  /** Methods served; others get 405 in the route's error shape. OPTIONS is the CORS preflight. */
  methods: readonly HttpMethod[];
  /** Called by browser-based clients on other origins: CORS headers and preflights. */
  cors: boolean;
  limit?: LimitClass;
  /** The largest request body, in bytes. */
  bodyLimit: number;
  errorShape: ErrorShape;
  /** The RFC 8414 member that names this endpoint in the discovery document. */
  metadataName?: EndpointName;
  /**
   * For the authorization server's endpoints: a fresh DPoP-Nonce for every answer, refusals of the entry included
   * (RFC 9449 §8: the server supplies the nonce the client must use next).
   */
  dpopNonce?: () => string;
  /**
   * The route template that labels a request in the metrics, for a prefix route whose paths say more than its
   * prefix; `path` otherwise. Only ever one of a fixed set of values, whatever the request (docs/decisions/0014).
   */
  label?: (path: string) => string;
  handle(request: ApiRequest, path: string): Promise<ApiResponse>;
};

const XRPC_PREFIX = "/xrpc/";

/** The routes, looked up by path: exact routes first (under /xrpc/, by any spelling of the NSID), then the longest prefix. */
export class ApiRouteTable {
  private readonly exact = new Map<string, ApiRoute>();
  private readonly prefixes: ApiRoute[];

  /** The exact /xrpc/ routes by their path in lower case: where another spelling of their NSID may be looked for. */
  private readonly exactXrpc = new Map<string, ApiRoute>();

  constructor(readonly routes: readonly ApiRoute[]) {
    for (const route of routes) if (!route.prefix) this.exact.set(route.path, route);
    for (const route of routes) if (!route.prefix && route.path.startsWith(XRPC_PREFIX)) this.exactXrpc.set(route.path.toLowerCase(), route);
    this.prefixes = routes.filter((route) => route.prefix).sort((a, b) => b.path.length - a.path.length);
  }

  find(path: string): ApiRoute | undefined {
    const exact = this.exact.get(path) ?? this.otherSpelling(path);
    if (exact) return exact;
    for (const route of this.prefixes) if (path.startsWith(route.path)) return route;
    return undefined;
  }

  /**
   * The exact /xrpc/ route whose method `path` names in another spelling (`/xrpc/COM.ATPROTO.repo.uploadBlob` is
   * uploadBlob, with uploadBlob's body limit): the NSID spec makes the domain authority case-insensitive
   * (https://atproto.com/specs/nsid), and the router accepts every spelling (xrpc/router.ts), so the entry must too.
   * The name after the authority stays case-sensitive.
   */
  private otherSpelling(path: string): ApiRoute | undefined {
    const candidate = this.exactXrpc.get(path.toLowerCase());
    if (!candidate) return undefined;
    const name = path.slice(XRPC_PREFIX.length);
    return isNsid(name) && XRPC_PREFIX + canonicalNsid(name) === candidate.path ? candidate : undefined;
  }

  /** The path of each endpoint the discovery documents name. */
  endpointPaths(): Partial<Record<EndpointName, string>> {
    const paths: Partial<Record<EndpointName, string>> = {};
    for (const route of this.routes) if (route.metadataName) paths[route.metadataName] = route.path;
    return paths;
  }
}

export const WELL_KNOWN_AUTHORIZATION_SERVER = "/.well-known/oauth-authorization-server";
export const WELL_KNOWN_PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource";
export const WELL_KNOWN_ATPROTO_DID = "/.well-known/atproto-did";

/** The table, its handlers bound to the services. */
export function apiRoutes(services: Services): ApiRouteTable {
  const { config } = services;
  const json = { cors: true, bodyLimit: MAX_BODY_BYTES } as const;
  const oauth = { ...json, errorShape: "oauth" } as const;
  const authorizationServer = { ...oauth, dpopNonce: () => services.nonces.current() } as const;
  const report = services.reportError;
  const form = (request: ApiRequest) => readForm(request);
  const proofOf = (request: ApiRequest) =>
    services.dpop.verify({ proof: request.headers.get("DPoP"), method: request.method, url: publicRequestUrl(config.issuer, request) });

  const table: ApiRouteTable = new ApiRouteTable([
    {
      ...oauth,
      path: WELL_KNOWN_AUTHORIZATION_SERVER,
      methods: ["GET", "HEAD"],
      handle: async () => discovery(authorizationServerMetadata(config, table.endpointPaths())),
    },
    {
      ...oauth,
      path: WELL_KNOWN_PROTECTED_RESOURCE,
      methods: ["GET", "HEAD"],
      handle: async () => discovery(protectedResourceMetadata(config)),
    },
    {
      // atproto handle resolution (https://atproto.com/specs/handle): the DID of the handle the Host names, as text.
      ...json,
      errorShape: "xrpc",
      path: WELL_KNOWN_ATPROTO_DID,
      methods: ["GET", "HEAD"],
      handle: async (request): Promise<ApiResponse> => {
        const handle = handleOfHost(request.headers.get("host"), config.userDomains);
        const account = handle === undefined ? undefined : await services.accounts.findByHandle(handle);
        if (!account) return { status: 404, headers: { "Content-Type": "text/plain; charset=utf-8" }, body: "No account has this handle here\n" };
        return { status: 200, headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-cache" }, body: account.did };
      },
    },
    {
      // Any other /.well-known/ document: a JSON 404, not the screens' HTML one.
      ...oauth,
      path: "/.well-known/",
      prefix: true,
      methods: ["GET", "HEAD"],
      handle: async () => oauthErrorAnswer(new AtriumError("invalid_request", "No such document", { status: 404 })),
    },
    {
      // RFC 9126 pushed authorization request; DPoP proof required (atproto OAuth profile). RFC 9126 §2.2: "201 Created".
      ...authorizationServer,
      path: "/oauth/par",
      methods: ["POST"],
      limit: "par",
      metadataName: "pushed_authorization_request_endpoint",
      handle: oauthEndpoint(async (request) => {
        const input = parParametersSchema.parse(await form(request));
        const from = request.clientAddress === undefined ? undefined : limitBucketOf(request.clientAddress);
        return noStoreJson(await services.par.push(input, (await proofOf(request)).jkt, from), 201);
      }, { report }),
    },
    {
      // RFC 6749 §3.2: authorization_code (with PKCE) and refresh_token; DPoP required (RFC 9449 §5).
      ...authorizationServer,
      path: "/oauth/token",
      methods: ["POST"],
      limit: "token",
      metadataName: "token_endpoint",
      handle: oauthEndpoint(async (request) => {
        const input = tokenRequestSchema.parse(await form(request));
        return noStoreJson(await services.tokens.exchange(input, (await proofOf(request)).jkt));
      }, { report }),
    },
    {
      // RFC 7009 revocation: the client names itself (a confidential one authenticates); a token issued to another
      // client is refused. No DPoP proof is required (generic RFC 7009 clients send none). Either token ends its grant.
      ...authorizationServer,
      path: "/oauth/revoke",
      methods: ["POST"],
      limit: "token",
      metadataName: "revocation_endpoint",
      handle: oauthEndpoint(async (request) => {
        await services.tokens.revoke(revocationRequestSchema.parse(await form(request)));
        // RFC 7009 §2.2: 200 also for an invalid or unknown token. An empty JSON object, as the reference provider
        // answers: the official atproto client treats any other body as a failed sign-out.
        return noStoreJson({});
      }, { report }),
    },
    {
      // OIDC Core §5.3 userinfo, protected by a DPoP-bound access token (RFC 9449 §7).
      ...authorizationServer,
      path: "/oauth/userinfo",
      methods: ["GET", "POST"],
      metadataName: "userinfo_endpoint",
      handle: oauthEndpoint(async (request) => {
        const subject = await services.accessTokens.verify({
          authorization: request.headers.get("Authorization"),
          dpop: request.headers.get("DPoP"),
          method: request.method,
          url: publicRequestUrl(config.issuer, request),
        });
        return noStoreJson({ sub: subject.did, preferred_username: subject.handle });
      }, { report }),
    },
    {
      // The server signs nothing that clients verify (tokens are opaque), so the set is empty.
      ...authorizationServer,
      path: "/oauth/jwks",
      methods: ["GET", "HEAD"],
      metadataName: "jwks_uri",
      handle: oauthEndpoint(async () => jsonResponse({ keys: [] }, 200, { "Cache-Control": "public, max-age=300" }), { report }),
    },
    {
      // What the reference PDS answers load balancers: 200 {version} while the database answers, 503 otherwise. An
      // exact path, so it wins over the /xrpc/ prefix; polled, so never rate limited (docs/decisions/0014).
      ...json,
      path: "/xrpc/_health",
      methods: ["GET", "HEAD"],
      errorShape: "xrpc",
      handle: healthEndpoint(SERVER_VERSION, services.checkDatabase, report),
    },
    {
      // Blobs are the one large request body.
      ...json,
      path: "/xrpc/com.atproto.repo.uploadBlob",
      methods: ["POST"],
      limit: "xrpc",
      bodyLimit: config.blobMaxBytes,
      errorShape: "xrpc",
      handle: (request, path) => handleXrpc(services, path.slice("/xrpc/".length), request),
    },
    {
      // A repository moving here (docs/decisions/0055): its CAR, streamed, up to its own limit.
      ...json,
      path: "/xrpc/com.atproto.repo.importRepo",
      methods: ["POST"],
      limit: "xrpc",
      bodyLimit: config.importMaxBytes,
      errorShape: "xrpc",
      handle: (request, path) => handleXrpc(services, path.slice("/xrpc/".length), request),
    },
    {
      ...json,
      path: "/xrpc/",
      prefix: true,
      methods: ["GET", "HEAD", "POST"],
      limit: "xrpc",
      errorShape: "xrpc",
      label: xrpcRouteLabel,
      handle: (request, path) => handleXrpc(services, path.slice("/xrpc/".length), request),
    },
  ]);
  return table;
}

function discovery(document: unknown): ApiResponse {
  return jsonResponse(document, 200, { "Cache-Control": "public, max-age=60" });
}

/** Anything thrown, answered in the error shape of the endpoint addressed (the entry's own refusals included). */
export function errorAnswerIn(shape: ErrorShape, thrown: unknown, headers: Record<string, string> = {}): ApiResponse {
  return shape === "xrpc" ? xrpcErrorAnswer(thrown, headers) : oauthErrorAnswer(thrown, headers);
}
