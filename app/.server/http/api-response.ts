import type { Readable } from "node:stream";

/**
 * An answer of the JSON endpoints: plain data that the Node entry writes in
 * one go. A Fetch `Response` would wrap every small JSON body in a stream
 * that the entry then has to read back (measured: more CPU than the DPoP
 * signature check), so the hot paths build this instead.
 *
 * Header names are written in their canonical case ("Cache-Control"); the
 * helpers below are the only writers, which keeps lookups by that name exact.
 */
export type ApiResponse = {
  status: number;
  headers: Record<string, string>;
  /** The serialized body; a stream for what is passed on as it comes (a repository's CAR file, an upstream's answer). */
  body: string | Uint8Array | ReadableStream<Uint8Array> | Readable | null;
};

export function jsonResponse(value: unknown, status = 200, headers: Record<string, string> = {}): ApiResponse {
  return { status, headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(value) };
}

/** Sets a header unless the endpoint already chose a value (e.g. its own Cache-Control). */
export function setDefaultHeader(response: ApiResponse, name: string, value: string): void {
  if (response.headers[name] === undefined) response.headers[name] = value;
}
