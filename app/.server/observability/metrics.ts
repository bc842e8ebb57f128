import type { ExportState } from "../sync/export-watch.ts";

/**
 * What the server counts for Prometheus (docs/decisions/0014), as the domain
 * sees it: a few calls, no prom-client types. The entry implements it over a
 * prom-client registry when ATRIUM_METRICS_PORT is set (server/metrics.ts);
 * otherwise every call does nothing. Label values are always from a small
 * fixed set (route templates, never raw paths; never an account).
 */

/**
 * The per-address request limits (ATRIUM_RATE_LIMIT_*_PER_MINUTE, the firehose's upgrades), the sign-in throttle
 * (docs/decisions/0009) and the repository exports' caps (docs/decisions/0042).
 */
export type RateLimitClass = "par" | "token" | "xrpc" | "screen" | "firehose" | "sign_in" | "repo_export";
export type SignInMethod = "password" | "passkey";
/** RFC 6749 §4.1.3 (code exchange) and §6 (refresh). */
export type TokenGrantType = "authorization_code" | "refresh_token";

export interface Metrics {
  /** An answered request: its route template (the route table's path, or the screen's route id), method, status and time. */
  requestServed(route: string, method: string, status: number, seconds: number): void;
  /** A token response: tokens issued for a code, or refreshed. */
  tokensIssued(grantType: TokenGrantType): void;
  /** Wrong credentials (not a throttled attempt, which is `rateLimited("sign_in")`). */
  signInFailed(method: SignInMethod): void;
  /** A request refused by a limit (429). */
  rateLimited(limit: RateLimitClass): void;
  /** A database failure that ended a request or a health check. */
  databaseError(): void;
  /** Where the repository exports' figures are read from at each scrape (docs/decisions/0042); called once. */
  watchRepoExports(state: () => ExportState): void;
}

export const NO_METRICS: Metrics = {
  requestServed() {},
  tokensIssued() {},
  signInFailed() {},
  rateLimited() {},
  databaseError() {},
  watchRepoExports() {},
};
