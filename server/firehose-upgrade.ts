import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Config } from "../app/.server/config.ts";
import { limitBucketOf } from "../app/.server/http/forwarded-address.ts";
import type { Metrics } from "../app/.server/observability/metrics.ts";
import type { ErrorReporter } from "../app/.server/observability/report-error.ts";
import type { RequestLimiter } from "../app/.server/security/request-limiter.ts";
import type { StreamSocket } from "../app/.server/sync/firehose.ts";
import { errorFrame } from "../app/.server/sync/frames.ts";
import { parseSubscribeParams } from "../app/.server/sync/subscribe-params.ts";
import type { Sync } from "../app/.server/sync/sync-service.ts";
import { clientAddress } from "./http-common.ts";
import { originFormOf } from "./request-target.ts";

/**
 * The WebSocket side of the one HTTP server (docs/decisions/0029): an
 * upgrade to /xrpc/com.atproto.sync.subscribeRepos becomes a firehose
 * subscription; any other upgrade (another path, h2c, a server without an
 * event log) is refused with a plain HTTP answer, and so is an address past
 * its upgrades per minute or its connection cap (429, docs/decisions/0044),
 * both counted by the address's limit bucket (an IPv6 address by its /64,
 * as every per-address limit). What the stream says is app/.server/sync's.
 */

/** What the upgrade counts with: the request limiter shared by every process on the database, and where refusals and failures go. */
export type UpgradeLimits = { limiter: RequestLimiter; metrics: Pick<Metrics, "rateLimited">; report: ErrorReporter };

const SUBSCRIBE_REPOS = "/xrpc/com.atproto.sync.subscribeRepos";
/** Subscribers send nothing; a frame larger than this from one closes its socket. */
const MAX_INCOMING_BYTES = 4 * 1024;
/** RFC 6455 §7.4.1: "a message that violates its policy". */
const POLICY_VIOLATION = 1008;
/**
 * Every subscriber is pinged this often: a quiet stream stays open through proxies that close idle connections
 * (nginx after 60 s by default), and a peer that has not answered the previous ping (gone, or not reading at all) is
 * dropped, which also ends a replay stalled on a consumer that stopped reading.
 */
const HEARTBEAT_MS = 30_000;

export function serveFirehose(server: Server, config: Config, sync: Sync | undefined, limits: UpgradeLimits): void {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_INCOMING_BYTES, perMessageDeflate: false, clientTracking: false });
  const answered = new Map<WebSocket, boolean>();
  const heartbeat = setInterval(() => beat(answered), HEARTBEAT_MS).unref();
  server.on("close", () => clearInterval(heartbeat));
  server.on("upgrade", (req, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const target = originFormOf(req.url, config.issuer);
    const url = target === undefined ? undefined : new URL(target, config.issuer);
    if (!sync || !url || url.pathname !== SUBSCRIBE_REPOS) return refuse(socket, 404, "Not Found", "Nothing here accepts a protocol upgrade.");
    const bucket = limitBucketOf(clientAddress(req, config.trustProxy));
    void upgradesLeft(limits, config, bucket).then((refusal) => {
      // The client may have gone while the database decided: nothing to answer, no place to take.
      if (socket.destroyed) return;
      if (refusal) return refuse(socket, refusal.status, refusal.statusText, refusal.text, refusal.retryAfterSeconds);
      const release = sync.caps.acquire(bucket);
      if (!release) return refuse(socket, 429, "Too Many Requests", "Too many firehose connections from this address.", 60);
      // Also when the handshake is refused (ws answers it and destroys the socket without calling back).
      socket.once("close", release);
      const params = parseSubscribeParams(url.searchParams);
      void startOf(sync, params, limits.report).then((start) => {
        if (socket.destroyed) return;
        if (start === "failed") return refuse(socket, 500, "Internal Server Error", "The server could not read its event log.");
        sockets.handleUpgrade(req, socket, head, (ws) => {
          answered.set(ws, true);
          ws.on("pong", () => answered.set(ws, true));
          ws.once("close", () => answered.delete(ws));
          subscribe(ws, sync, params, start);
        });
      });
    });
  });
}

type Refusal = { status: number; statusText: string; text: string; retryAfterSeconds?: number };

/**
 * Counts the upgrade against the bucket's upgrades per minute, before the handshake: a refusal (429 with
 * Retry-After, or 500 when the count could not be written), or undefined to go on. A subscription is long-lived,
 * so a limit small enough to be decided by the database on every upgrade holds across processes and machines.
 */
async function upgradesLeft({ limiter, metrics, report }: UpgradeLimits, config: Config, bucket: string): Promise<Refusal | undefined> {
  try {
    const result = await limiter.hit(`requests:firehose:${bucket}`, config.firehose.upgradesPerMinute, 60_000);
    if (result.allowed) return undefined;
    metrics.rateLimited("firehose");
    const text = `Too many firehose subscriptions from this address; try again in ${result.retryAfterSeconds} seconds.`;
    return { status: 429, statusText: "Too Many Requests", text, retryAfterSeconds: result.retryAfterSeconds };
  } catch (error) {
    report("Counting a firehose upgrade failed", error);
    return { status: 500, statusText: "Internal Server Error", text: "The server could not handle this request." };
  }
}

/**
 * Where a subscription starts: its cursor, or, without one, the newest event now, read before the handshake completes
 * (the lexicon: "If not provided, the stream starts at the current sequence"). Whatever its client appends once it
 * sees the connection open then comes after that point, and reaches it, whichever of the append and the tail's first
 * read of the log lands first.
 */
async function startOf(sync: Sync, params: ReturnType<typeof parseSubscribeParams>, report: ErrorReporter): Promise<number | undefined | "failed"> {
  if (!params.ok || params.cursor !== undefined) return params.ok ? params.cursor : undefined;
  try {
    return await sync.firehose.newestSeq();
  } catch (error) {
    report("Reading the event log for a firehose subscription failed", error);
    return "failed";
  }
}

function subscribe(ws: WebSocket, sync: Sync, params: ReturnType<typeof parseSubscribeParams>, start: number | undefined): void {
  ws.on("error", () => ws.terminate());
  if (!params.ok) {
    ws.send(errorFrame("InvalidRequest", params.message));
    ws.close(POLICY_VIOLATION, "InvalidRequest");
    return;
  }
  const socket: StreamSocket = {
    send: (frame, written) => ws.send(frame, { binary: true }, written && (() => written())),
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    close: (code, reason) => ws.close(code, reason),
  };
  const { ended } = sync.firehose.subscribe(socket, start);
  ws.once("close", ended);
}

function beat(answered: Map<WebSocket, boolean>): void {
  for (const [ws, alive] of answered) {
    if (!alive) {
      ws.terminate();
      continue;
    }
    answered.set(ws, false);
    ws.ping();
  }
}

function refuse(socket: Duplex, status: number, statusText: string, text: string, retryAfterSeconds?: number): void {
  const retry = retryAfterSeconds === undefined ? "" : `Retry-After: ${retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${retry}Connection: close\r\n\r\n${text}`,
  );
}
