import type { ApiResponse } from "../http/api-response.ts";

/**
 * An XRPC method's answer that is not JSON (a CAR file, a blob): the method builds the whole answer, and the router
 * passes it on as it is. A class the router recognises by `instanceof`: the one build holds one copy of every module
 * (docs/decisions/0025b), so no brand is needed to tell it from a method's JSON result.
 */
export class BytesAnswer implements ApiResponse {
  readonly status = 200;
  readonly headers: Record<string, string>;

  /** `body` null: the headers alone (a HEAD request), its Content-Length given in `headers`. */
  constructor(
    contentType: string,
    readonly body: Uint8Array | ReadableStream<Uint8Array> | null,
    headers: Record<string, string> = {},
  ) {
    this.headers = { "Content-Type": contentType, ...headers };
  }
}

export function bytesAnswer(contentType: string, body: Uint8Array | ReadableStream<Uint8Array> | null, headers: Record<string, string> = {}): BytesAnswer {
  return new BytesAnswer(contentType, body, headers);
}
