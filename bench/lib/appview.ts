import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * The service a proxied call reaches in the benchmark (docs/decisions/0048): an app view on 127.0.0.1 that answers
 * every /xrpc call at once with a small JSON body, and serves its own did:web document naming itself as
 * `#bsky_appview`. It runs in the benchmark's process, so its CPU is not the server's: what the proxy case measures is
 * Atrium's own cost of a proxied call (the token, the DID document from the cache, the call, passing the answer on).
 */
export type BenchAppview = { did: string; service: string; calls: number; stop(): Promise<void> };

const ANSWER = JSON.stringify({ subject: { did: "did:plc:benchbenchbenchbenchbench", handle: "bench.test" }, follows: [], cursor: "3l5q5s2qzbk2a" });

export async function startBenchAppview(): Promise<BenchAppview> {
  const appview = { calls: 0 } as BenchAppview;
  let document = "";
  const server = http.createServer((request, response) => {
    if (request.url === "/.well-known/did.json") {
      response.writeHead(200, { "content-type": "application/json" }).end(document);
      return;
    }
    appview.calls += 1;
    request.resume();
    response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(ANSWER) }).end(ANSWER);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  appview.did = `did:web:127.0.0.1%3A${port}`;
  appview.service = `${appview.did}#bsky_appview`;
  document = JSON.stringify({ id: appview.did, service: [{ id: "#bsky_appview", type: "BskyAppView", serviceEndpoint: `http://127.0.0.1:${port}` }] });
  appview.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return appview;
}
