import cluster from "node:cluster";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { Logger as PinoLogger } from "pino";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequestHandler } from "@remix-run/express";
import type { ServerBuild } from "@remix-run/node";
import compression from "compression";
import { AggregatorRegistry } from "prom-client";
import express from "express";
import { ConfigError, isConfigError, loadConfig, unsafeConfigWarnings, type Config } from "./app/.server/config.ts";
import { applyMigrations } from "./app/.server/db/migrations.ts";
import { NO_METRICS } from "./app/.server/observability/metrics.ts";
import type * as ServerRuntime from "./app/.server/runtime.ts";
import { apiRouteOf, createApiServer } from "./server/api-server.ts";
import { RequestRecorder } from "./server/http-common.ts";
import { createLogger } from "./server/logger.ts";
import { PrometheusMetrics, registryMetrics, serveMetrics } from "./server/metrics.ts";
import { runPrimary, type WorkerReady } from "./server/workers.ts";
import { serveFirehose } from "./server/firehose-upgrade.ts";
import type { AppendSignal } from "./app/.server/sync/append-signal.ts";
import type { EventLog } from "./app/.server/sync/event-log.ts";
import { createSync, type Sync } from "./app/.server/sync/sync-service.ts";
import { originFormOf, refuseConnect, refuseRequestTarget } from "./server/request-target.ts";
import { screenRouteMatcher } from "./server/screen-routes.ts";
import {
  bodyLimit,
  canonicalHost,
  clientAddressHeader,
  drainUnreadBody,
  expressErrors,
  labelStatic,
  requestRecord,
  responseTimeout,
  screenOriginCheck,
  screenQueryCheck,
  screenRequestLimit,
  screenRoute,
  securityHeaders,
} from "./server/middleware.ts";

/**
 * The entry: one Node HTTP server. The JSON endpoints clients call (the hot
 * paths) go to the API handler (server/api-server.ts); the screens and their
 * assets go through Express to the Remix app (app/). Security headers, CORS,
 * limits, timeouts and logging live in those two visible places. The entry
 * makes the one logger and, with ATRIUM_METRICS_PORT, the metrics and their
 * own listener (docs/decisions/0014).
 */

/**
 * Production runs the build of this file, build/server/server.js (npm start: `node build/server/server.js`), beside
 * the other two entries of the same Vite build: the Remix routes (index.js) and the runtime (runtime.js: the services
 * and the API route table). They share their modules, so there is one copy of each class and each service
 * (docs/decisions/0013, 0025b). Development (`tsx server.ts --dev`) asks Vite for the routes and the runtime, and for
 * the routes again on every request (hot reload); the services are made once either way.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT_BUILD = path.join(here, "..", "client");

type Runtime = typeof ServerRuntime;

/** The runtime of the build alone (the primary of several workers checks the keys with it before forking). */
async function loadRuntime(): Promise<Runtime> {
  return (await import(pathToFileURL(path.join(here, "runtime.js")).href)) as Runtime;
}

async function loadBuild(dev: boolean) {
  if (!dev) {
    if (!existsSync(path.join(here, "runtime.js"))) throw new Error("server.ts runs from source only in development (--dev); production runs the build: npm start");
    const load = async <T>(file: string) => (await import(pathToFileURL(path.join(here, file)).href)) as T;
    const build = await load<ServerBuild>("index.js");
    return { build: async () => build, routes: build.routes, runtime: await load<Runtime>("runtime.js"), vite: undefined };
  }
  const { createServer } = await import("vite");
  const vite = await createServer({ server: { middlewareMode: true } });
  const runtime = (await vite.ssrLoadModule("/app/.server/runtime.ts")) as Runtime;
  const build = () => vite.ssrLoadModule("virtual:remix/server-build") as Promise<ServerBuild>;
  return { build, routes: (await build()).routes, runtime, vite };
}

