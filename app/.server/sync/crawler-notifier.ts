import { MINUTE, SECOND } from "../util/time.ts";

/**
 * Tells relays (ATRIUM_CRAWLERS) that this server has new events, with
 * com.atproto.sync.requestCrawl ("Request a service to persistently crawl
 * hosted repos"), so that they connect to its firehose. After writes, at
 * most once per interval per relay, as the reference PDS does (every 20
 * minutes): a relay that already crawls needs no reminder per commit. A
 * relay that fails is tried again at the next write after the interval, not
 * before, so a relay that is down is not hammered.
 */
export const CRAWL_NOTIFY_INTERVAL_MS = 20 * MINUTE;
const REQUEST_TIMEOUT_MS = 10 * SECOND;

export type CrawlerNotifierOptions = {
  /** The relays' base URLs. */
  crawlers: string[];
  /** This server's host name (and port, when not the scheme's), as relays reach it. */
  hostname: string;
  now: () => number;
  fetch?: typeof fetch;
  onError: (crawler: string, error: unknown) => void;
};

export class CrawlerNotifier {
  private readonly lastTold = new Map<string, number>();
  private readonly fetch: typeof fetch;

  constructor(private readonly options: CrawlerNotifierOptions) {
    this.fetch = options.fetch ?? fetch;
  }

  /** Events were appended: tell each relay not told within the interval. Resolves when those requests are answered. */
  async appended(): Promise<void> {
    const now = this.options.now();
    const due = this.options.crawlers.filter((crawler) => {
      const last = this.lastTold.get(crawler);
      return last === undefined || now - last >= CRAWL_NOTIFY_INTERVAL_MS;
    });
    for (const crawler of due) this.lastTold.set(crawler, now);
    await Promise.all(due.map((crawler) => this.tell(crawler)));
  }

  private async tell(crawler: string): Promise<void> {
    try {
      await requestCrawl(crawler, this.options.hostname, this.fetch);
    } catch (error) {
      this.options.onError(crawler, error);
    }
  }
}

/**
 * One com.atproto.sync.requestCrawl to the relay at `crawler` (a base URL) for `hostname`; throws when it cannot be
 * reached or answers other than 2xx. The notifier above, and `npm run account -- request-crawl` (pdsadmin's
 * request-crawl), call it.
 */
export async function requestCrawl(crawler: string, hostname: string, fetchImpl: typeof fetch = fetch): Promise<void> {
  const response = await fetchImpl(new URL("/xrpc/com.atproto.sync.requestCrawl", crawler), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ hostname }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  await response.body?.cancel();
  if (!response.ok) throw new Error(`${crawler} answered requestCrawl with HTTP ${response.status}`);
}
