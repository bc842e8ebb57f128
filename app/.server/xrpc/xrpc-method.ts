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

/** One XRPC method: queries are GET, procedures POST (atproto XRPC conventions). */
export type XrpcMethod =
  | { type: "query"; auth: "none"; handler: (ctx: XrpcContext) => unknown }
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
