import { AtUri } from "@atproto/syntax";
import { z } from "zod";
import type { ApiRequest } from "../http/api-request.ts";
import type { ApiResponse } from "../http/api-response.ts";
import type { ResourceCaller } from "../resource/resource-auth.ts";
import type { Services } from "../services.ts";
import { callUpstream, discard, passedOn, upstreamFailure, upstreamPath } from "./upstream-call.ts";
import type { ProxyTarget } from "./proxy-target.ts";
import { readAll, type Upstream } from "./upstream-client.ts";
import { invalidRequest, XrpcError } from "./xrpc-error.ts";

export const GET_FEED = "app.bsky.feed.getFeed";
const GET_FEED_SKELETON = "app.bsky.feed.getFeedSkeleton";

/**
 * app.bsky.feed.getFeed, as the reference PDS proxies it (its api/app/bsky/feed/getFeed.ts): the app view asks the
 * feed generator for the skeleton with the caller's token, so the token is for the generator (`aud` its DID, read from
 * the feed's record at the app view) and for app.bsky.feed.getFeedSkeleton. Hence both permissions at the app view:
 * rpc:app.bsky.feed.getFeed and rpc:app.bsky.feed.getFeedSkeleton (transition:generic has both).
 */
export async function getFeedCall(services: Services, caller: ResourceCaller, target: ProxyTarget, request: ApiRequest): Promise<ApiResponse> {
  caller.requireRpc(GET_FEED, target.service);
  caller.requireRpc(GET_FEED_SKELETON, target.service);
  const feed = feedUri(request);
  const upstream = await services.serviceDirectory.upstreamOf(target);
  const generator = await generatorDid(services, upstream, feed);
  const answer = await callUpstream(services, caller, request, upstream, { aud: generator, lxm: GET_FEED_SKELETON, path: upstreamPath(GET_FEED, request) });
  return passedOn(upstream, answer);
}

function feedUri(request: ApiRequest): AtUri {
  const feed = new URL(request.url).searchParams.get("feed");
  if (!feed) throw invalidRequest("feed is required: the at:// URI of a feed generator record");
  let uri: AtUri;
  try {
    uri = new AtUri(feed);
  } catch {
    throw invalidRequest("feed must be the at:// URI of a feed generator record");
  }
  if (!uri.collection || !uri.rkey) throw invalidRequest("feed must be the at:// URI of a feed generator record");
  return uri;
}

const generatorRecord = z.object({ value: z.object({ did: z.string().regex(/^did:[a-z]+:[a-zA-Z0-9._:%-]+$/) }) });

/** The `did` of the feed's app.bsky.feed.generator record, as the app view has it (com.atproto.repo.getRecord). */
async function generatorDid(services: Services, upstream: Upstream, feed: AtUri): Promise<string> {
  const query = new URLSearchParams({ repo: feed.host, collection: feed.collection, rkey: feed.rkey });
  const answer = await services.upstreams.call(upstream, { method: "GET", path: `/xrpc/com.atproto.repo.getRecord?${query}`, headers: { accept: "application/json" } });
  if (answer.status >= 500) throw upstreamFailure(upstream, answer);
  if (answer.status !== 200) {
    discard(answer.body);
    throw unknownFeed(feed);
  }
  let record: unknown;
  try {
    record = JSON.parse((await readAll(answer.body)).toString("utf8"));
  } catch {
    throw new XrpcError(502, "UpstreamFailure", `The service ${upstream.service} answered the feed's record unreadably`);
  }
  const parsed = generatorRecord.safeParse(record);
  if (!parsed.success) throw unknownFeed(feed);
  return parsed.data.value.did;
}

/** The reference's answer when the feed's generator cannot be told. */
function unknownFeed(feed: AtUri): XrpcError {
  return new XrpcError(400, "UnknownFeed", `Could not resolve the feed generator's DID from ${feed.toString()}`);
}
