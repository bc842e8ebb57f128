import { afterEach, describe, expect, it } from "vitest";
import type { Socket } from "node:net";
import type { EventLog } from "../../app/.server/sync/event-log.ts";
import { READ_LIMITS } from "../../app/.server/sync/sync-service.ts";
import { HOUR } from "../../app/.server/util/time.ts";
import { FirehoseConsumer, upgradeAnswer, upgradeRefusal } from "../helpers/firehose-consumer.ts";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.ts";
import { rawExchange } from "../helpers/raw-http.ts";
import { startNginx } from "../helpers/nginx.ts";
import { startRelayStandIn } from "../helpers/relay-stand-in.ts";
import { accountEvent, commitEvent, identityEvent, syncEvent } from "../helpers/repo-events.ts";

/**
 * com.atproto.sync.subscribeRepos over a real WebSocket on the server's own
 * port (docs/decisions/0029): the real server module started in this process
 * on its own event log in its database (either engine), consumers that decode
 * every frame and check it against the lexicon
 * (tests/helpers/subscribe-repos-lexicon.ts).
 */

const ALICE = "did:plc:alice2222222222222222222";
const BOB = "did:plc:bob22222222222222222222222";

let server: InProcessServer | undefined;
const consumers: FirehoseConsumer[] = [];

function consumer(query?: string): FirehoseConsumer {
  const made = new FirehoseConsumer(server!.firehoseUrl(query));
  consumers.push(made);
  return made;
}

afterEach(async () => {
  for (const made of consumers.splice(0)) {
    made.resume();
    made.close();
    await made.closed;
  }
  await server?.stop();
  server = undefined;
});

