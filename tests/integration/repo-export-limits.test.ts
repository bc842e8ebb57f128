/**
 * Repository exports against clients that stop reading (issue 28 item 1; docs/decisions/0042), as an attacker opens
 * them: many at once, over parallel connections, from one address and from several, with aliases of one IPv6 /64
 * through a proxy the server trusts. What the server holds is measured, not timed: the block bytes it has read from
 * the database for exports and not handed on (a gauge of its metrics), and, once the exports are over, everything it
 * read against everything the clients received. The idle timeout and the deadline are reached by moving the server's
 * clock (tests/helpers/test-clock.ts), and their end is waited for as an event: the snapshot's connection gone.
 */
import net from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SNAPSHOT_APPLICATION_NAME } from "../../app/.server/db/postgres-database.ts";
import { createAlice } from "../helpers/flow.ts";
import { scrape, valueOf } from "../helpers/prometheus.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope } from "../helpers/xrpc.ts";

const NOTE = "com.example.bulk.note";
/** 120 records of 95 kB (a record's limit is 100 KiB), written 10 to a call (a JSON body's is 1 MB): a repository of some 11 MB. */
const RECORDS = 120;
const RECORDS_PER_CALL = 10;
const RECORD_BYTES = 95_000;
/** The server's page budget (app/.server/sync/repo-exports.ts PAGE_BYTES) and its chunks (CHUNK_BYTES). */
const PAGE_BYTES = 256 * 1024;
const CHUNK_BYTES = 64 * 1024;
/** The largest block: a record and its CBOR framing. */
const LARGEST_BLOCK = RECORD_BYTES + 1024;
/**
 * What one export may hold beyond what its socket took: a page (or one block larger than a page), the CAR chunk being
 * gathered, and Node's stream buffers ahead of the socket (the readable side's and the response's highWaterMark, at
 * most 64 KiB each on Node 22, each with one chunk past it).
 */
const HELD_PER_EXPORT = Math.max(PAGE_BYTES, LARGEST_BLOCK) + CHUNK_BYTES + 2 * (64 * 1024 + LARGEST_BLOCK);
const PER_ADDRESS = 3;
const IN_ALL = 8;
const IDLE_SECONDS = 60;

let server: TestServer;
let clock: TestClock;
let metricsPort: number;
let did: string;
let recordCids: string[];
let holder: pg.Client | undefined;

beforeAll(async () => {
  clock = testClock();
  metricsPort = await freePort();
  server = await startTestServer({
    ...clock.env,
    ATRIUM_METRICS_PORT: String(metricsPort),
    // The test is the proxy for the IPv6 clients; the loopback clients send no X-Forwarded-For.
    ATRIUM_TRUST_PROXY: "1",
    ATRIUM_REPO_EXPORTS_PER_ADDRESS: String(PER_ADDRESS),
    ATRIUM_REPO_EXPORTS_MAX: String(IN_ALL),
    ATRIUM_REPO_EXPORT_IDLE_SECONDS: String(IDLE_SECONDS),
  });
  ({ did } = await createAlice(server));
  const token = await tokenWithScope(server, "atproto transition:generic");
  recordCids = [];
  for (let start = 0; start < RECORDS; start += RECORDS_PER_CALL) {
    const writes = Array.from({ length: RECORDS_PER_CALL }, (_, i) => ({
      $type: "com.atproto.repo.applyWrites#create",
      collection: NOTE,
      rkey: `n${String(start + i).padStart(3, "0")}`,
      value: { $type: NOTE, text: `${start + i} ${"x".repeat(RECORD_BYTES)}` },
    }));
    const written = await call<{ results: Array<{ cid: string }> }>(token, "com.atproto.repo.applyWrites", { json: { repo: did, writes } });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    recordCids.push(...written.body.results.map((result) => result.cid));
  }
  if (!server.databasePath) {
    holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
  }
});
afterAll(async () => {
  await holder?.end();
  await server?.stop();
  clock?.remove();
});

/** A client that asks and then reads nothing after the answer's head (or reads a refusal whole). */
class Client {
  status = 0;
  headers = "";
  /** Body bytes received (what the server's socket took, once drained). */
  received = 0;
  private tail = "";
  private head = "";
  private readonly closed: Promise<void>;

  private constructor(readonly socket: net.Socket) {
    this.closed = new Promise((resolve) => socket.once("close", () => resolve()));
  }

