/**
 * A gate between servers (or the account tool) and the test run's real PLC directory: it forwards everything, and
 * holds the first `hold` genesis operations until all of them have arrived. A create registers its DID only after its
 * own checks (the handle, the email, an invite code), so once the gate opens every one of them has passed its checks,
 * and a race is decided by the store's inserts, on each engine, without any timing. It records every genesis DID, so
 * that a test can look at the losers' at the directory (tombstoned: docs/decisions/0030).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type PlcGate = {
  url: string;
  genesisDids: string[];
  /** Holds the next `count` genesis operations until all of them have arrived. */
  holdNext(count: number): void;
  close(): Promise<void>;
};

export async function genesisGate(directoryUrl: string, hold: number): Promise<PlcGate> {
  const genesisDids: string[] = [];
  const waiting: (() => void)[] = [];
  let holding = hold;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const forward = () => {
        fetch(`${directoryUrl}${request.url}`, { method: request.method, headers: { "content-type": "application/json" }, body: request.method === "POST" ? body : undefined })
          .then(async (answer) => {
            response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
            response.end(Buffer.from(await answer.arrayBuffer()));
          })
          .catch(() => response.destroy());
      };
      const isGenesis = request.method === "POST" && (JSON.parse(body.toString() || "{}") as { prev?: unknown }).prev === null;
      if (!isGenesis) return forward();
      genesisDids.push(decodeURIComponent(request.url!.slice(1)));
      if (holding === 0) return forward();
      waiting.push(forward);
      if (waiting.length < holding) return;
      holding = 0;
      waiting.splice(0).forEach((release) => release());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    genesisDids,
    holdNext: (count) => {
      holding = count;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
