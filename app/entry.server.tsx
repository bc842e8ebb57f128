import { PassThrough } from "node:stream";
import type { ActionFunctionArgs, AppLoadContext, EntryContext, LoaderFunctionArgs } from "@remix-run/node";
import { createReadableStreamFromReadable } from "@remix-run/node";
import { isRouteErrorResponse, RemixServer } from "@remix-run/react";
import { renderToPipeableStream } from "react-dom/server";

const ABORT_DELAY = 5_000;

/** Renders the screens to a stream; the CSP nonce from server.ts goes on every script. */
export default function handleRequest(
  request: Request,
  responseStatusCode: number,
  responseHeaders: Headers,
  remixContext: EntryContext,
  loadContext: AppLoadContext,
) {
  const nonce = typeof loadContext.cspNonce === "string" ? loadContext.cspNonce : undefined;
  return new Promise<Response>((resolve, reject) => {
    let shellRendered = false;
    const { pipe, abort } = renderToPipeableStream(
      <RemixServer context={remixContext} url={request.url} abortDelay={ABORT_DELAY} nonce={nonce} />,
      {
        nonce,
        onAllReady() {
          shellRendered = true;
          const body = new PassThrough();
          responseHeaders.set("Content-Type", "text/html; charset=utf-8");
          resolve(new Response(createReadableStreamFromReadable(body), { headers: responseHeaders, status: responseStatusCode }));
          pipe(body);
        },
        onShellError(error: unknown) {
          reject(error);
        },
        onError(error: unknown) {
          responseStatusCode = 500;
          if (shellRendered) loadContext.services.reportError("Unexpected error while rendering a page", error, request.headers.get("X-Request-Id"));
        },
      },
    );
    setTimeout(abort, ABORT_DELAY);
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