  static open(path: string, options: { from?: string; forwardedFor?: string; method?: string } = {}): Promise<Client> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port: server.port, host: "127.0.0.1", localAddress: options.from }, () => {
        const forwarded = options.forwardedFor ? `X-Forwarded-For: ${options.forwardedFor}\r\n` : "";
        socket.write(`${options.method ?? "GET"} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n${forwarded}\r\n`);
      });
      const client = new Client(socket);
      socket.on("error", () => undefined);
      socket.on("data", (chunk: Buffer) => {
        if (client.status === 0) {
          client.head += chunk.toString("latin1");
          const end = client.head.indexOf("\r\n\r\n");
          if (end === -1) return;
          client.headers = client.head.slice(0, end);
          client.status = Number(/^HTTP\/1\.1 (\d+)/.exec(client.headers)![1]);
          client.count(Buffer.byteLength(client.head.slice(end + 4), "latin1"), client.head.slice(end + 4));
          if (client.status === 200 && options.method !== "HEAD") socket.pause();
          resolve(client);
          return;
        }
        client.count(chunk.length, chunk.toString("latin1"));
      });
      socket.once("close", () => (client.status === 0 ? reject(new Error("closed before an answer")) : undefined));
    });
  }

  private count(bytes: number, text: string): void {
    this.received += bytes;
    this.tail = (this.tail + text).slice(-5);
  }

  /** Reads what is left until the server closes: whether the chunked body ended as a complete answer does. */
  async drain(): Promise<{ complete: boolean }> {
    this.socket.resume();
    await this.closed;
    return { complete: this.tail === "0\r\n\r\n" };
  }

  destroy(): void {
    this.socket.destroy();
  }
}

const getRepo = () => `/xrpc/com.atproto.sync.getRepo?did=${encodeURIComponent(did)}`;
const getBlocks = () => `/xrpc/com.atproto.sync.getBlocks?${new URLSearchParams([["did", did], ...recordCids.map((cid) => ["cids", cid])])}`;

const exportsOpen = async () => valueOf(await scrape(metricsPort), "atrium_repo_exports_open");

/** The sessions of held snapshots: snapshot connections inside a transaction (PostgreSQL: pg_stat_activity). */
async function snapshotSessions(): Promise<number> {
  const { rows } = await holder!.query<{ n: number }>(
    // In a transaction, whether idle between pages or reading one at this moment (a page in flight is 'active').
    `SELECT COUNT(*)::int AS "n" FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND xact_start IS NOT NULL`,
    [SNAPSHOT_APPLICATION_NAME],
  );
  return rows[0]!.n;
}

/**
 * Whether a snapshot still holds the SQLite file: a checkpoint cannot copy back the WAL's frames written after the
 * oldest snapshot still read, so after a write, one that copies fewer frames than the WAL has is held back by a reader.
 * (A closed connection's file descriptor is no sign: SQLite keeps it open for the next connection to the same file.)
 */
async function checkpointHeldBack(of: TestServer): Promise<boolean> {
  const [result] = of.db().pragma("wal_checkpoint(PASSIVE)") as Array<{ busy: number; log: number; checkpointed: number }>;
  return result!.busy > 0 || result!.checkpointed < result!.log;
}

