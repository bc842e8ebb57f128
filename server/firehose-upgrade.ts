import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { Config } from "../app/.server/config.ts";
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
 * its connection cap (429). What the stream says is app/.server/sync's.
 */

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

export function serveFirehose(server: Server, config: Config, sync: Sync | undefined): void {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_INCOMING_BYTES, perMessageDeflate: false, clientTracking: false });
  const answered = new Map<WebSocket, boolean>();
  const heartbeat = setInterval(() => beat(answered), HEARTBEAT_MS).unref();
  server.on("close", () => clearInterval(heartbeat));
  server.on("upgrade", (req, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const target = originFormOf(req.url, config.issuer);
    const url = target === undefined ? undefined : new URL(target, config.issuer);
    if (!sync || !url || url.pathname !== SUBSCRIBE_REPOS) return refuse(socket, 404, "Not Found", "Nothing here accepts a protocol upgrade.");
    const release = sync.caps.acquire(clientAddress(req, config.trustProxy));
    if (!release) return refuse(socket, 429, "Too Many Requests", "Too many firehose connections from this address.");
    // Also when the handshake is refused (ws answers it and destroys the socket without calling back).
    socket.once("close", release);
    sockets.handleUpgrade(req, socket, head, (ws) => {
      answered.set(ws, true);
      ws.on("pong", () => answered.set(ws, true));
      ws.once("close", () => answered.delete(ws));
      subscribe(ws, sync, url.searchParams);
    });
  });
}

function subscribe(ws: WebSocket, sync: Sync, query: URLSearchParams): void {
  ws.on("error", () => ws.terminate());
  const params = parseSubscribeParams(query);
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
  const { ended } = sync.firehose.subscribe(socket, params.cursor);
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

function refuse(socket: Duplex, status: number, statusText: string, text: string): void {
  const retry = status === 429 ? "Retry-After: 60\r\n" : "";
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${retry}Connection: close\r\n\r\n${text}`,
  );
}
