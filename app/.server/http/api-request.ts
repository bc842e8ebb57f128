/**
 * The part of a request the JSON endpoints read. A Fetch `Request`
 * satisfies it, and so does the thin wrapper over Node's request that the
 * fast API handler builds (server/api-server.ts: no Fetch objects per request).
 */
export type ApiRequest = {
  method: string;
  /** Absolute URL on the issuer's origin. */
  url: string;
  headers: { get(name: string): string | null; has(name: string): boolean };
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
  /** The id the entry gave this request (X-Request-Id), for the log lines about it. */
  requestId?: string;
  /** The client's address as the entry found it (docs/decisions/0006); undefined when the entry did not say. */
  readonly clientAddress?: string;
};
