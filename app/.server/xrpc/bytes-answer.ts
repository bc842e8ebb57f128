import type { ApiResponse } from "../http/api-response.ts";

/**
 * An XRPC method's answer that is not JSON (a CAR file, a blob): the method builds the whole answer, and the router
 * passes it on as it is. Recognised by brand, as the build may hold two copies of this module.
 */
const BYTES_ANSWER = Symbol.for("atrium.xrpc.bytes-answer");

export type BytesAnswer = ApiResponse & { readonly [BYTES_ANSWER]: true };

/** `body` null: the headers alone (a HEAD request), its Content-Length given in `headers`. */
export function bytesAnswer(contentType: string, body: Uint8Array | ReadableStream<Uint8Array> | null, headers: Record<string, string> = {}): BytesAnswer {
  return { status: 200, headers: { "Content-Type": contentType, ...headers }, body, [BYTES_ANSWER]: true };
}

export function isBytesAnswer(value: unknown): value is BytesAnswer {
  return typeof value === "object" && value !== null && BYTES_ANSWER in value;
}
