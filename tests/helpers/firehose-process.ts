/**
 * A server process for the firehose's cross-process tests: the real server
 * module (the built entry's startServer: npm test builds first) started as the entry starts it, from the
 * environment, with its firehose on the SQLite event log named by
 * ATRIUM_TEST_EVENT_LOG, which other processes append to too. Prints the
 * entry's readiness line; SIGTERM stops it as the entry does.
 */
import { loadConfig } from "../../app/.server/config.ts";
import { AppendSignal } from "../../app/.server/sync/append-signal.ts";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type * as ServerEntry from "../../server.ts";
import { createLogger } from "../../server/logger.ts";
import { SqliteEventLog } from "./sqlite-event-log.ts";

// server.ts runs from source only with --dev; production, and so this process, runs the build.
const entry = pathToFileURL(path.join(import.meta.dirname, "..", "..", "build", "server", "server.js")).href;
const { startServer } = (await import(entry)) as typeof ServerEntry;
const config = loadConfig();
const appended = new AppendSignal();
const eventLog = new SqliteEventLog(process.env.ATRIUM_TEST_EVENT_LOG!, appended);
const started = await startServer(config, { dev: false, log: createLogger(config.logLevel), sync: { eventLog, appended } });
process.once("SIGTERM", () => {
  started.sync?.close();
  started.server.close(() => {
    eventLog.close();
    void started.shutdown().then(() => process.exit(0));
  });
  started.server.closeIdleConnections();
});
process.stdout.write(`${JSON.stringify({ event: "listening", port: config.port, issuer: config.issuer, pid: process.pid })}\n`);
