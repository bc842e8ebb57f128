import { loadConfig } from "../../app/.server/config.ts";
import { AppendSignal } from "../../app/.server/sync/append-signal.ts";
import type { EventLog } from "../../app/.server/sync/event-log.ts";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type * as ServerEntry from "../../server.ts";
import type { Started } from "../../server.ts";
import { createLogger } from "../../server/logger.ts";
import { MemoryEventLog } from "./memory-event-log.ts";
import { createServerDatabase } from "./test-database.ts";
import { freePort } from "./test-server.ts";

export type InProcessServer = {
  issuer: string;
  port: number;
  /** ws://127.0.0.1:<port>/xrpc/com.atproto.sync.subscribeRepos, with `?cursor=` when given. */
  firehoseUrl(query?: string): string;
  eventLog: MemoryEventLog;
  started: Started;
  stop(): Promise<void>;
};

/**
 * The real server module (the built entry's startServer: npm test builds
 * first) started in this process, on a free loopback port and a
 * database of its own (either engine, as the Vitest project says), with an
 * in-memory event log behind its firehose: the log's SQL implementation is
 * not what these tests are about. Appends to `eventLog` signal the firehose
 * as a commit in this process would.
 */
export async function startInProcessServer(env: Record<string, string> = {}, log?: EventLog): Promise<InProcessServer> {
  const database = await createServerDatabase();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const config = loadConfig({ PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: issuer, DATABASE_URL: database.url, ...env });
  const appended = new AppendSignal();
  const eventLog = new MemoryEventLog(appended);
  // The built entry, as production runs it (npm test builds first): server.ts runs from source only with --dev.
  const entry = pathToFileURL(path.join(import.meta.dirname, "..", "..", "build", "server", "server.js")).href;
  const { startServer } = (await import(entry)) as typeof ServerEntry;
  const started = await startServer(config, { dev: false, log: createLogger("silent"), sync: { eventLog: log ?? eventLog, appended } });
  return {
    issuer,
    port,
    firehoseUrl: (query) => `ws://127.0.0.1:${port}/xrpc/com.atproto.sync.subscribeRepos${query ? `?${query}` : ""}`,
    eventLog,
    started,
    async stop() {
      started.sync?.close();
      started.server.closeAllConnections();
      await new Promise<void>((resolve) => started.server.close(() => resolve()));
      await started.shutdown();
      await database.remove();
    },
  };
}
