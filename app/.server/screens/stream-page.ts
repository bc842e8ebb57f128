import { Transform, type TransformCallback } from "node:stream";
import { createReadableStreamFromReadable } from "@remix-run/node";
import type { ReactElement } from "react";
import { renderToPipeableStream } from "react-dom/server";

/**
 * Renders a page to a streamed HTML answer (app/entry.server.tsx), once everything is ready, so that the status is
 * known before the first byte (docs/decisions/0024).
 *
 * Issue 16: under parallel sign-in bursts a few answers were 500 with a complete, normal page, and nothing was
 * logged. The entry aborted every render 5 seconds after it started, on a timer it never cleared; a render still
 * waiting for the event loop at that moment (Remix streams the loader data into the page through Suspense, a turn
 * of the loop per chunk, and a burst queues hundreds of turns) was aborted, React rendered the rest in the browser,
 * and `onError` set 500 but logged only errors that came after the shell. So:
 *
 * - no fixed abort timer. The pages defer no data, so a render always finishes; it stops when the request is
 *   aborted (the client went away) or at `deadlineMs`, the entry's response timeout, by which time the entry has
 *   answered 503 (server/response-timeout.ts) and nobody reads this answer. Either way the answer is a rejection:
 *   Remix logs it unless the client is gone (`handleError`);
 * - every error of the render is reported, before the shell or after; only errors caused by stopping it are not.
 *   A shell error rejects: Remix reports it (`handleError`) and renders the error boundary.
 */
export type StreamPageOptions = {
  status: number;
  headers: Headers;
  /** The CSP nonce of the page's scripts. */
  nonce?: string;
  /** The request's signal: aborted when the client goes away before its answer is written. */
  signal: AbortSignal;
  /** After this long the entry has answered 503 already: the render is abandoned. */
  deadlineMs: number;
  report: (message: string, error: unknown) => void;
};

export function streamPage(element: ReactElement, options: StreamPageOptions): Promise<Response> {
  const { headers, nonce, signal, report } = options;
  let status = options.status;
  let shellReady = false;
  let stopped = false;
  // Errors before the shell is ready may still end in a shell error (Remix reports those): reported once it is ready.
  const early: unknown[] = [];
  return new Promise<Response>((resolve, reject) => {
    let abort: () => void = () => undefined;
    let settled = false;
    const settle = () => {
      settled = true;
      clearTimeout(deadline);
      signal.removeEventListener("abort", clientGone);
    };
    // React calls none of the callbacks below for a render aborted before it started: the answer is settled here.
    const stop = (why: string) => {
      if (settled) return;
      stopped = true;
      settle();
      abort();
      reject(new Error(why));
    };
    const clientGone = () => stop("The client went away before the page was rendered");
    const deadline = setTimeout(() => stop(`The page was not rendered within the response timeout (${options.deadlineMs} ms)`), options.deadlineMs);
    const stream = renderToPipeableStream(element, {
      nonce,
      onShellReady() {
        shellReady = true;
        for (const error of early.splice(0)) report("Unexpected error while rendering a page", error);
      },
      onAllReady() {
        if (settled) return;
        settle();
        const body = withoutNulBytes();
        headers.set("Content-Type", "text/html; charset=utf-8");
        resolve(new Response(createReadableStreamFromReadable(body), { headers, status }));
        stream.pipe(body);
      },
      onShellError(error: unknown) {
        if (settled) return;
        settle();
        reject(error);
      },
      onError(error: unknown) {
        // Stopped on purpose: the client is gone, or the entry answered 503. Nobody gets this answer.
        if (stopped || signal.aborted) return;
        status = 500;
        if (shellReady) report("Unexpected error while rendering a page", error);
        else early.push(error);
      },
    });
    abort = () => stream.abort();
    if (signal.aborted) clientGone();
    else signal.addEventListener("abort", clientGone, { once: true });
  });
}

/**
 * React 18.3's streaming renderer pads its 2,048-byte chunks with 0x00 bytes where a multi-byte character does not fit
 * at the end of one (react/react#31134): a Japanese page had NUL bytes in most layouts, invisible in text but U+FFFD
 * in an attribute's value. They are never part of a character (UTF-8 has no 0x00 inside a multi-byte sequence, and
 * HTML has no use for U+0000), so dropping every one gives the bytes renderToString would have given.
 */
function withoutNulBytes(): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      if (chunk.indexOf(0) === -1) return done(null, chunk);
      done(null, chunk.filter((byte) => byte !== 0));
    },
  });
}
