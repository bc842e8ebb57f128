import type { ServerResponse } from "node:http";

/**
 * Requests the app has not answered in ATRIUM_REQUEST_TIMEOUT_SECONDS get a
 * 503 with Retry-After instead of hanging, in the shape their endpoint speaks
 * (JSON for the API, a page for the screens). Both entries arm their timer
 * here; `answer` runs only if nothing was sent yet.
 */

export const TOO_LATE = { message: "The server took too long to answer", retryAfterSeconds: "5" } as const;

/**
 * Calls `answer(res, ...args)` after `timeoutMs` unless the response has
 * started by then. The caller clears the returned timer once it answered.
 */
export function armResponseTimer<A extends unknown[]>(timeoutMs: number, res: ServerResponse, answer: (res: ServerResponse, ...args: A) => void, ...args: A): NodeJS.Timeout {
  return setTimeout(answerIfSilent<A>, timeoutMs, res, answer, args);
}

function answerIfSilent<A extends unknown[]>(res: ServerResponse, answer: (res: ServerResponse, ...args: A) => void, args: A): void {
  if (!res.headersSent && !res.destroyed) answer(res, ...args);
}
