import type { ApiResponse } from "../http/api-response.ts";
import { jsonResponse } from "../http/api-response.ts";
import type { ErrorReporter } from "./report-error.ts";

/**
 * `GET /xrpc/_health`, what the reference atproto PDS answers to load
 * balancers: 200 `{"version": …}` while the database answers, 503 otherwise
 * (docs/decisions/0014). A load balancer polls it, so it is cheap, never
 * rate limited and never cached.
 */

/** Throws (or rejects) when the database does not answer (Database.ping: docs/decisions/0017). */
export type HealthCheck = () => Promise<void>;

export function healthEndpoint(version: string, check: HealthCheck, report: ErrorReporter): () => Promise<ApiResponse> {
  return async () => {
    try {
      await check();
    } catch (error) {
      report("Health check failed: the database does not answer", error);
      // The XRPC error shape ({error, message}), with the version as the reference PDS sends it.
      return jsonResponse({ error: "ServiceUnavailable", message: "The database does not answer", version }, 503, { "Cache-Control": "no-store", "Retry-After": "5" });
    }
    return jsonResponse({ version }, 200, { "Cache-Control": "no-store" });
  };
}
