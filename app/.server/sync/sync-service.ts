import type { Config } from "../config.ts";
import type { Logger } from "../observability/logger.ts";
import type { AppendSignal } from "./append-signal.ts";
import { ConnectionCaps } from "./connection-caps.ts";
import { CrawlerNotifier } from "./crawler-notifier.ts";
import type { EventLog } from "./event-log.ts";
import { Firehose } from "./firehose.ts";

/** Events read from the log at once, by the tail and by each replay. */
const BATCH_SIZE = 500;

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
  const firehose = new Firehose(eventLog, { backfillMs, maxBufferedBytes, pollIntervalMs, batchSize: BATCH_SIZE }, now, report);
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
