import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { TrustedProxies } from "../app/.server/http/forwarded-address.ts";
import { requestIdOf, type RequestRecorder } from "./http-common.ts";

/**
 * The request target (RFC 9112 §3.2): "/path?query" (origin-form) is what
 * clients send an origin server. The other forms are for proxies:
 * absolute-form (`GET http://host/path`), authority-form (`CONNECT
 * host:port`) and asterisk-form (`OPTIONS *`). This server is not a proxy,
 * and Express and Remix build a URL by prefixing the target with the host,
 * so a target that is not a path used to end in a 500 and a stack trace.
 */

/**
 * The origin-form of a request target, or undefined when it names no
 * resource of this server. RFC 9112 §3.2.2: "A server MUST accept the
 * absolute-form in requests", and "MUST ignore the received Host header
 * field (if any) and instead use the host information of the
 * request-target": an absolute-form naming this server's own origin (the
 * issuer) is served as its path and query; one naming any other origin is not
 * for this server.
 */
export function originFormOf(url: string | undefined, issuer: string): string | undefined {
  if (url === undefined || url === "") return undefined;
  if (url.charCodeAt(0) === 47 /* "/" */) return url;
  if (!/^https?:\/\//i.test(url)) return undefined;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return undefined;
  }
  // RFC 9110 §4.2.4: userinfo in an http(s) URI is to be treated as an error.
  if (target.origin !== issuer || target.username !== "" || target.password !== "") return undefined;
  return target.pathname + target.search;
}

const REFUSAL = "Bad Request: the request target must be a path on this server.\n";

/**
 * 400 for a request target that is not for this server: a short plain
 * answer, and the connection closed. Its log line names the target's form,
 * not the target (an absolute-form URL may carry credentials or a query).
 */
export function refuseRequestTarget(req: IncomingMessage, res: ServerResponse, recorder: RequestRecorder, trustProxy: TrustedProxies): void {
  const started = performance.now();
  const requestId = requestIdOf(req, trustProxy);
  res.writeHead(400, {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(REFUSAL)),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "X-Request-Id": requestId,
    Connection: "close",
  });
  res.end(REFUSAL);
  const form = req.url === "*" ? "*" : /^[a-z][a-z0-9+.-]*:\/\//i.test(req.url ?? "") ? "(absolute-form)" : "(not a path)";
  recorder.served(req, requestId, form, "other", 400, started);
}

/**
 * CONNECT (authority-form, RFC 9110 §9.3.6) asks for a tunnel, which only a
 * proxy makes. Node hands such a request to a "connect" listener as a bare
 * socket (without one it closes the connection without a word): answer 400
 * there too.
 */
export function refuseConnect(_req: IncomingMessage, socket: Duplex): void {
  socket.on("error", () => socket.destroy());
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(REFUSAL)}\r\nConnection: close\r\n\r\n${REFUSAL}`,
  );
}
