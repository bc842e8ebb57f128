import type { ApiRequest } from "../http/api-request.ts";
import type { ApiResponse } from "../http/api-response.ts";
import { createServiceJwt } from "../accounts/service-auth.ts";
import type { ResourceCaller } from "../resource/resource-auth.ts";
import type { Services } from "../services.ts";
import { MINUTE } from "../util/time.ts";
import { invalidRequest, XrpcError } from "./xrpc-error.ts";

/** Request headers passed on to the upstream service (atproto service proxying). */
const FORWARDED_REQUEST_HEADERS = ["content-type", "accept", "accept-language", "atproto-accept-labelers", "content-encoding"];
const FORWARDED_RESPONSE_HEADERS = ["Content-Type", "Content-Language", "atproto-content-labelers", "atproto-repo-rev", "Cache-Control"];

/** The `did#service` a call goes to: the atproto-proxy header, or the app view for app.bsky.* calls. */
export function proxyTarget(services: Services, nsid: string, header: string | null): string | undefined {
  if (header) return header.trim();
  if (nsid.startsWith("app.bsky.")) return services.config.appview;
  return undefined;
}

/**
 * Forwards an XRPC call to the configured upstream for `did#service`, with a
 * service JWT signed by the caller's account key, after checking
 * rpc:<nsid>?aud=<did#service> (chat.bsky.* needs transition:chat.bsky or an
 * explicit rpc: grant; the scope class handles that).
 */
export async function proxyCall(services: Services, caller: ResourceCaller, nsid: string, target: string, request: ApiRequest): Promise<ApiResponse> {
  const match = /^(did:[a-z]+:[^#\s]+)#([a-zA-Z0-9_-]+)$/.exec(target);
  if (!match) throw invalidRequest("atproto-proxy must be of the form <did>#<service>");
  const [, did] = match as unknown as [string, string];
  const upstream = services.config.proxyServices[target];
  if (!upstream) throw new XrpcError(400, "InvalidRequest", `No upstream is configured for the service ${target}`);
  caller.requireRpc(nsid, target);

  const signingKey = await services.accounts.signingKeypair(caller.did);
  if (!signingKey) throw invalidRequest("The account has no signing key");
  const token = await createServiceJwt({ iss: caller.did, aud: did, lxm: nsid, expiresAt: services.now() + MINUTE, signingKey, now: services.now() });

  const url = new URL(`${upstream}/xrpc/${nsid}`);
  url.search = new URL(request.url).search;
  const headers = new Headers({ authorization: `Bearer ${token}` });
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = request.headers.get(name);
    if (value) headers.set(name, value);
  }
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method,
      headers,
      body: request.method === "POST" ? await request.arrayBuffer() : undefined,
      redirect: "manual",
      signal: AbortSignal.timeout(30_000),
    });
  } catch {
    throw new XrpcError(502, "UpstreamFailure", `The service ${target} could not be reached`);
  }
  const forwarded: Record<string, string> = {};
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const value = response.headers.get(name);
    if (value) forwarded[name] = value;
  }
  // Passed through as it streams in: upstream answers (timelines, feeds) can be large.
  return { status: response.status, headers: forwarded, body: response.body };
}
