import type { ApiRequest } from "../http/api-request.ts";
import type { ApiResponse } from "../http/api-response.ts";
import type { ResourceCaller } from "../resource/resource-auth.ts";
import type { Services } from "../services.ts";
import { getFeedCall, GET_FEED } from "./feed-generator.ts";
import { isProtectedMethod } from "./protected-methods.ts";
import { proxyTargetOf } from "./proxy-target.ts";
import { readAfterWriteCall, READ_AFTER_WRITE } from "./read-after-write/read-after-write.ts";
import { callUpstream, passedOn, upstreamPath } from "./upstream-call.ts";
import { XrpcError } from "./xrpc-error.ts";

/**
 * Service proxying (atproto XRPC, "Service Proxying": https://atproto.com/specs/xrpc; docs/decisions/0048): a call
 * for a method this server does not implement goes to the service atproto-proxy names (or the default one:
 * proxy-target.ts), with a service token signed by the caller's account key (`iss` the account, `aud` the service's
 * bare DID, `lxm` the method, a minute's lifetime), after the caller's rpc:<lxm>?aud=<did#service> permission
 * (caller.requireRpc: chat.bsky.* needs transition:chat.bsky or an explicit rpc: grant). In order, so that nothing is
 * resolved, signed or sent for a call that will be refused: the protected methods, the service named, the caller,
 * its permission, where the service is, the token, the call. Two methods get more: getFeed (a token for the feed
 * generator: feed-generator.ts) and the reads that show the account's own newest records (read-after-write/).
 */
export async function proxyCall(services: Services, nsid: string, request: ApiRequest, authenticate: () => Promise<ResourceCaller>): Promise<ApiResponse> {
  if (isProtectedMethod(nsid)) {
    // The reference's answer (its pipethrough.ts: "Bad token method").
    throw new XrpcError(400, "InvalidToken", `${nsid} is account management: it is done at this server directly, never through another service`);
  }
  const target = proxyTargetOf(services.config, nsid, request.headers.get("atproto-proxy"));
  if (!target) throw new XrpcError(501, "MethodNotImplemented", `Method not implemented: ${nsid}`);
  const caller = await authenticate();
  if (nsid === GET_FEED) return getFeedCall(services, caller, target, request);
  caller.requireRpc(nsid, target.service);
  const upstream = await services.serviceDirectory.upstreamOf(target);
  if (READ_AFTER_WRITE.has(nsid)) return readAfterWriteCall(services, caller, nsid, target, upstream, request);
  const answer = await callUpstream(services, caller, request, upstream, { aud: target.did, lxm: nsid, path: upstreamPath(nsid, request) });
  return passedOn(upstream, answer);
}