/** A write to the file (the same row rewritten), so that the WAL has frames after every snapshot taken before it. */
function write(of: TestServer): void {
  of.db().prepare(`UPDATE "Account" SET "updatedAt" = "updatedAt"`).run();
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Waits, one look at a time, until no snapshot holds the database: its connection back in the pool, or the checkpoint free. */
async function snapshotsReleased(of: TestServer = server): Promise<void> {
  if (holder) {
    while ((await snapshotSessions()) > 0) await pause();
    return;
  }
  write(of);
  while (await checkpointHeldBack(of)) await pause();
}

/** Waits until no export is open (a scrape at a time) and their snapshots are released. */
async function allReleased(): Promise<void> {
  while ((await exportsOpen()) > 0) await pause();
  await snapshotsReleased();
}

/**
 * Moves the server's clock past the idle timeout until every export has been ended for idling. One still filling its
 * socket's buffers when the clock moved made progress at the new time, and idles out at the next move; the server
 * looks once a second, so each move is given a few looks before the next.
 */
async function idleOut(): Promise<void> {
  while ((await exportsOpen()) > 0) {
    clock.advance((IDLE_SECONDS + 1) * 1000);
    for (let look = 0; look < 40 && (await exportsOpen()) > 0; look++) await pause();
  }
}

/** Snapshots are held: on PostgreSQL `count` sessions of them; on SQLite, the checkpoint held back after a write. */
async function expectSnapshotsHeld(count: number): Promise<void> {
  if (holder) expect(await snapshotSessions()).toBe(count);
  else {
    write(server);
    expect(await checkpointHeldBack(server)).toBe(true);
  }
}

describe("exports whose clients stop reading", () => {
  it("hold a page each, not the repository, and are ended when idle: their snapshots released, their answers cut", async () => {
    const before = await scrape(metricsPort);
    const readBefore = valueOf(before, "atrium_repo_export_read_bytes_total");
    const clients = await Promise.all([
      ...[2, 3, 4, 5].map((n) => Client.open(getRepo(), { from: `127.0.0.${n}` })),
      ...[6, 7].map((n) => Client.open(getBlocks(), { from: `127.0.0.${n}` })),
    ]);
    expect(clients.map((client) => client.status)).toEqual([200, 200, 200, 200, 200, 200]);
    await expectSnapshotsHeld(6);
    // While the server fills the sockets' buffers, and once they are full: a page at most for each export.
    for (let scrapes = 0; scrapes < 10; scrapes++) {
      const samples = await scrape(metricsPort);
      expect(valueOf(samples, "atrium_repo_exports_open")).toBe(6);
      expect(valueOf(samples, "atrium_repo_export_held_bytes")).toBeLessThanOrEqual(6 * (Math.max(PAGE_BYTES, LARGEST_BLOCK) + LARGEST_BLOCK));
    }

    await idleOut();
    await allReleased();
    const drained = await Promise.all(clients.map((client) => client.drain()));
    // A cut answer, never one that looks complete.
    expect(drained.map((outcome) => outcome.complete)).toEqual([false, false, false, false, false, false]);
    // Everything the server read for them, less what their sockets took: what it held, a bounded amount each.
    const read = valueOf(await scrape(metricsPort), "atrium_repo_export_read_bytes_total") - readBefore;
    const received = clients.reduce((sum, client) => sum + client.received, 0);
    expect(read - received).toBeLessThanOrEqual(6 * HELD_PER_EXPORT);
    // And the repository was far larger than what the clients took: the exports were stalled, not finished.
    expect(received).toBeLessThan(6 * RECORDS * RECORD_BYTES);
  });
});

describe("the caps on exports at once", () => {
  it("per address (an IPv6 /64 as one), then in all, over parallel connections: RateLimitExceeded with Retry-After, nothing read", async () => {
    await allReleased();
    const limitedBefore = valueOf(await scrape(metricsPort), "atrium_rate_limited_total", { limit: "repo_export" });
    const one = await Promise.all(Array.from({ length: 6 }, () => Client.open(getRepo(), { from: "127.0.0.2" })));
    expect(one.filter((client) => client.status === 200)).toHaveLength(PER_ADDRESS);
    const refused = one.filter((client) => client.status === 429);
    expect(refused).toHaveLength(6 - PER_ADDRESS);
    for (const client of refused) {
      expect(client.headers).toMatch(/^Retry-After: 10$/m);
      await client.drain();
    }
    // Four addresses of one /64, through the proxy: one client's, counted together.
    const sixtyFour = await Promise.all(["2001:db8:5:6::1", "2001:db8:5:6::2", "2001:db8:5:6:ffff::3", "2001:db8:5:6::4"].map((address) => Client.open(getRepo(), { forwardedFor: address })));
    expect(sixtyFour.filter((client) => client.status === 200)).toHaveLength(PER_ADDRESS);
    // Two more from another address: the eighth place in all is the last.
    const other = await Promise.all([Client.open(getRepo(), { from: "127.0.0.3" }), Client.open(getRepo(), { from: "127.0.0.3" })]);
    expect(other.map((client) => client.status)).toEqual([200, 200]);
    const late = await Client.open(getRepo(), { from: "127.0.0.4" });
    expect(late.status).toBe(429);
    expect(await exportsOpen()).toBe(IN_ALL);
    await expectSnapshotsHeld(IN_ALL);
    expect(valueOf(await scrape(metricsPort), "atrium_rate_limited_total", { limit: "repo_export" }) - limitedBefore).toBe(6 - PER_ADDRESS + 1 + 1);

    // Clients that go away release their places and their snapshots at once: no timeout involved.
    for (const client of [...one, ...sixtyFour, ...other, late]) client.destroy();
    await allReleased();
    const again = await Client.open(getRepo(), { from: "127.0.0.4" });
    expect(again.status).toBe(200);
    again.destroy();
    await allReleased();
  });

  it("a HEAD request is answered without reading the repository, and holds nothing", async () => {
    const readBefore = valueOf(await scrape(metricsPort), "atrium_repo_export_read_bytes_total");
    const head = await Client.open(getRepo(), { method: "HEAD" });
    expect(head.status).toBe(200);
    head.destroy();
    await allReleased();
    expect(valueOf(await scrape(metricsPort), "atrium_repo_export_read_bytes_total") - readBefore).toBeLessThanOrEqual(PAGE_BYTES + LARGEST_BLOCK);
  });
});

describe("the deadline", () => {
  it("ends an export however its client reads, once it has lasted ATRIUM_REPO_EXPORT_MAX_SECONDS", async () => {
    // A second server on the same database, whose exports never idle out before their deadline.
    const ownClock = testClock();
    const second = await startTestServer({ ...ownClock.env, DATABASE_URL: server.databaseUrl, ATRIUM_REPO_EXPORT_IDLE_SECONDS: "3600", ATRIUM_REPO_EXPORT_MAX_SECONDS: "120" });
    try {
      const socketOf = await new Promise<net.Socket>((resolve) => {
        const socket = net.connect(second.port, "127.0.0.1", () => {
          socket.write(`GET ${getRepo()} HTTP/1.1\r\nHost: 127.0.0.1:${second.port}\r\n\r\n`);
          socket.once("data", () => {
            socket.pause();
            resolve(socket);
          });
        });
      });
      const ended = new Promise<void>((resolve) => socketOf.once("close", () => resolve()));
      ownClock.advance(61_000);
      ownClock.advance(60_000);
      await second.printed(/A repository export was ended: The export took longer than its 120 s/);
      socketOf.resume();
      await ended;
      await snapshotsReleased(second);
    } finally {
      await second.stop();
      ownClock.remove();
    }
  });
});
