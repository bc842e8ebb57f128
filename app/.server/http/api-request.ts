/**
 * The part of a request the JSON endpoints read: the thin wrapper over Node's request that the fast API handler builds
 * (server/api-server.ts: no Fetch objects per request). The body is read once, whole (`text`, `arrayBuffer`) or as
 * it arrives (`chunks`), and never past the route's body limit: a body that goes beyond it is refused with 413
 * (`bodyTooLarge`, http/limits.ts), never cut short and taken for the whole.
 */
export type ApiRequest = {
  method: string;
  /** Absolute URL on the issuer's origin. */
  url: string;
  headers: { get(name: string): string | null; has(name: string): boolean };
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** The body as it arrives, each piece once the one before was taken (an upload streamed to the blob store). */
  chunks(): AsyncIterable<Uint8Array>;
  /** The id the entry gave this request (X-Request-Id), for the log lines about it. */
  requestId?: string;
  /** The client's address as the entry found it (docs/decisions/0006); undefined when the entry did not say. */
  readonly clientAddress?: string;
};