/**
 * `shutdown`: after the server stopped taking requests, writes what is still in memory and closes the database.
 * `sync`: the firehose (docs/decisions/0029), serving the event log of the services or the one `options.sync` gives.
 */
export type Started = { server: Server; metricsServer: Server | undefined; sync: Sync; shutdown: () => Promise<void> };

/** The event log the firehose serves and the signal of this process's appends (docs/decisions/0029). */
export type SyncSource = { eventLog: EventLog; appended: AppendSignal };

export async function startServer(config: Config, options: { dev: boolean; log: PinoLogger; sync?: SyncSource }): Promise<Started> {
  const { log } = options;
  for (const warning of unsafeConfigWarnings(config)) log.warn({}, warning);
  const { applied } = await applyMigrations(config.database);
  if (applied.length) log.info({ migrations: applied }, "Applied database migrations");

  const { build, routes: screenRoutes, runtime, vite } = await loadBuild(options.dev);
  const metrics = config.metrics ? new PrometheusMetrics() : undefined;
  // A worker of several (ATRIUM_WORKERS): the primary serves the sum of every worker's metrics (server/workers.ts).
  // (prom-client answers the primary's requests once an AggregatorRegistry exists in the worker.)
  if (metrics && cluster.isWorker) {
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
  }
  // Created once, here, and handed to both the API handler and the screens (getLoadContext).
  const services = await runtime.createServices(config, { log, metrics });
  const { limiter } = services;
  const routes = runtime.apiRoutes(services);
  const recorder = new RequestRecorder(log, metrics ?? NO_METRICS, config.logRequests, config.trustProxy);
  const serveApi = createApiServer({ config, limiter, recorder, metrics: services.metrics, report: services.reportError });

  const app = express();
  app.disable("x-powered-by");
  // Nothing reads req.ip: the client address comes from one function for both entries (clientAddressHeader,
  // docs/decisions/0006). Express's own trust stays off so X-Forwarded-* cannot shape anything else it derives.
  app.set("trust proxy", false);
  app.use(drainUnreadBody);
  app.use(requestRecord(config.trustProxy, recorder));
  app.use(clientAddressHeader(config.trustProxy));
  app.use(canonicalHost(config));
  app.use(securityHeaders(options.dev));
  app.use(screenOriginCheck(config));
  app.use(responseTimeout(config));
  app.use(compression());
  if (vite) {
    app.use(vite.middlewares);
  } else {
    app.use("/assets", express.static(path.join(CLIENT_BUILD, "assets"), { immutable: true, maxAge: "1y", setHeaders: labelStatic }));
    // Other public files (favicon and the like).
    app.use(express.static(CLIENT_BUILD, { maxAge: "1h", index: false, setHeaders: labelStatic }));
  }
  // After the static files: only what Remix answers counts.
  app.use(screenRoute(screenRouteMatcher(screenRoutes)));
  app.use(screenRequestLimit(config, limiter, services.metrics));
  app.use(screenQueryCheck(config));
  // After the limit, whose decision may wait for the database (PostgreSQL): the body guard listens for the body's
  // data, which starts it flowing, and anything that arrived while the limit was being decided would be lost to Remix.
  app.use(bodyLimit(config));
  app.all(
    "*",
    createRequestHandler({
      build,
      getLoadContext: (_req, res) => ({ cspNonce: res.locals.cspNonce as string, services }),
    }),
  );
  app.use(expressErrors(config, services.reportError));

  // Node checks the headers and request timeouts below only every connectionsCheckingInterval (30 s by default),
  // which held partial headers for ~30 s whatever headersTimeout said: check every second.
  const server = createServer({ connectionsCheckingInterval: 1_000 }, (req, res) => {
    const target = originFormOf(req.url, config.issuer);
    if (target === undefined) return refuseRequestTarget(req, res, recorder, config.trustProxy);
    req.url = target;
    const api = apiRouteOf(routes, target);
    if (api === undefined) app(req, res);
    else serveApi(req, res, api.route, api.path);
  });
  server.on("connect", refuseConnect);
  // The firehose reads the services' event log, or the one a test hands over.
  const source = options.sync ?? { eventLog: services.eventLog, appended: services.appended };
  const sync = createSync({ config, ...source, log, now: services.now, report: services.reportError });
  serveFirehose(server, config, sync, { limiter, metrics: services.metrics, report: services.reportError });
  // Never on the public port: a listener of its own, on ATRIUM_METRICS_HOST (loopback by default).
  const metricsServer = metrics && config.metrics && cluster.isPrimary ? await serveMetrics(registryMetrics(metrics), config.metrics.host, config.metrics.port, log) : undefined;
  server.on("close", () => metricsServer?.close());
  const shutdown = () => services.close();
  return new Promise((resolve) => {
    server.listen(config.port, config.host, () => resolve({ server, metricsServer, sync, shutdown }));
    // Slow clients cannot hold a connection open forever (slowloris); a lower request timeout lowers the headers' too.
    server.headersTimeout = Math.min(15_000, config.requestTimeoutMs);
    server.requestTimeout = config.requestTimeoutMs;
    server.keepAliveTimeout = 5_000;
  });
}

