import { createServer, type Server } from "node:http";

export type RelayStandIn = {
  url: string;
  /** The requestCrawl bodies received, in order. */
  requests: Array<{ path: string; contentType: string | undefined; body: unknown }>;
  /** Resolves once `count` requests have arrived. */
  received(count: number): Promise<void>;
  /** The status the next answers carry (200 by default). */
  answerWith(status: number): void;
  stop(): Promise<void>;
};

/** A real HTTP server on loopback standing in for a relay's com.atproto.sync.requestCrawl. */
export async function startRelayStandIn(): Promise<RelayStandIn> {
  const requests: RelayStandIn["requests"] = [];
  const waiters: Array<() => void> = [];
  let status = 200;
  const server: Server = createServer((req, res) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (text += chunk));
    req.on("end", () => {
      requests.push({ path: `${req.method} ${req.url}`, contentType: req.headers["content-type"], body: JSON.parse(text || "null") });
      res.writeHead(status, { "content-type": "application/json" }).end(status === 200 ? "{}" : '{"error":"InternalServerError"}');
      for (const waiter of waiters.splice(0)) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async received(count) {
      while (requests.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    answerWith(next) {
      status = next;
    },
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
