import { AtUri } from "@atproto/syntax";
import type { ApiRequest } from "../../http/api-request.ts";
import { jsonResponse, type ApiResponse } from "../../http/api-response.ts";
import type { ResourceCaller } from "../../resource/resource-auth.ts";
import type { Services } from "../../services.ts";
import type { ProxyTarget } from "../proxy-target.ts";
import { callUpstream, discard, forwardedHeaders, passedOn, serviceToken, upstreamFailure, upstreamPath } from "../upstream-call.ts";
import { readAll, type Upstream, type UpstreamAnswer } from "../upstream-client.ts";
import { XrpcError } from "../xrpc-error.ts";
import { isObject, LocalViewer, localRecordsOf, type AppviewRead, type LocalRecords } from "./local-viewer.ts";
import { highestParentUri, MUNGES, threadPostView, withLocalReplies } from "./munge.ts";

/**
 * Read-after-write (docs/decisions/0048), as the reference PDS does it (its read-after-write/): the app view says in
 * `atproto-repo-rev` how far it has read the caller's repository; the records the caller wrote after that revision
 * (at most 10, oldest first: RepoStore.recordsSinceRev) are put into the answer, so that a person sees their own new
 * post in their timeline, author feed and thread, and their new profile, before the app view has indexed them. The
 * answer then says how far behind the app view was (`Atproto-Upstream-Lag`, milliseconds). Without newer records, or
 * with an answer that is not JSON, the app view's answer is passed on as it came.
 */

export const READ_AFTER_WRITE: ReadonlySet<string> = new Set(Object.keys(MUNGES));

const GET_POST_THREAD = "app.bsky.feed.getPostThread";
/** The reference's bound: at most this many records are looked at. */
const LOCAL_RECORDS_LIMIT = 10;
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export async function readAfterWriteCall(services: Services, caller: ResourceCaller, nsid: string, target: ProxyTarget, upstream: Upstream, request: ApiRequest): Promise<ApiResponse> {
  // The answer may need reading here: asked for unencoded.
  const answer = await callUpstream(services, caller, request, upstream, { aud: target.did, lxm: nsid, path: upstreamPath(nsid, request), acceptEncoding: "identity" });
  if (answer.status >= 500) throw upstreamFailure(upstream, answer);
  const rev = headerOf(answer, "atproto-repo-rev");
  const readable = rev !== undefined && request.method !== "HEAD" && isUnencodedJson(answer);
  if (readable && nsid === GET_POST_THREAD && answer.status === 400) return threadNotFound(services, caller, target, upstream, request, answer, rev);
  if (!readable || answer.status !== 200) return passedOn(upstream, answer);

  const local = await localRecords(services, caller.did, rev);
  if (local.count === 0) return passedOn(upstream, answer);
  const bytes = await readAnswer(upstream, answer);
  const original = parsedObject(bytes);
  if (!original) return buffered(answer, bytes);
  let munged: Record<string, unknown>;
  try {
    munged = await MUNGES[nsid]!(viewerOf(services, caller, target, upstream), original, local);
  } catch (error) {
    services.reportError("Adding the account's newest records to an app view answer failed", error, request.requestId);
    return buffered(answer, bytes);
  }
  return jsonResponse(munged, 200, { ...forwardedHeaders(answer, false), ...lagHeader(local, services.now()) });
}

/**
 * getPostThread of the caller's own post that the app view has not seen (400 NotFound): the thread built from the
 * local post, its local replies, and what the app view has above it; otherwise the app view's answer.
 */
async function threadNotFound(
  services: Services,
  caller: ResourceCaller,
  target: ProxyTarget,
  upstream: Upstream,
  request: ApiRequest,
  answer: UpstreamAnswer,
  rev: string,
): Promise<ApiResponse> {
  const bytes = await readAnswer(upstream, answer);
  const error = parsedObject(bytes);
  const params = new URL(request.url).searchParams;
  const uri = await ownPostUri(services, caller, params.get("uri"));
  if (error?.error !== "NotFound" || !uri) return buffered(answer, bytes);
  const local = await localRecords(services, caller.did, rev);
  const found = local.posts.find((post) => post.uri === uri);
  if (!found) return buffered(answer, bytes);
  const viewer = viewerOf(services, caller, target, upstream);
  const thread = await withLocalReplies(viewer, await threadPostView(viewer, found), local.posts.filter((post) => post !== found));
  const parentUri = highestParentUri(thread);
  if (parentUri) {
    const parents = await appviewRead(services, caller, target, upstream)(GET_POST_THREAD, { uri: parentUri, depth: "0", ...(params.get("parentHeight") ? { parentHeight: params.get("parentHeight")! } : {}) });
    if (isObject(parents?.thread)) thread.parent = parents.thread;
  }
  return jsonResponse({ thread }, 200, { ...forwardedHeaders(answer, false), ...lagHeader(local, services.now()) });
}

