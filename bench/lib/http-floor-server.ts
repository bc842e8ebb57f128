import http from "node:http";
import { CORS_HEADERS, HARDENING_HEADERS } from "../../server/security-headers.ts";
import { sqliteFloorWork } from "./floor.ts";

/**
 * The HTTP floor's server (bench/http-floor.ts): a plain node:http server that answers every request with the
 * floor's work (sqliteFloorWork: one ES256 verification, one INSERT, one SELECT) and a small JSON body with the
 * headers Atrium's API answers carry. Nothing else: no routing, limits, logging or parsing of what was sent. Prints
 * `{"port":…}` once it listens on a free loopback port; stops on SIGTERM.
 */
const work = sqliteFloorWork();
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

const server = http.createServer((_req, res) => {
  work.once();
  res.writeHead(200, { ...headers, "X-Request-Id": String(++served) });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address && typeof address === "object") console.log(JSON.stringify({ port: address.port }));
});
process.once("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => {
    work.close();
    process.exit(0);
  });
});
