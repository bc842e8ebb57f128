import type { ApiRequest } from "../http/api-request.ts";
import { jsonResponse, type ApiResponse } from "../http/api-response.ts";
import { publicRequestUrl } from "../http/request-input.ts";
import { authenticateCaller, type ResourceCaller } from "../resource/resource-auth.ts";
import { canonicalNsid, isNsid } from "../repo/identifiers.ts";
import type { Services } from "../services.ts";
import { blobMethods } from "./handlers/blob.ts";
import { identityMethods } from "./handlers/identity.ts";
import { preferenceMethods } from "./handlers/preferences.ts";
import { repoMethods } from "./handlers/repo.ts";
import { syncMethods } from "./handlers/sync.ts";
import { BytesAnswer } from "./bytes-answer.ts";
import { METHODS_REFUSED_FOR_OAUTH, serverMethods } from "./handlers/server.ts";
import { proxyCall } from "./proxy.ts";
import type { XrpcMethod } from "./xrpc-method.ts";
import { xrpcErrorAnswer } from "../http/error-answers.ts";
import { invalidRequest, XrpcError } from "./xrpc-error.ts";
import { accountDeactivated, accountTakenDown } from "../accounts/account-status.ts";
import { firstWithControlCharacter } from "../util/control-characters.ts";
import { adminMethods } from "./handlers/admin.ts";
import { appPasswordMethods } from "./handlers/app-passwords.ts";
import { passwordSessionMethods } from "./handlers/password-sessions.ts";
import { signUpMethods } from "./handlers/sign-up.ts";
import { inviteMethods } from "./handlers/invites.ts";
import type { Viewer } from "./xrpc-method.ts";
import { movingInMethods } from "./handlers/moving-in.ts";

const methods: Record<string, XrpcMethod> = {
  ...serverMethods,
  ...signUpMethods,
  ...inviteMethods,
  ...passwordSessionMethods,
  ...appPasswordMethods,
  ...identityMethods,
  ...repoMethods,
  ...blobMethods,
  ...preferenceMethods,
  ...syncMethods,
  ...adminMethods,
  ...movingInMethods,
};

const MAX_JSON_BYTES = 1024 * 1024;
/** Lexicon data is shallow; a deeper body is refused before any handler walks it (recursion would overflow). */
const MAX_JSON_DEPTH = 64;

/** Depth of a parsed JSON value, measured without recursion. */
export function jsonDepthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    if (depth > max) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The metrics label of an /xrpc call (docs/decisions/0014): the method's own
 * path for the methods this server implements, "other" for anything else, so
 * that no request can add a label value.
 */
export function xrpcRouteLabel(path: string): string {
  const name = path.slice("/xrpc/".length);
  return LOCAL_METHOD_LABELS.get(name) ?? (isNsid(name) ? LOCAL_METHOD_LABELS.get(canonicalNsid(name)) : undefined) ?? "other";
}

const LOCAL_METHOD_LABELS = new Map(Object.keys(methods).map((nsid) => [nsid, `/xrpc/${nsid}`]));

/** Handles /xrpc/<nsid>: local methods, refused methods, proxied methods (atproto XRPC conventions). */
export async function handleXrpc(services: Services, nsid: string, request: ApiRequest): Promise<ApiResponse> {
  // DPoP-authenticated calls carry a fresh nonce on every response (RFC 9449 §8, §9).
  const dpopNonce = request.headers.has("DPoP") ? services.nonces.current() : undefined;
  try {
    const response = await dispatch(services, nsid, request);
    if (dpopNonce) response.headers["DPoP-Nonce"] = dpopNonce;
    return response;
  } catch (error) {
    return xrpcErrorAnswer(error, dpopNonce ? { "DPoP-Nonce": dpopNonce } : {}, (message, thrown) => services.reportError(message, thrown, request.requestId));
  }
}

async function dispatch(services: Services, path: string, request: ApiRequest): Promise<ApiResponse> {
  if (!isNsid(path)) throw invalidRequest("The method name in /xrpc/<method> must be an NSID");
  // Before any decision: /xrpc/COM.ATPROTO.server.createAppPassword is that method, not an unknown one.
  const nsid = canonicalNsid(path);
  const method = methods[nsid];
  // The account-management methods implemented here check their caller themselves (caller.requireAccountManagement).
  if (method) return runLocal(services, nsid, method, request);
  if (METHODS_REFUSED_FOR_OAUTH.has(nsid)) {
    throw new XrpcError(
      403,
      "Forbidden",
      `${nsid} is not available to apps signed in with OAuth, whatever their permissions, nor to password sessions here: use the account page, ${services.config.issuer}/account`,
    );
  }
  return proxyCall(services, nsid, request, () => authenticate(services, request, nsid));
}

