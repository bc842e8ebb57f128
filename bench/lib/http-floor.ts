import { spawn } from "node:child_process";
import path from "node:path";
import { createDpopProof, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { processCpuTicks } from "./cpu.ts";
import { send } from "./driver.ts";

/**
 * The HTTP floor (bench/README.md, "The HTTP floor"): the floor's work behind a bare node:http server
 * (bench/lib/http-floor-server.ts), called as the benchmark calls getSession: one request at a time over loopback,
 * with an access token and a real DPoP proof in its headers, through the same fetch. What a request costs before any
 * of Atrium's own work: Node's HTTP server, the loopback socket, waking the event loop, and the floor's verification
 * and two statements. On SQLite in-process; on PostgreSQL (`databaseUrl`) through pg, as the server sends statements.
 */
export type HttpFloorServer = {
  pid: number;
  url: string;
  /** CPU of the floor's server process, clock ticks. */
  cpuTicks(): number;
  /** One request, its answer read to the end; throws unless it is a 200. */
  call(): Promise<void>;
  stop(): Promise<void>;
};

export async function startHttpFloorServer(options: { databaseUrl?: string } = {}): Promise<HttpFloorServer> {
  const script = path.join(import.meta.dirname, "http-floor-server.ts");
  const env = { ...process.env, BENCH_FLOOR_DATABASE_URL: options.databaseUrl ?? "" };
  // Standard input is a pipe the server watches: it stops when this process is gone, however it ended.
  const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["pipe", "pipe", "inherit"], env });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((candidate) => candidate.startsWith("{"));
      if (line) resolve((JSON.parse(line) as { port: number }).port);
    });
    void exited.then(() => reject(new Error(`the HTTP floor's server exited before listening: ${output}`)));
  });
  const url = `http://127.0.0.1:${port}/xrpc/com.atproto.server.getSession`;
  const key = await generateDpopKey();
  const accessToken = `tok-${"A".repeat(43)}`;
  const headers = { Authorization: `DPoP ${accessToken}`, DPoP: await createDpopProof(key, { method: "GET", url, nonce: "f0Qb6ZcEAt0uXc1r8ObbZp7NmNEd0XH7M9zzhSkzB1k", accessToken }) };
  const pid = child.pid!;
  return {
    pid,
    url,
    cpuTicks: () => processCpuTicks(pid),
    async call() {
      const result = await send(url, { method: "GET", headers });
      if (result.status !== 200) throw new Error(`the HTTP floor's server answered ${result.status}`);
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}
