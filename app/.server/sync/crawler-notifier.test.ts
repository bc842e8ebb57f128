import { afterEach, describe, expect, it } from "vitest";
import { startRelayStandIn, type RelayStandIn } from "../../../tests/helpers/relay-stand-in.ts";
import { MINUTE } from "../util/time.ts";
import { CRAWL_NOTIFY_INTERVAL_MS, CrawlerNotifier } from "./crawler-notifier.ts";

/** ATRIUM_CRAWLERS: relays told with requestCrawl after writes, at most every 20 minutes each; real relays stand in on loopback. */

const relays: RelayStandIn[] = [];
afterEach(async () => {
  for (const relay of relays.splice(0)) await relay.stop();
});

async function relay(): Promise<RelayStandIn> {
  const started = await startRelayStandIn();
  relays.push(started);
  return started;
}

describe("CrawlerNotifier", () => {
  it("tells each relay with requestCrawl {hostname}, then not again until 20 minutes later", async () => {
    const [first, second] = [await relay(), await relay()];
    let now = 1_000_000;
    const errors: unknown[] = [];
    const notifier = new CrawlerNotifier({ crawlers: [first.url, second.url], hostname: "pds.example.com", now: () => now, onError: (_crawler, error) => errors.push(error) });

    await notifier.appended();
    for (const told of [first, second]) {
      expect(told.requests).toEqual([{ path: "POST /xrpc/com.atproto.sync.requestCrawl", contentType: "application/json", body: { hostname: "pds.example.com" } }]);
    }
    now += CRAWL_NOTIFY_INTERVAL_MS - 1;
    await notifier.appended();
    await notifier.appended();
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(1);

    now += 1;
    await notifier.appended();
    expect(first.requests).toHaveLength(2);
    expect(second.requests).toHaveLength(2);
    expect(errors).toEqual([]);
    expect(CRAWL_NOTIFY_INTERVAL_MS).toBe(20 * MINUTE);
  });

  it("reports a relay that fails, does not retry it within the interval, and still tells the others", async () => {
    const [failing, working] = [await relay(), await relay()];
    failing.answerWith(500);
    let now = 0;
    const errors: string[] = [];
    const notifier = new CrawlerNotifier({ crawlers: [failing.url, working.url], hostname: "pds.example.com", now: () => now, onError: (crawler) => errors.push(crawler) });

    await notifier.appended();
    expect(errors).toEqual([failing.url]);
    expect(working.requests).toHaveLength(1);
    await notifier.appended();
    expect(failing.requests).toHaveLength(1);

    failing.answerWith(200);
    now += CRAWL_NOTIFY_INTERVAL_MS;
    await notifier.appended();
    expect(failing.requests).toHaveLength(2);
    expect(errors).toEqual([failing.url]);
  });

  it("reports a relay that cannot be reached", async () => {
    const gone = await relay();
    const url = gone.url;
    await gone.stop();
    relays.splice(relays.indexOf(gone), 1);
    const errors: string[] = [];
    await new CrawlerNotifier({ crawlers: [url], hostname: "pds.example.com", now: () => 0, onError: (crawler) => errors.push(crawler) }).appended();
    expect(errors).toEqual([url]);
  });
});