/** The at:// URI asked for, with the caller's handle as its authority read as the caller's DID; undefined for anyone else's. */
async function ownPostUri(services: Services, caller: ResourceCaller, value: string | null): Promise<string | undefined> {
  if (!value) return undefined;
  let uri: AtUri;
  try {
    uri = new AtUri(value);
  } catch {
    return undefined;
  }
  const host = uri.host.toLowerCase() === caller.handle.toLowerCase() ? caller.did : uri.host;
  return host === caller.did ? `at://${host}${uri.pathname}` : undefined;
}

async function localRecords(services: Services, did: string, rev: string): Promise<LocalRecords> {
  return localRecordsOf(did, await services.repo.recordsSinceRev(did, rev, LOCAL_RECORDS_LIMIT));
}

function viewerOf(services: Services, caller: ResourceCaller, target: ProxyTarget, upstream: Upstream): LocalViewer {
  return new LocalViewer({
    did: caller.did,
    handle: caller.handle,
    issuer: services.config.issuer,
    profile: async () => {
      const record = await services.repo.getRecord(caller.did, "app.bsky.actor.profile", "self");
      return isObject(record?.value) ? record.value : undefined;
    },
    appview: appviewRead(services, caller, target, upstream),
  });
}

/**
 * Reads of the app view that the local views need (quoted posts, a thread's parents), with the caller's token, each
 * only when the caller's permissions cover it: nothing is signed for a method the caller may not call.
 */
function appviewRead(services: Services, caller: ResourceCaller, target: ProxyTarget, upstream: Upstream): AppviewRead {
  return async (lxm, params) => {
    try {
      caller.requireRpc(lxm, target.service);
    } catch {
      return undefined;
    }
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) for (const one of [value].flat()) query.append(name, one);
    const token = await serviceToken(services, caller.did, target.did, lxm);
    let answer: UpstreamAnswer;
    try {
      answer = await services.upstreams.call(upstream, { method: "GET", path: `/xrpc/${lxm}?${query}`, headers: { authorization: `Bearer ${token}`, "accept-encoding": "identity" } });
    } catch {
      return undefined;
    }
    if (answer.status !== 200 || !isUnencodedJson(answer)) {
      discard(answer.body);
      return undefined;
    }
    return parsedObject(await readAll(answer.body).catch(() => Buffer.alloc(0)));
  };
}

async function readAnswer(upstream: Upstream, answer: UpstreamAnswer): Promise<Buffer> {
  try {
    return await readAll(answer.body);
  } catch (error) {
    throw new XrpcError(502, "UpstreamFailure", `The service ${upstream.service} answered unreadably: ${(error as Error).message}`);
  }
}

/** The app view's answer as it came, once read. */
function buffered(answer: UpstreamAnswer, bytes: Buffer): ApiResponse {
  return { status: answer.status, headers: forwardedHeaders(answer, true), body: bytes };
}

function parsedObject(bytes: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(bytes.toString("utf8"));
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function headerOf(answer: UpstreamAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function isUnencodedJson(answer: UpstreamAnswer): boolean {
  const encoding = headerOf(answer, "content-encoding");
  return JSON_TYPE.test(headerOf(answer, "content-type") ?? "") && (encoding === undefined || encoding === "identity");
}

/** How far behind the app view was: since the oldest local record it had not seen. */
function lagHeader(local: LocalRecords, now: number): Record<string, string> {
  const times = [local.profile, ...local.posts].filter((record) => record !== null).map((record) => Date.parse(record.indexedAt));
  return times.length === 0 ? {} : { "Atproto-Upstream-Lag": String(now - Math.min(...times)) };
}
