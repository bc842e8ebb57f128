import type { ApiRequest } from "../http/api-request.ts";
import type { ResourceCaller } from "../resource/resource-auth.ts";
import type { Services } from "../services.ts";

export type XrpcContext = {
  services: Services;
  request: ApiRequest;
  params: URLSearchParams;
  /** Present on methods with auth "required". */
  caller?: ResourceCaller;
};

export type AuthenticatedContext = XrpcContext & { caller: ResourceCaller };

/**
 * Who called a method whose credentials are optional (the repository export methods, docs/decisions/0051): nobody
 * named, the operator (HTTP Basic admin:<password>), or an account by one of its tokens, whatever its state.
 */
export type Viewer = { kind: "anonymous" } | { kind: "admin" } | { kind: "account"; did: string };

export type ViewerContext = XrpcContext & { viewer: Viewer };

/**
 * One XRPC method: queries are GET, procedures POST (atproto XRPC conventions). `auth`: "none" (public), "optional"
 * (public, and more for the owner or the operator), "required" (an account's token), "admin" (HTTP Basic
 * admin:<password>, checked before the input is read: admin/admin-auth.ts; docs/decisions/0051).
 */
export type XrpcMethod =
  | { type: "query"; auth: "none"; handler: (ctx: XrpcContext) => unknown }
  | { type: "query"; auth: "optional"; handler: (ctx: ViewerContext) => unknown }
  | { type: "query"; auth: "admin"; handler: (ctx: XrpcContext) => unknown }
  | { type: "procedure"; auth: "admin"; input: "json"; handler: (ctx: XrpcContext, body: unknown) => unknown }
  /** A procedure whose credential is in its input or header, checked by the handler (createSession, refreshSession…). */
  | { type: "procedure"; auth: "none"; input: "json"; handler: (ctx: XrpcContext, body: unknown) => unknown }
  | { type: "procedure"; auth: "none"; input: "none"; handler: (ctx: XrpcContext) => unknown }
  | { type: "query"; auth: "required"; handler: (ctx: AuthenticatedContext) => unknown }
  | { type: "procedure"; auth: "required"; input: "json"; handler: (ctx: AuthenticatedContext, body: unknown) => unknown }
  /** A procedure whose lexicon has no input (clients send no body and no Content-Type). */
  | { type: "procedure"; auth: "required"; input: "none"; handler: (ctx: AuthenticatedContext) => unknown }
  /** A raw body (uploadBlob), handed to the handler as it arrives, never past the route's body limit. */
  | { type: "procedure"; auth: "required"; input: "stream"; handler: (ctx: AuthenticatedContext, body: AsyncIterable<Uint8Array>) => unknown };

export type XrpcMethods = Record<string, XrpcMethod>;
