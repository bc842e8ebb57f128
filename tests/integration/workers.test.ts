import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice, newClient, obtainTokens } from "../helpers/flow.ts";
import { scrape, valueOf } from "../helpers/prometheus.ts";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * ATRIUM_WORKERS (docs/decisions/0021): one primary and N worker processes
 * sharing the port, on SQLite (one file, WAL) in the sqlite project and on
 * PostgreSQL in the postgresql project. The workers must serve as one server:
 * a flow spread over them works, a dead worker is replaced without losing what
 * was acknowledged, metrics add up, and SIGTERM stops them all.
 */

/** The worker processes of a primary: its children, as Linux lists them. */
function workerPids(primary: number): number[] {
  const children = readFileSync(`/proc/${primary}/task/${primary}/children`, "utf8").trim();
  return children === "" ? [] : children.split(/\s+/).map(Number);
}

/** The pids that logged a request line (pino writes the pid in every line). */
function pidsThatServed(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split("\n")) {
    if (line.includes('"msg":"request"')) pids.add((JSON.parse(line) as { pid: number }).pid);
  }
  return pids;
}

/** The pids of the workers that printed their start-up line, in order. */
function listeningWorkers(output: string): number[] {
  return output
    .split("\n")
    .filter((line) => line.includes('"msg":"Worker process listening"'))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);
}

/**
 * Waits for a worker other than `known` to print its start-up line (the primary forks it, then it listens: the
 * events, not a poll of the process table at intervals; docs/decisions/0036); its pid.
 */
async function newWorkerListening(server: TestServer, known: number[]): Promise<number> {
  const isNew = (pid: number) => !known.includes(pid);
  const output = await server.printed((printed) => listeningWorkers(printed).some(isNew));
  return listeningWorkers(output).find(isNew)!;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("ATRIUM_WORKERS=2: two worker processes behind one port", () => {
  let server: TestServer;
  let metricsPort: number;

  beforeAll(async () => {
    metricsPort = await freePort();
    server = await startTestServer({ ATRIUM_WORKERS: "2", ATRIUM_METRICS_PORT: String(metricsPort), ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "100000" });
    await createAlice(server);
  });
  afterAll(() => server?.stop());

  /** The primary's lines about dead workers, in order. */
  const deaths = () => server.output().split("\n").filter((line) => line.includes("A worker process ended unexpectedly"));

  it("starts two workers under the primary, and both serve requests of one flow", async () => {
    expect(workerPids(server.pid)).toHaveLength(2);
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const answers = await Promise.all(Array.from({ length: 40 }, () => client.userinfo(tokens.access_token)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const served = pidsThatServed(server.output());
    expect(served.size).toBe(2);
    expect([...served].sort()).toEqual(workerPids(server.pid).sort());
  });

  it("sums the workers' metrics on the primary's metrics port", async () => {
    const samples = await scrape(metricsPort);
    const userinfo = valueOf(samples, "atrium_http_requests_total", { route: "/oauth/userinfo", method: "GET", status: "200" });
    // 40 answered above, by two processes: only a sum over both reaches 40.
    expect(userinfo).toBeGreaterThanOrEqual(40);
  });

  it("replaces a worker killed with SIGKILL; what was acknowledged before stays valid", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const [victim, survivor] = workerPids(server.pid);
    const started = listeningWorkers(server.output());
    process.kill(victim!, "SIGKILL");
    // Once the replacement listens too (its start-up line), every request is answered again.
    const replacement = await newWorkerListening(server, started);
    expect(workerPids(server.pid).sort()).toEqual([replacement, survivor!].sort());
    expect(isRunning(survivor!)).toBe(true);
    const answers = await Promise.all(Array.from({ length: 20 }, () => client.userinfo(tokens.access_token)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    // The death is readable: which worker, killed by which signal (no exit code then), said once each and unmasked.
    const death = server.output().split("\n").find((line) => line.includes("A worker process ended unexpectedly"));
    expect(death).toBeDefined();
    expect(death).not.toContain("[redacted]");
    expect(death!.match(/"pid":/g)).toHaveLength(1);
    expect(JSON.parse(death!)).toMatchObject({ level: "error", pid: server.pid, workerPid: victim, exitCode: null, signal: "SIGKILL" });
  });

  it("logs the exit code of a worker that exits by itself (SIGTERM to it alone: it finishes and exits 0)", { timeout: 90_000 }, async () => {
    const deathsBefore = deaths().length;
    const started = listeningWorkers(server.output());
    const [leaving, staying] = workerPids(server.pid);
    process.kill(leaving!, "SIGTERM");
    await server.printed(() => deaths().length > deathsBefore);
    const death = deaths()[deathsBefore]!;
    expect(death).not.toContain("[redacted]");
    expect(JSON.parse(death)).toMatchObject({ pid: server.pid, workerPid: leaving, exitCode: 0, signal: null });
    // Its replacement (started after a crash-loop delay) listens before the next test stops them all.
    const replacement = await newWorkerListening(server, started);
    expect(workerPids(server.pid).sort()).toEqual([replacement, staying!].sort());
  });

  it("SIGTERM to the primary stops every worker, and the primary exits", async () => {
    const workers = workerPids(server.pid);
    expect(workers).toHaveLength(2);
    process.kill(server.pid, "SIGTERM");
    // The primary exits once every worker has (server/workers.ts): its exit is the event, and then none is left.
    await server.exited();
    expect(workers.filter(isRunning)).toEqual([]);
  });
});
