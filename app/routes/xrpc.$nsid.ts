import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { getServices, type Services } from "../.server/services.ts";
import { describeServer, resolveHandle } from "../.server/xrpc/server-handlers.ts";
import { XrpcError, xrpcErrorResponse } from "../.server/xrpc/xrpc-error.ts";

type QueryHandler = (services: Services, params: URLSearchParams) => unknown;

const queries: Record<string, QueryHandler> = {
  "com.atproto.identity.resolveHandle": resolveHandle,
  "com.atproto.server.describeServer": describeServer,
};

async function handle(nsid: string, request: Request): Promise<Response> {
  try {
    const query = queries[nsid];
    if (!query) throw new XrpcError(501, "MethodNotImplemented", `Method not implemented: ${nsid}`);
    if (request.method !== "GET" && request.method !== "HEAD") throw new XrpcError(405, "InvalidRequest", `${nsid} is a query: use GET`);
    const body = await query(getServices(), new URL(request.url).searchParams);
    return Response.json(body);
  } catch (error) {
    if (error instanceof XrpcError) return xrpcErrorResponse(error);
    console.error(`xrpc ${nsid} failed:`, error);
    return xrpcErrorResponse(new XrpcError(500, "InternalServerError", "Internal Server Error"));
  }
}

export function loader({ params, request }: LoaderFunctionArgs) {
  return handle(params.nsid ?? "", request);
}

export function action({ params, request }: ActionFunctionArgs) {
  return handle(params.nsid ?? "", request);
}