async function runLocal(services: Services, nsid: string, method: XrpcMethod, request: ApiRequest): Promise<ApiResponse> {
  const expected = method.type === "query" ? ["GET", "HEAD"] : ["POST"];
  if (!expected.includes(request.method)) {
    throw new XrpcError(405, "InvalidRequest", `${nsid} is a ${method.type}: use ${method.type === "query" ? "GET" : "POST"}`);
  }
  const query = request.url.indexOf("?");
  const params = new URLSearchParams(query === -1 ? "" : request.url.slice(query + 1));
  refuseControlCharacters(params);
  if (method.auth === "none") {
    const ctx = { services, request, params };
    if (method.type === "query") return answerOf(await method.handler(ctx));
    // Procedures answer sessions and their tokens: never stored by a cache.
    const result = method.input === "none" ? await method.handler(ctx) : await method.handler(ctx, await readJson(request));
    return jsonResponse(result, 200, { "Cache-Control": "no-store" });
  }
  if (method.auth === "optional") return answerOf(await method.handler({ services, request, params, viewer: await viewerOf(services, request) }));
  if (method.auth === "admin") {
    // docs/decisions/0051, 0052: HTTP Basic admin:<password>, throttled, before the input is read.
    await services.adminAuth.verifyBasic(request.headers.get("Authorization"), request.clientAddress);
    const ctx = { services, request, params };
    const result = method.type === "query" ? await method.handler(ctx) : await method.handler(ctx, await readJson(request));
    return jsonResponse(result ?? {}, 200, { "Cache-Control": "no-store" });
  }

  const caller = await authenticate(services, request, nsid);
  const ctx = { services, request, params, caller };
  let result: unknown;
  if (method.type === "query" || method.input === "none") result = await method.handler(ctx);
  else if (method.input === "stream") result = await method.handler(ctx, request.chunks());
  else result = await method.handler(ctx, await readJson(request));
  return jsonResponse(result, 200, { "Cache-Control": "no-store" });
}

/**
 * No parameter of a method here may hold a control character (util/control-characters.ts): each names a DID, a handle,
 * an NSID, a record key, a CID, a cursor or a number, whose syntax has none, and a NUL would reach a lookup first.
 */
function refuseControlCharacters(params: URLSearchParams): void {
  const name = firstWithControlCharacter(params);
  if (name !== undefined) throw invalidRequest(`Parameter ${JSON.stringify(name)} must not contain control characters`);
}

/** JSON, unless the method built its own answer (a CAR file, a blob). */
function answerOf(result: unknown): ApiResponse {
  return result instanceof BytesAnswer ? result : jsonResponse(result);
}

/**
 * The caller of an authenticated method. A deactivated account's apps keep their tokens but may call nothing until
 * the person reactivates it (docs/decisions/0031), except getSession, which tells them why (`active: false`,
 * `status: "deactivated"`): the reference answers writes this way, and here reads and proxied calls too, since the
 * person was told that apps lose access. A taken-down account's tokens are gone (docs/decisions/0051); a credential it
 * holds after the takedown (the reference's takedown-only password session) may only do what a takedown leaves the
 * person: `mayCallWhileTakenDown`.
 */
async function authenticate(services: Services, request: ApiRequest, nsid: string): Promise<ResourceCaller> {
  const caller = await authenticateCaller(services, resourceRequestOf(services, request));
  // The reference's refusal of its takedown scope where a method does not accept it: 400 InvalidToken.
  if (caller.takedownOnly && !mayCallWhileTakenDown(nsid)) throw new XrpcError(400, "InvalidToken", `Bad token scope: a takedown-only session cannot call ${nsid}`);
  if (caller.accountState === "takendown" && !mayCallWhileTakenDown(nsid)) throw accountTakenDown();
  if (caller.accountState === "deactivated" && !answersWhileDeactivated(caller, nsid)) throw accountDeactivated();
  return caller;
}

