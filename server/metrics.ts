import { createServer, type Server } from "node:http";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Logger } from "../app/.server/observability/logger.ts";
import type { Metrics, RateLimitClass, SignInMethod, TokenGrantType } from "../app/.server/observability/metrics.ts";
import type { ExportState } from "../app/.server/sync/export-watch.ts";

/**
 * The Prometheus metrics (docs/decisions/0014), with prom-client: the
 * server's own counters, named atrium_*, and Node's process metrics
 * (collectDefaultMetrics, same prefix). Served as `GET /metrics` on
 * ATRIUM_METRICS_HOST:ATRIUM_METRICS_PORT by `serveMetrics`, never on the
 * public port. Every label takes values from a fixed set.
 */

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);
const RATE_LIMIT_CLASSES: readonly RateLimitClass[] = ["par", "token", "xrpc", "screen", "firehose", "sign_in", "repo_export"];
const SIGN_IN_METHODS: readonly SignInMethod[] = ["password", "passkey"];
const GRANT_TYPES: readonly TokenGrantType[] = ["authorization_code", "refresh_token"];

export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: "atrium_http_requests_total",
    help: "Requests answered, by route template (route table path, /xrpc method this server implements, or screen route id; else other), method and status.",
    labelNames: ["route", "method", "status"] as const,
    registers: [this.registry],
  });
  private readonly durations = new Histogram({
    name: "atrium_http_request_duration_seconds",
    help: "Time from taking a request to writing its answer, by route template.",
    labelNames: ["route"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: "atrium_oauth_tokens_issued_total",
    help: "Token responses: tokens issued for an authorization code, or refreshed.",
    labelNames: ["grant_type"] as const,
    registers: [this.registry],
  });
  private readonly signInFailures = new Counter({
    name: "atrium_sign_in_failures_total",
    help: "Sign-ins refused for wrong credentials, by method (never by account).",
    labelNames: ["method"] as const,
    registers: [this.registry],
  });
  private readonly limited = new Counter({
    name: "atrium_rate_limited_total",
    help: "Requests refused by a limit (429), by limit: par, token, xrpc, screen, firehose (per address per minute), sign_in (the sign-in throttle) or repo_export (repository exports at once).",
    labelNames: ["limit"] as const,
    registers: [this.registry],
  });
  private readonly databaseErrors = new Counter({
    name: "atrium_database_errors_total",
    help: "Database failures that ended a request or a health check.",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "atrium_" });
    // Every known series from the start at 0, so that rate() and alerts see the first increase.
    for (const grantType of GRANT_TYPES) this.tokens.inc({ grant_type: grantType }, 0);
    for (const method of SIGN_IN_METHODS) this.signInFailures.inc({ method }, 0);
    for (const limit of RATE_LIMIT_CLASSES) this.limited.inc({ limit }, 0);
  }

  requestServed(route: string, method: string, status: number, seconds: number): void {
    this.requests.inc({ route, method: METHODS.has(method) ? method : "other", status });
    this.durations.observe({ route }, seconds);
  }

  tokensIssued(grantType: TokenGrantType): void {
    this.tokens.inc({ grant_type: grantType });
  }

  signInFailed(method: SignInMethod): void {
    this.signInFailures.inc({ method });
  }

  rateLimited(limit: RateLimitClass): void {
    this.limited.inc({ limit });
  }

  databaseError(): void {
    this.databaseErrors.inc();
  }

  /** docs/decisions/0042: read at each scrape, summed over the workers like every series. */
  watchRepoExports(state: () => ExportState): void {
    const gauge = (name: string, help: string, value: (now: ExportState) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(value(state()));
        },
      });
    gauge("atrium_repo_exports_open", "Repository exports in progress (getRepo, getBlocks, a record's proof from a snapshot), each holding a database snapshot.", (now) => now.open);
    gauge("atrium_repo_export_held_bytes", "Block bytes the exports in progress have read from the database and not yet handed to their response (at most a page each).", (now) => now.heldBytes);
    let counted = 0;
    new Counter({
      name: "atrium_repo_export_read_bytes_total",
      help: "Block bytes read from the database by repository exports.",
      registers: [this.registry],
      collect() {
        const read = state().bytesRead;
        this.inc(read - counted);
        counted = read;
      },
    });
  }
}

/** What `GET /metrics` answers: one registry's metrics, or (ATRIUM_WORKERS) the sum of every worker's. */
export type MetricsSource = () => Promise<{ text: string; contentType: string }>;

export function registryMetrics(metrics: PrometheusMetrics): MetricsSource {
  return async () => ({ text: await metrics.registry.metrics(), contentType: metrics.registry.contentType });
}

/** `GET /metrics` (Prometheus text format) on its own listener; anything else is 404 (405 for other methods). */
export function serveMetrics(collect: MetricsSource, host: string, port: number, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/metrics") {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("Not found: metrics are at /metrics\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Type": "text/plain; charset=utf-8" }).end("Method not allowed\n");
      return;
    }
    collect().then(
      ({ text, contentType }) => res.writeHead(200, { "Content-Type": contentType, "Cache-Control": "no-store" }).end(text),
      (error: unknown) => {
        log.error({ err: error }, "Collecting the metrics failed");
        res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" }).end("Collecting the metrics failed\n");
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
