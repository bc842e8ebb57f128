import type { ActionFunctionArgs, AppLoadContext, EntryContext, LoaderFunctionArgs } from "@remix-run/node";
import { isRouteErrorResponse, RemixServer } from "@remix-run/react";
import { streamPage } from "./.server/screens/stream-page";

/**
 * Renders the screens to a stream; the CSP nonce from server.ts goes on every script. No fixed abort timer: a
 * render ends when it is complete, when the client goes away, or at the entry's response timeout, and every error
 * it meets is logged (app/.server/screens/stream-page.ts, docs/decisions/0024).
 */
export default function handleRequest(
  request: Request,
  responseStatusCode: number,
  responseHeaders: Headers,
  remixContext: EntryContext,
  loadContext: AppLoadContext,
) {
  const nonce = typeof loadContext.cspNonce === "string" ? loadContext.cspNonce : undefined;
  const { services } = loadContext;
  const requestId = request.headers.get("X-Request-Id");
  return streamPage(<RemixServer context={remixContext} url={request.url} nonce={nonce} />, {
    status: responseStatusCode,
    headers: responseHeaders,
    nonce,
    signal: request.signal,
    deadlineMs: services.config.requestTimeoutMs,
    report: (message, error) => services.reportError(message, error, requestId),
  });
}

/**
 * Errors thrown by a loader or action (Remix calls this instead of
 * console.error): an unexpected one goes to the server's log with its stack
 * and the request id (docs/decisions/0014). Refusals Remix makes itself (a
 * 404 or 405 for a path or method no route serves) are a client's mistake,
 * logged at debug.
 */
export function handleError(error: unknown, { request, context }: LoaderFunctionArgs | ActionFunctionArgs) {
  if (request.signal.aborted) return;
  const requestId = request.headers.get("X-Request-Id");
  if (isRouteErrorResponse(error) && error.status < 500) {
    context.services.log.debug({ reqId: requestId, status: error.status }, "Request refused by the router");
    return;
  }
  context.services.reportError("Unexpected error while handling a request", error, requestId);
}