function resourceRequestOf(services: Services, request: ApiRequest) {
  return { authorization: request.headers.get("Authorization"), dpop: request.headers.get("DPoP"), method: request.method, url: publicRequestUrl(services.config.issuer, request) };
}

/**
 * Who calls a method whose credentials are optional: nobody named; the operator, by HTTP Basic (checked and
 * throttled as every admin call); or an account, by any of its tokens whatever the account's state (the method
 * decides what each is served). A credential that fails its check is refused, as the reference refuses it.
 */
async function viewerOf(services: Services, request: ApiRequest): Promise<Viewer> {
  const authorization = request.headers.get("Authorization");
  if (authorization === null) return { kind: "anonymous" };
  if (/^basic\b/i.test(authorization.trim())) {
    await services.adminAuth.verifyBasic(authorization, request.clientAddress);
    return { kind: "admin" };
  }
  const caller = await authenticateCaller(services, resourceRequestOf(services, request));
  return { kind: "account", did: caller.did };
}

const GET_SESSION = "com.atproto.server.getSession";

/**
 * What a deactivated account's callers may still call: getSession, and the identity methods, which the reference
 * PDS allows a deactivated account since moving an account happens while one end of it is deactivated (the account
 * being moved here is deactivated until it is activated, after its DID names this server: docs/decisions/0050).
 */
const ALLOWED_WHILE_DEACTIVATED = new Set([
  "com.atproto.server.getSession",
  "com.atproto.identity.getRecommendedDidCredentials",
  "com.atproto.identity.requestPlcOperationSignature",
  "com.atproto.identity.signPlcOperation",
  "com.atproto.identity.submitPlcOperation",
]);

/**
 * What the reference PDS leaves a taken-down account's own takedown-only session (its AuthScope.Takendown): reading
 * its session, appealing (com.atproto.moderation.createReport, proxied to the moderation service) and a service token
 * to move to another server (getServiceAuth for com.atproto.server.createAccount only: server.ts) with its preferences
 * (getPreferences, which the new server imports) and the DID operation that points the DID at it (the emailed code, then
 * signPlcOperation: docs/decisions/0050). Its repository export (getRepo, getBlob, listBlobs) is served to it through
 * those methods' optional credentials. The reference also lets it deactivate the account, which is not an XRPC method
 * here (docs/decisions/0051).
 */
const TAKEDOWN_METHODS = new Set([
  GET_SESSION,
  "com.atproto.server.getServiceAuth",
  "com.atproto.moderation.createReport",
  "app.bsky.actor.getPreferences",
  "com.atproto.identity.requestPlcOperationSignature",
  "com.atproto.identity.signPlcOperation",
]);

export function mayCallWhileTakenDown(nsid: string): boolean {
  return TAKEDOWN_METHODS.has(nsid);
}

/**
 * And, from a password session only, the other steps of moving the account here, which it takes while deactivated
 * (the reference's documented migration signs in with the password: docs/decisions/0055). Its OAuth apps get nothing
 * else, as docs/decisions/0031 promised the person. Each of these methods checks its caller's permissions itself.
 */
const STEPS_OF_A_MOVE = new Set([
  "com.atproto.repo.importRepo",
  "com.atproto.repo.listMissingBlobs",
  "com.atproto.repo.uploadBlob",
  "com.atproto.server.checkAccountStatus",
  "com.atproto.server.activateAccount",
  // The guide's preferences step: those read at the old server, written here before the account is activated.
  "app.bsky.actor.putPreferences",
]);

function answersWhileDeactivated(caller: ResourceCaller, nsid: string): boolean {
  return ALLOWED_WHILE_DEACTIVATED.has(nsid) || (caller.credentials.kind === "password" && STEPS_OF_A_MOVE.has(nsid));
}

async function readJson(request: ApiRequest): Promise<unknown> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") throw invalidRequest("Content-Type must be application/json");
  const text = await request.text();
  if (text.length > MAX_JSON_BYTES) throw new XrpcError(413, "PayloadTooLarge", "Request body is too large");
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch {
    throw invalidRequest("Request body is not valid JSON");
  }
  if (jsonDepthExceeds(body, MAX_JSON_DEPTH)) throw invalidRequest(`Request body is nested more than ${MAX_JSON_DEPTH} levels deep`);
  return body;
}