/** Appends `count` one-record commits of `did`, numbered from `from`, one append each. */
async function appendCommits(did: string, from: number, count: number, padding = 0): Promise<void> {
  for (let n = from; n < from + count; n++) await server!.append([await commitEvent(did, n, padding)], Date.now());
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The server's log with some of its reads replaced (a database that fails, a reader that counts). */
function withReads(log: EventLog, reads: Partial<Pick<EventLog, "after" | "latestSeq">>): EventLog {
  return {
    after: reads.after ?? ((cursor, limits) => log.after(cursor, limits)),
    latestSeq: reads.latestSeq ?? (() => log.latestSeq()),
    firstSeqSince: (time) => log.firstSeqSince(time),
    append: (events, now) => log.append(events, now),
  };
}

describe("subscribeRepos frames", () => {
  it("replays everything from cursor=0, every frame valid against the lexicon, then goes on live", async () => {
    server = await startInProcessServer();
    await server.append([identityEvent(ALICE, "alice.test"), accountEvent(ALICE, true)], Date.now());
    await appendCommits(ALICE, 1, 2);
    await server.append([await syncEvent(ALICE, 3), accountEvent(ALICE, false, "deactivated")], Date.now());

    const replaying = consumer("cursor=0");
    await replaying.opened;
    await replaying.untilSeq(6);
    expect(replaying.summary()).toEqual(["#identity:1", "#account:2", "#commit:3", "#commit:4", "#sync:5", "#account:6"]);
    const [identity, account, first, second] = replaying.frames.map((frame) => (frame.kind === "message" ? frame.body : {}));
    expect(identity).toMatchObject({ seq: 1, did: ALICE, handle: "alice.test" });
    expect(account).toMatchObject({ seq: 2, did: ALICE, active: true });
    // The deprecated fields the lexicon still requires are there; `since` is null on a repository's first commit.
    expect(first).toMatchObject({ seq: 3, repo: ALICE, rebase: false, tooBig: false, blobs: [], since: null });
    expect(first).not.toHaveProperty("prevData");
    expect(second).toMatchObject({ seq: 4, since: (first as { rev: string }).rev });
    expect(second).toHaveProperty("prevData");

    await server.append([identityEvent(BOB, "bob.test")], Date.now());
    await replaying.untilSeq(7);
    expect(replaying.seqs()).toEqual(range(1, 7));
  });

  it("without a cursor sends only what is appended after the subscription", async () => {
    server = await startInProcessServer();
    await appendCommits(ALICE, 1, 3);
    const live = consumer();
    await live.opened;
    await appendCommits(ALICE, 4, 1);
    await live.untilSeq(4);
    expect(live.seqs()).toEqual([4]);
  });

  it("a cursor at the newest event sends nothing old, then what comes", async () => {
    server = await startInProcessServer();
    await appendCommits(ALICE, 1, 3);
    const caughtUp = consumer("cursor=3");
    await caughtUp.opened;
    await appendCommits(ALICE, 4, 2);
    await caughtUp.untilSeq(5);
    expect(caughtUp.seqs()).toEqual([4, 5]);
  });
});

describe("live tailing", () => {
  it("sends this process's appends at once, without waiting for the poll (a minute here, twice the test timeout)", async () => {
    server = await startInProcessServer({ ATRIUM_FIREHOSE_POLL_MS: "60000" });
    const live = consumer();
    await live.opened;
    for (let n = 1; n <= 3; n++) {
      await appendCommits(ALICE, n, 1);
      await live.untilSeq(n);
    }
    expect(live.seqs()).toEqual([1, 2, 3]);
  });

  it("finds what was appended without a signal (another process, another machine) at the next poll", async () => {
    server = await startInProcessServer({ ATRIUM_FIREHOSE_POLL_MS: "20" });
    const unsignalled = server.otherProcess;
    const live = consumer();
    await live.opened;
    await unsignalled.append([await commitEvent(ALICE, 1)], Date.now());
    await live.untilSeq(1);
    await unsignalled.append([await commitEvent(ALICE, 2), await commitEvent(ALICE, 3)], Date.now());
    await live.untilSeq(3);
    expect(live.seqs()).toEqual([1, 2, 3]);
  });
});

describe("a failing event log", () => {
  it("tells the subscriber with an InternalServerError frame, and serves the next one once the log answers again", async () => {
    // The log fails its first read, as a database that is briefly unreachable would.
    let failures = 1;
    server = await startInProcessServer({ ATRIUM_FIREHOSE_POLL_MS: "20" }, (log) =>
      withReads(log, {
        latestSeq: async () => {
          if (failures-- > 0) throw new Error("the database is unreachable");
          return log.latestSeq();
        },
      }),
    );
    const first = consumer("cursor=0");
    await first.closeReceived();
    expect(first.frames).toEqual([{ kind: "error", error: "InternalServerError", message: expect.any(String) }]);

    await server.append([await commitEvent(ALICE, 1)], Date.now());
    const second = consumer("cursor=0");
    await second.untilSeq(1);
    expect(second.seqs()).toEqual([1]);
  });
});

describe("a log that fails while subscribers are live", () => {
  it("keeps them: once the log answers again they get what was appended meanwhile, in order", async () => {
    let failing = false;
    let failedReads = 0;
    server = await startInProcessServer({ ATRIUM_FIREHOSE_POLL_MS: "10" }, (log) =>
      withReads(log, {
        after: async (cursor, limits) => {
          if (failing) {
            failedReads++;
            throw new Error("the database is unreachable");
          }
          return log.after(cursor, limits);
        },
      }),
    );
    const live = consumer();
    await live.opened;
    await server.append([await commitEvent(ALICE, 1)], Date.now());
    await live.untilSeq(1);

    failing = true;
    await server.append([await commitEvent(ALICE, 2), await commitEvent(ALICE, 3)], Date.now());
    await eventually(() => failedReads >= 3);
    failing = false;
    await live.untilSeq(3);
    expect(live.seqs()).toEqual([1, 2, 3]);
  });
});

describe("subscribeRepos cursors", () => {
  it("a cursor older than the backfill window gets #info OutdatedCursor, then the window from its first event", async () => {
    server = await startInProcessServer({ ATRIUM_FIREHOSE_BACKFILL_HOURS: "1" });
    for (let n = 1; n <= 3; n++) await server.append([await commitEvent(ALICE, n)], Date.now() - 2 * HOUR);
    for (let n = 4; n <= 5; n++) await server.append([await commitEvent(ALICE, n)], Date.now());

    const outdated = consumer("cursor=1");
    await outdated.untilSeq(5);
    expect(outdated.summary()).toEqual(["#info:OutdatedCursor", "#commit:4", "#commit:5"]);

    // cursor=3: the next event (4) is in the window, so nothing is missing and no #info.
    const inWindow = consumer("cursor=3");
    await inWindow.untilSeq(5);
    expect(inWindow.summary()).toEqual(["#commit:4", "#commit:5"]);
  });

  it("a cursor when every event is older than the window gets OutdatedCursor, then what comes live", async () => {
    server = await startInProcessServer({ ATRIUM_FIREHOSE_BACKFILL_HOURS: "1" });
    for (let n = 1; n <= 2; n++) await server.append([await commitEvent(ALICE, n)], Date.now() - 2 * HOUR);
    const outdated = consumer("cursor=0");
    await outdated.until((frames) => frames.length === 1);
    await appendCommits(ALICE, 3, 1);
    await outdated.untilSeq(3);
    expect(outdated.summary()).toEqual(["#info:OutdatedCursor", "#commit:3"]);
  });

  it("a cursor in the future is an error frame on an accepted socket, which then closes", async () => {
    server = await startInProcessServer();
    await appendCommits(ALICE, 1, 2);
    const future = consumer("cursor=7");
    await future.opened;
    const closed = await future.closeReceived();
    expect(future.frames).toEqual([{ kind: "error", error: "FutureCursor", message: expect.stringContaining("7") }]);
    expect(closed.code).toBe(1008);
  });

  it.each(["abc", "-1", "1.5", "1e3", "99999999999999999", "1&cursor=2"])("a malformed cursor (%s) is an InvalidRequest error frame", async (cursor) => {
    server ??= await startInProcessServer();
    const malformed = consumer(`cursor=${cursor}`);
    await malformed.opened;
    const closed = await malformed.closeReceived();
    expect(malformed.frames).toEqual([{ kind: "error", error: "InvalidRequest", message: expect.any(String) }]);
    expect(closed.code).toBe(1008);
    await server.stop();
    server = undefined;
  });
});

describe("the switch from replay to live", () => {
  it("keeps seq order without gaps or duplicates for subscribers joining while events are appended", async () => {
    server = await startInProcessServer();
    // More than one batch (500) of history, so replays take several reads.
    const history = 1_200;
    const events = [];
    for (let n = 1; n <= history; n++) events.push(await commitEvent(ALICE, n));
    await server.append(events, Date.now());

    const total = history + 300;
    const joined: Array<{ made: FirehoseConsumer; cursor: number | undefined; joinedAt: number }> = [];
    let appended = history;
    // Appends and subscriptions interleave: a subscriber joins at every 60th append, two replaying for one live.
    while (appended < total) {
      await server.append([await commitEvent(BOB, appended + 1)], Date.now());
      appended++;
      // Lets the sockets make progress (connect, replay, join) between appends: a turn of the event loop, not a wait.
      await new Promise((resolve) => setImmediate(resolve));
      if (appended % 60 !== 0) continue;
      const cursor = joined.length % 3 === 2 ? undefined : (joined.length * 97) % appended;
      joined.push({ made: consumer(cursor === undefined ? undefined : `cursor=${cursor}`), cursor, joinedAt: appended });
    }
    // One more once everyone is in, so that the last live subscriber has something to receive.
    for (const { made } of joined) await made.opened;
    await server.append([await commitEvent(BOB, total + 1)], Date.now());
    for (const { made } of joined) await made.untilSeq(total + 1);
    for (const { made, cursor, joinedAt } of joined) {
      const seqs = made.seqs();
      // Live subscribers start with whatever was appended once they were in; replaying ones right after their cursor.
      const first = cursor === undefined ? seqs[0]! : cursor + 1;
      if (cursor === undefined) expect(first).toBeGreaterThan(joinedAt);
      expect(seqs).toEqual(range(first, total + 1));
    }
  });
});

/** Turns of the event loop until `condition` holds (state that socket and timer events change), never a timed wait; the test's timeout bounds it. */
async function eventually(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe("replaying subscribers that never read", () => {
  it("hold at most one read of the log each in the server, however large the events: the next read waits until the socket has taken the last", async () => {
    const subscribers = 4;
    const events = 64;
    let readBytes = 0;
    let heldHighest = 0;
    // The sockets the server writes to, and what the operating system has taken from each.
    const sockets: Socket[] = [];
    const taken = () => sockets.reduce((sum, socket) => sum + socket.bytesWritten - socket.writableLength, 0);
    server = await startInProcessServer({ ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: String(subscribers) }, (log) =>
      withReads(log, {
        // What the server holds is what it has read from the log and not yet handed to a socket's kernel buffers.
        after: async (cursor, limits) => {
          const read = await log.after(cursor, limits);
          readBytes += read.reduce((sum, event) => sum + event.body.length, 0);
          heldHighest = Math.max(heldHighest, readBytes - taken());
          return read;
        },
      }),
    );
    server.started.server.on("upgrade", (_req, socket) => sockets.push(socket as Socket));
    // 64 commits of 256 KiB each: 16 MiB per replay, several times what a socket's kernel buffers take.
    const large = await commitEvent(ALICE, 1, 256 * 1024);
    await server.append(Array.from({ length: events }, () => large), Date.now());
    const logBytes = events * large.body.length;

    const replaying = Array.from({ length: subscribers }, () => consumer("cursor=0"));
    await Promise.all(replaying.map((made) => made.opened.then(() => made.pause())));
    // Until every socket has bytes its kernel buffers no longer take (nothing moves over two turns of the event loop),
    // or, on a machine whose buffers take 16 MiB, until the log has been read for all.
    for (let stalled = false; !stalled && readBytes < subscribers * logBytes; ) {
      const before = sockets.map((socket) => socket.bytesWritten - socket.writableLength);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      stalled = sockets.length === subscribers && sockets.every((socket, i) => socket.writableLength > 0 && socket.bytesWritten - socket.writableLength === before[i]);
    }
    // The replays wait for their subscribers: read no further than what the kernels took, and one read each.
    expect(readBytes).toBeLessThanOrEqual(taken() + subscribers * READ_LIMITS.bytes);
    expect(heldHighest).toBeLessThanOrEqual(subscribers * READ_LIMITS.bytes);

    for (const made of replaying) made.resume();
    for (const made of replaying) await made.untilSeq(events);
    for (const made of replaying) expect(made.seqs()).toEqual(range(1, events));
    expect(readBytes).toBe(subscribers * logBytes);
    expect(heldHighest).toBeLessThanOrEqual(subscribers * READ_LIMITS.bytes);
  });
});

describe("slow consumers", () => {
  it("cuts off a consumer that never reads with ConsumerTooSlow, its queue in the server never past the bound", async () => {
    // Events of 256 KiB: the kernel's socket buffers (several MiB on loopback) fill in tens of events, not hundreds.
    const eventBytes = 256 * 1024;
    const bound = 2 * eventBytes;
    server = await startInProcessServer({ ATRIUM_FIREHOSE_MAX_BUFFER_BYTES: String(bound) });
    const firehose = server.started.sync!.firehose;
    const slow = consumer();
    await slow.opened;
    slow.pause();
    // A consumer that reads: once it has an event, the tail has handed that event to the slow one too.
    const witness = consumer();
    await witness.opened;

    let seq = 0;
    let highest = 0;
    while (firehose.stats().subscribers === 2) {
      if (seq >= 5_000) throw new Error(`not cut off after ${seq} events`);
      seq++;
      await server.append([await commitEvent(ALICE, seq, eventBytes)], Date.now());
      await witness.untilSeq(seq);
      highest = Math.max(highest, firehose.stats().maxBufferedBytes);
    }
    // The kernel's socket buffers filled first; then the server's queue grew to the bound, never past it.
    expect(highest).toBeLessThanOrEqual(bound);
    expect(highest).toBeGreaterThan(bound / 2);
    expect(witness.seqs()).toEqual(range(1, seq));

    slow.resume();
    const closed = await slow.closeReceived();
    const received = slow.seqs();
    // What it got before the cut is the stream without gaps, then the error frame.
    expect(received).toEqual(range(1, received.length));
    expect(received.length).toBeLessThan(seq);
    expect(slow.frames.at(-1)).toEqual({ kind: "error", error: "ConsumerTooSlow", message: expect.any(String) });
    expect(closed.code).toBe(1008);
  });
});

describe("connections", () => {
  it("refuses an address past its cap with 429 (X-Forwarded-For from a direct client changes nothing), and takes it again once one closes", async () => {
    server = await startInProcessServer({ ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: "2" });
    const first = consumer();
    const second = consumer("cursor=0");
    await Promise.all([first.opened, second.opened]);
    expect(await upgradeRefusal(server.firehoseUrl())).toBe(429);
    expect(await upgradeRefusal(server.firehoseUrl(), { "X-Forwarded-For": "192.0.2.7" })).toBe(429);

    first.close();
    await first.closed;
    await eventually(() => server!.started.sync!.firehose.stats().subscribers === 1);
    const third = consumer();
    await third.opened;
    await server.append([identityEvent(ALICE, "alice.test")], Date.now());
    await third.untilSeq(1);
    await second.untilSeq(1);
  });

  it("counts an IPv6 client by its /64, as every per-address limit does: a new address of the same /64 is refused, another /64 is not", async () => {
    // One hop of trusted proxy: the client address is what X-Forwarded-For names, as nginx would write it.
    server = await startInProcessServer({ ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: "2", ATRIUM_TRUST_PROXY: "1" });
    const from = (address: string) => upgradeAnswer(server!.firehoseUrl(), { "X-Forwarded-For": address });
    const open = [await from("2001:db8:5:6::1"), await from("2001:db8:5:6:a:b:c:d")];
    expect(open.map((answer) => answer.status)).toEqual([101, 101]);
    // Another address of the /64, and one more written in capitals.
    for (const address of ["2001:db8:5:6::ffff", "2001:DB8:5:6:1:2:3:4"]) {
      const refused = await from(address);
      expect({ address, status: refused.status }).toEqual({ address, status: 429 });
      expect(refused.retryAfter).toBe("60");
    }
    const neighbours = [await from("2001:db8:5:7::1"), await from("192.0.2.7")];
    expect(neighbours.map((answer) => answer.status)).toEqual([101, 101]);
    // A place comes back once one of the /64's connections closes.
    await open[0]!.close();
    await eventually(() => server!.started.sync!.firehose.stats().subscribers === 3);
    const again = await from("2001:db8:5:6::2");
    expect(again.status).toBe(101);
    await Promise.all([open[1]!, ...neighbours, again].map((answer) => answer.close()));
  });

  it("closes every subscription with 1001 (going away) when the server shuts down", async () => {
    server = await startInProcessServer();
    const live = consumer();
    const replaying = consumer("cursor=0");
    await Promise.all([live.opened, replaying.opened]);
    server.started.sync!.close();
    expect((await live.closeReceived()).code).toBe(1001);
    expect((await replaying.closeReceived()).code).toBe(1001);
  });

  it("refuses upgrades to anything but subscribeRepos with a plain 404", async () => {
    server = await startInProcessServer();
    const base = `ws://127.0.0.1:${server.port}`;
    expect(await upgradeRefusal(`${base}/`)).toBe(404);
    expect(await upgradeRefusal(`${base}/xrpc/com.atproto.sync.getRepo`)).toBe(404);
    expect(await upgradeRefusal(`${base}/xrpc/com.atproto.sync.subscribeRepos/extra`)).toBe(404);
    // An h2c upgrade (curl --http2 on http://) is refused the same way, and the server closes the connection.
    const h2c = await rawExchange(server.port, (socket) =>
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${server!.port}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n`),
    );
    expect(h2c.text).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(h2c.closedByServer).toBe(true);
    // The server goes on answering plain HTTP on the same port.
    const health = await fetch(`${server.issuer}/xrpc/_health`);
    expect(health.status).toBe(200);
  });
});

describe("ATRIUM_CRAWLERS", () => {
  it("tells the configured relays with requestCrawl when this process appends, naming PUBLIC_URL's host", async () => {
    const relay = await startRelayStandIn();
    try {
      server = await startInProcessServer({ ATRIUM_CRAWLERS: `${relay.url}/` });
      await server.append([await commitEvent(ALICE, 1)], Date.now());
      await relay.received(1);
      expect(relay.requests).toEqual([{ path: "POST /xrpc/com.atproto.sync.requestCrawl", contentType: "application/json", body: { hostname: `127.0.0.1:${server.port}` } }]);
    } finally {
      await relay.stop();
    }
  });
});

describe("behind nginx", () => {
  it("subscribes through docs/configuration.md's nginx configuration, which passes the WebSocket upgrade on", async () => {
    server = await startInProcessServer();
    const nginx = await startNginx({ upstreamPorts: [server.port] });
    try {
      await appendCommits(ALICE, 1, 2);
      const proxied = new FirehoseConsumer(`ws://127.0.0.1:${nginx.port}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`);
      consumers.push(proxied);
      await proxied.untilSeq(2);
      await appendCommits(ALICE, 3, 1);
      await proxied.untilSeq(3);
      expect(proxied.seqs()).toEqual([1, 2, 3]);
      // The error frames cross the proxy too.
      const future = new FirehoseConsumer(`ws://127.0.0.1:${nginx.port}/xrpc/com.atproto.sync.subscribeRepos?cursor=99`);
      consumers.push(future);
      await future.closeReceived();
      expect(future.frames).toEqual([{ kind: "error", error: "FutureCursor", message: expect.any(String) }]);
      proxied.close();
      await proxied.closed;
    } finally {
      await nginx.stop();
    }
  });
});