function installShutdown({ server, sync, shutdown }: Started, log: PinoLogger) {
  let stopping = false;
  const stop = (signal: string) => {
    // A worker under a primary may get both the terminal's SIGINT and the primary's SIGTERM: stop once.
    if (stopping) return;
    stopping = true;
    // The listening socket closes first, then the line says so: whoever reads it finds the port closed.
    server.close(() => {
      shutdown().then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, "Closing the database failed");
          process.exit(1);
        },
      );
    });
    log.info({ signal }, `${signal} received: finishing in-flight requests, then exiting`);
    // Subscriptions never end by themselves: close them so that the server's close can complete.
    sync.close();
    // A connection that carried an in-flight answer turns idle (keep-alive) once it is sent: close those as they
    // appear, so exit follows the last answer instead of waiting for clients or the keep-alive timeout.
    server.closeIdleConnections();
    setInterval(() => server.closeIdleConnections(), 100).unref();
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      // No configuration, so no configured logger: the default level, which always shows this.
      createLogger("info").fatal({}, error.message);
      process.exit(1);
    }
    throw error;
  }
  const log = createLogger(config.logLevel);
  try {
    await serve(config, log);
  } catch (error) {
    // A setting the start found wrong with the database in hand (a key that opens nothing there: docs/decisions/0050).
    if (!isConfigError(error)) throw error;
    log.fatal({}, error.message);
    process.exit(1);
  }
}

async function serve(config: Config, log: PinoLogger) {
  const dev = process.argv.includes("--dev");
  if (config.workers > 1 && cluster.isPrimary) {
    if (dev) log.warn({}, "ATRIUM_WORKERS is ignored in development (one process, with Vite's hot reload)");
    else return runPrimary(config, log, async () => (await loadRuntime()).prepareKeys(config, log));
  }
  const started = await startServer(config, { dev, log });
  const { server, metricsServer } = started;
  const port = portOf(server) ?? config.port;
  installShutdown(started, log);
  if (cluster.isWorker) {
    // The primary announces readiness once every worker listens.
    process.send?.({ event: "atrium-worker-listening", port } satisfies WorkerReady);
    log.info({ port }, "Worker process listening");
    return;
  }
  // The readiness line, whatever the log level: supervisors, the tests and the benchmarks wait for this JSON line.
  process.stdout.write(`${JSON.stringify({ event: "listening", port, issuer: config.issuer })}\n`);
  log.info({ issuer: config.issuer, host: config.host, port }, `Atrium is serving ${config.issuer} (listening on ${config.host}:${port})`);
  if (metricsServer) log.info({ host: config.metrics?.host, port: portOf(metricsServer) }, "Metrics are served at /metrics");
}

function portOf(server: Server): number | undefined {
  const address = server.address();
  return typeof address === "object" && address ? address.port : undefined;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main();
}
