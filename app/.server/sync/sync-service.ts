import type { Config } from "../config.ts";
import type { Logger } from "../observability/logger.ts";
import type { AppendSignal } from "./append-signal.ts";
import { ConnectionCaps } from "./connection-caps.ts";
import { CrawlerNotifier } from "./crawler-notifier.ts";
import type { EventLog } from "./event-log.ts";
import { Firehose } from "./firehose.ts";

/**
 * What one read of the log brings into memory, by the tail and by each replay (docs/decisions/0044): 500 events, as
 * the reference PDS pages its backfill, and 1 MiB of their bodies, so that a batch of large events (a commit may carry
 * megabytes of blocks) does not hold 500 of them per replaying subscriber.
 */
export const READ_LIMITS = { events: 500, bytes: 1024 * 1024 };

export type Sync = {
  firehose: Firehose;
  caps: ConnectionCaps;
  /** Stops listening, closes every subscription. */
  close(): void;
};

/**
 * The firehose of one process and the relays it tells (docs/decisions/0029),
 * wired from the event log, the signal of this process's appends and the
 * configuration. The entry serves the WebSocket upgrade with it.
 */
export function createSync(options: {
  config: Config;
  eventLog: EventLog;
  appended: AppendSignal;
  log: Logger;
  now: () => number;
  report: (message: string, error: unknown) => void;
}): Sync {
  const { config, eventLog, appended, log, now, report } = options;
  const { backfillMs, maxBufferedBytes, pollIntervalMs, maxConnectionsPerAddress } = config.firehose;
  const firehose = new Firehose(eventLog, { backfillMs, maxBufferedBytes, pollIntervalMs, batch: READ_LIMITS }, now, report);
  const crawlers = new CrawlerNotifier({
    crawlers: config.crawlers,
    hostname: config.publicUrl.host,
    now,
    onError: (crawler, error) => log.warn({ crawler, err: error }, "Telling a relay to crawl failed"),
  });
  const stopListening = appended.listen(() => {
    firehose.appended();
    void crawlers.appended();
  });
  return {
    firehose,
    caps: new ConnectionCaps(maxConnectionsPerAddress),
    close() {
      stopListening();
      firehose.close();
    },
  };
}
