import type { Server } from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequestHandler } from "@remix-run/express";
import type { ServerBuild } from "@remix-run/node";
import compression from "compression";
import express from "express";
import { ConfigError, loadConfig, unsafeConfigWarnings, type Config } from "./app/.server/config.ts";
import { openSqlite } from "./app/.server/db/index.ts";
import { migrateDatabase } from "./app/.server/db/migrate.ts";
import { RateLimiter } from "./app/.server/security/rate-limiter.ts";
import { apiEndpoints, type ApiHandler } from "./server/api-endpoints.ts";
import {
  bodyLimit,
  canonicalHost,
  clientAddressHeader,
  cors,
  drainUnreadBody,
  expressErrors,
  isCorsPath,
  requestLimits,
  requestLog,
  responseTimeout,
  screenOriginCheck,
  securityHeaders,
} from "./server/middleware.ts";

/**
 * The Express entry: security headers, CORS, body limits, request logging
 * and trust-proxy live here, in one visible place; everything else is the
 * Remix app (app/).
 */

const here = path.dirname(fileURLToPath(import.meta.url));

async function loadBuild(dev: boolean) {
  if (!dev) {
    const buildPath = path.join(here, "build", "server", "index.js");
    const build = (await import(pathToFileURL(buildPath).href)) as ServerBuild;
    return { build: async () => build, vite: undefined };
  }
  const { createServer } = await import("vite");
  const vite = await createServer({ server: { middlewareMode: true } });
  return { build: () => vite.ssrLoadModule("virtual:remix/server-build") as Promise<ServerBuild>, vite };
}

export async function startServer(config: Config, options: { dev: boolean }): Promise<Server> {
  for (const warning of unsafeConfigWarnings(config)) console.warn(`\n  WARNING: ${warning}\n`);
  const { applied } = migrateDatabase(config.databasePath);
  if (applied.length) console.log(`Applied database migrations: ${applied.join(", ")}`);

  const limiter = new RateLimiter(openSqlite(config.databasePath));
  const { build, vite } = await loadBuild(options.dev);
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.use(drainUnreadBody);
  app.use(clientAddressHeader);
  app.use(canonicalHost(config));
  if (config.logRequests) app.use(requestLog);
  app.use(securityHeaders(options.dev));
  app.use(cors);
  app.use(screenOriginCheck(config));
  app.use(requestLimits(config, limiter));
  app.use(responseTimeout(config));
  app.use(bodyLimit(config));
  // Pages and assets are compressed; small API JSON is not (a zlib stream per answer costs more than it saves).
  const compress = compression();
  app.use((req, res, next) => (isCorsPath(req.path) ? next() : compress(req, res, next)));
  if (vite) {
    app.use(vite.middlewares);
  } else {
    app.use("/assets", express.static(path.join(here, "build", "client", "assets"), { immutable: true, maxAge: "1y" }));
    // Other public files (favicon and the like), looked up only for GETs that are not API calls.
    const publicFiles = express.static(path.join(here, "build", "client"), { maxAge: "1h", index: false });
    app.use((req, res, next) => (isCorsPath(req.path) ? next() : publicFiles(req, res, next)));
  }
  app.use(apiEndpoints(config, async () => ((await build()).entry.module as unknown as { handleApiRequest: ApiHandler }).handleApiRequest));
  app.all(
    "*",
    createRequestHandler({
      build,
      getLoadContext: (_req, res) => ({ cspNonce: res.locals.cspNonce as string }),
    }),
  );
  app.use(expressErrors);

  return new Promise((resolve) => {
    const server = app.listen(config.port, config.host, () => resolve(server));
    // Slow clients cannot hold a connection open forever (slowloris).
    server.headersTimeout = 15_000;
    server.requestTimeout = config.requestTimeoutMs;
    server.keepAliveTimeout = 5_000;
  });
}

function installShutdown(server: Server) {
  const stop = (signal: string) => {
    console.log(`${signal} received: finishing in-flight requests, then exiting`);
    server.close(() => process.exit(0));
    server.closeIdleConnections();
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
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const dev = process.argv.includes("--dev");
  const server = await startServer(config, { dev });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  installShutdown(server);
  // One JSON line first (tests read it), then the human line.
  console.log(JSON.stringify({ event: "listening", port, issuer: config.issuer }));
  console.log(`Atrium is serving ${config.issuer} (listening on ${config.host}:${port})`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main();
}
