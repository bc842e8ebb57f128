import http from "node:http";
import { CORS_HEADERS, HARDENING_HEADERS } from "../../server/security-headers.ts";
import { postgresFloorWork, sqliteFloorWork } from "./floor.ts";

/**
 * The HTTP floor's server (bench/lib/http-floor.ts): a plain node:http server that answers every request with its
 * engine's floor work and a small JSON body with the headers Atrium's API answers carry. On SQLite the work is
 * sqliteFloorWork (one ES256 verification, one INSERT, one SELECT, in-process); with BENCH_FLOOR_DATABASE_URL set it is
 * postgresFloorWork on that database (the same verification, the INSERT and the SELECT through pg, a durable commit).
 * Nothing else: no routing, limits, logging or parsing of what was sent. Prints `{"port":…}` once it listens on a free
 * loopback port; stops on SIGTERM, or when its standard input ends (the benchmark that started it is gone).
 */
const databaseUrl = process.env.BENCH_FLOOR_DATABASE_URL;
const work: { once(): void | Promise<void>; close(): void | Promise<void> } = databaseUrl ? await postgresFloorWork(databaseUrl) : sqliteFloorWork();
const body = JSON.stringify({ did: "did:plc:ewvi7nxzyoun6zhxrhs64oiz", handle: "bench.test", active: true });
const headers = {
  ...HARDENING_HEADERS,
  ...CORS_HEADERS,
  "Content-Type": "application/json",
  "Cache-Control": "no-store",
  "DPoP-Nonce": "f0Qb6ZcEAt0uXc1r8ObbZp7NmNEd0XH7M9zzhSkzB1k",
  "Content-Length": String(Buffer.byteLength(body)),
};
let served = 0;

const answer = (res: http.ServerResponse) => {
  res.writeHead(200, { ...headers, "X-Request-Id": String(++served) });
  res.end(body);
};

const server = http.createServer((_req, res) => {
  const done = work.once();
  if (done instanceof Promise) {
    done.then(
      () => answer(res),
      () => res.writeHead(500).end(),
    );
  } else answer(res);
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address && typeof address === "object") console.log(JSON.stringify({ port: address.port }));
});
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  server.close(() => {
    void Promise.resolve(work.close()).finally(() => process.exit(0));
  });
};
process.once("SIGTERM", stop);
process.stdin.once("end", stop);
process.stdin.resume();
