import { loadConfig } from "../../app/.server/config.ts";
import { SqlEventLog } from "../../app/.server/stores/sql-event-log.ts";
import { AppendSignal } from "../../app/.server/sync/append-signal.ts";
import type { EventLog, NewEvent } from "../../app/.server/sync/event-log.ts";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type * as ServerEntry from "../../server.ts";
import type { Started } from "../../server.ts";
import { createLogger } from "../../server/logger.ts";
import { createServerDatabase } from "./test-database.ts";
import { freePort } from "./test-server.ts";

export type InProcessServer = {
  issuer: string;
  port: number;
  /** ws://127.0.0.1:<port>/xrpc/com.atproto.sync.subscribeRepos, with `?cursor=` when given. */
  firehoseUrl(query?: string): string;
  /** Appends to the server's event log and tells its firehose, as a commit in the server's process does. */
  append(events: NewEvent[], now: number): Promise<number[]>;
  /** The server's event log as another process or machine appends to it: the firehose learns of it at its next poll. */
  otherProcess: EventLog;
  started: Started;
  stop(): Promise<void>;
};

/**
 * The real server module (the built entry's startServer: npm test builds
 * first) started in this process, on a free loopback port and a database of
 * its own (either engine, as the Vitest project says), its firehose serving
 * the production event log in that database (SqlEventLog, the RepoEvent
 * table), which the tests append to directly: what a test is about is the
 * firehose, not the commits that would append. `wrap` lets a test put a
 * failing read in front of the log.
 */
export async function startInProcessServer(env: Record<string, string> = {}, wrap: (log: EventLog) => EventLog = (log) => log): Promise<InProcessServer> {
  const database = await createServerDatabase();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const config = loadConfig({ PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: issuer, DATABASE_URL: database.url, ...env });
  const appended = new AppendSignal();
  const eventLog = new SqlEventLog(database.open(), config.firehose.backfillMs);
  // The built entry, as production runs it (npm test builds first): server.ts runs from source only with --dev.
  const entry = pathToFileURL(path.join(import.meta.dirname, "..", "..", "build", "server", "server.js")).href;
  const { startServer } = (await import(entry)) as typeof ServerEntry;
  const started = await startServer(config, { dev: false, log: createLogger("silent"), sync: { eventLog: wrap(eventLog), appended } });
  return {
    issuer,
    port,
    firehoseUrl: (query) => `ws://127.0.0.1:${port}/xrpc/com.atproto.sync.subscribeRepos${query ? `?${query}` : ""}`,
    async append(events, now) {
      const seqs = await eventLog.append(events, now);
      appended.notify();
      return seqs;
    },
    otherProcess: eventLog,
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
