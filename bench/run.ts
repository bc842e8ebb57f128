import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { codeExchangeCase, createRecordCase, getSessionCase, parCase, refreshCase, userinfoCase, type BenchCase } from "./lib/cases.ts";
import { clockTicksPerSecond } from "./lib/cpu.ts";
import { Driver } from "./lib/driver.ts";
import { measureFloor } from "./lib/floor.ts";
import { CONCURRENCY, runSequential, runThroughput, timedRequest, type Counters } from "./lib/measure.ts";
import { PROJECT_ROOT as ROOT } from "../scripts/lib/server-process.ts";
import { startServer, type BenchServer } from "./lib/server.ts";
import { round } from "./lib/stats.ts";
import { summarize, type ProfileWindow } from "./profile-summary.ts";

/**
 * `npm run bench`: latency, throughput and server CPU per request of the hot
 * OAuth and XRPC paths, against the built server started as in production,
 * compared with a floor measured on this machine in the same run. Writes
 * bench/results/latest.json. A benchmark reports: it never fails on a
 * missed target.
 *
 * `npm run bench -- --profile [--profile-dir /tmp/prof]` instead runs the
 * server under --cpu-prof, once for a getSession loop and once for a
 * refresh loop, and prints where the server's CPU goes.
 */

const RESULTS = path.resolve(import.meta.dirname, "results", "latest.json");
const TARGETS: { name: string; maxFloorMultiple: number }[] = [
  { name: "getSession", maxFloorMultiple: 4 },
  { name: "refresh", maxFloorMultiple: 8 },
];

type CaseResult = { name: string; medianMs: number; p99Ms: number; rps: number; serverCpuMicrosPerRequest: number };

let activeServer: BenchServer | undefined;

async function withServer<T>(options: Parameters<typeof startServer>[0], run: (driver: Driver) => Promise<T>): Promise<T> {
  const server = await startServer(options);
  activeServer = server;
  try {
    return await run(await Driver.create(server));
  } catch (error) {
    console.error(server.output().slice(-2000));
    throw error;
  } finally {
    await server.stop();
    activeServer = undefined;
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row, index) => {
      const line = row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
      return index === 0 ? `${line}\n${"-".repeat(line.length)}` : line;
    })
    .join("\n");
}

async function bench(): Promise<void> {
  const ticksPerSecond = clockTicksPerSecond();
  const started = performance.now();

  console.log("Measuring the floor (ES256 verify + SQLite INSERT + SELECT by key, in-process)…");
  const floorBefore = measureFloor(5000);
  console.log(`  floor: ${floorBefore.cpuMicros.toFixed(1)} µs CPU per iteration`);

  const results = await withServer({}, async (driver) => {
    console.log(`Server pid ${driver.server.pid} at ${driver.issuer}; clock ticks ${ticksPerSecond}/s`);
    const session = await driver.obtainTokens(); // the access token for the resource cases
    const cases: (() => Promise<BenchCase> | BenchCase)[] = [
      () => parCase(driver),
      () => codeExchangeCase(driver),
      () => refreshCase(driver),
      () => userinfoCase(driver, session.access_token),
      () => getSessionCase(driver, session.access_token),
      () => createRecordCase(driver, session.access_token),
    ];
    const out: CaseResult[] = [];
    for (const make of cases) {
      const benchCase = await make();
      const sequential = await runSequential(driver, benchCase, ticksPerSecond);
      const throughput = await runThroughput(driver, benchCase, sequential.medianMs, ticksPerSecond);
      console.log(
        `  ${benchCase.name}: ${sequential.requests} sequential (${sequential.cpuTicks} CPU ticks; per batch ${sequential.batchCpuMicros.map((value) => value.toFixed(0)).join(", ")} µs/req; ${sequential.retries} nonce retries), ` +
          `${throughput.completed} at concurrency ${CONCURRENCY} in ${throughput.seconds.toFixed(1)} s ` +
          `(server CPU there ${throughput.serverCpuMicrosPerRequest.toFixed(0)} µs/req)`,
      );
      out.push({
        name: benchCase.name,
        medianMs: round(sequential.medianMs, 3),
        p99Ms: round(sequential.p99Ms, 3),
        rps: round(throughput.rps, 1),
        serverCpuMicrosPerRequest: round(sequential.serverCpuMicrosPerRequest, 1),
      });
    }
    return out;
  });

  // Measured again after the server runs: on a shared machine the two differ, and the mean brackets the run.
  const floorAfter = measureFloor(5000);
  const floor = { cpuMicros: (floorBefore.cpuMicros + floorAfter.cpuMicros) / 2 };
  console.log(`  floor again: ${floorAfter.cpuMicros.toFixed(1)} µs CPU per iteration; using the mean, ${floor.cpuMicros.toFixed(1)} µs`);

  const report = { floor: { cpuMicros: round(floor.cpuMicros, 1) }, cases: results };
  mkdirSync(path.dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);

  const multiple = (micros: number) => micros / floor.cpuMicros;
  console.log("");
  console.log(
    table([
      ["case", "median ms", "p99 ms", `rps@${CONCURRENCY}`, "server CPU µs/req", "× floor"],
      ...results.map((r) => [
        r.name,
        r.medianMs.toFixed(2),
        r.p99Ms.toFixed(2),
        r.rps.toFixed(0),
        r.serverCpuMicrosPerRequest.toFixed(0),
        multiple(r.serverCpuMicrosPerRequest).toFixed(1),
      ]),
    ]),
  );
  console.log(`\nfloor: ${report.floor.cpuMicros} µs CPU (one ES256 verify + one INSERT + one SELECT by primary key; mean of before and after)`);
  console.log("targets (server CPU per request):");
  for (const target of TARGETS) {
    const result = results.find((r) => r.name === target.name)!;
    const actual = multiple(result.serverCpuMicrosPerRequest);
    const verdict = actual <= target.maxFloorMultiple ? "PASS" : "MISS";
    console.log(`  ${target.name.padEnd(11)} ≤ ${target.maxFloorMultiple}× floor: ${actual.toFixed(1)}× → ${verdict}`);
  }
  console.log(`\nwrote ${path.relative(process.cwd(), RESULTS)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

function sha256File(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** One server under --cpu-prof per case; the load window is recorded on the shared monotonic clock. */
async function profile(dir: string, requests: number): Promise<void> {
  mkdirSync(dir, { recursive: true });
  // The bundle again, with a source map, so that the summary can name app/ files; the map is copied because
  // anything else that builds (npm test) replaces build/.
  const bundle = path.join(ROOT, "build", "server", "index.js");
  console.log("Building the server bundle with a source map (remix vite:build --sourcemapServer)…");
  execFileSync(path.join(ROOT, "node_modules", ".bin", "remix"), ["vite:build", "--sourcemapServer"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const bundleMap = path.join(dir, "bundle.index.js.map");
  copyFileSync(`${bundle}.map`, bundleMap);
  const bundleHash = sha256File(bundle);
  const plans: { name: string; make: (driver: Driver) => Promise<BenchCase> }[] = [
    { name: "getSession", make: async (driver) => getSessionCase(driver, (await driver.obtainTokens()).access_token) },
    { name: "refresh", make: (driver) => refreshCase(driver) },
  ];
  for (const plan of plans) {
    // No --cpu-prof-name: tsx's module-hooks worker thread writes a profile too, and must not overwrite the main thread's.
    const caseDir = path.join(dir, plan.name);
    rmSync(caseDir, { recursive: true, force: true });
    const flags = ["--cpu-prof", `--cpu-prof-dir=${caseDir}`, "--cpu-prof-interval=200"];
    const window = await withServer({ nodeFlags: flags }, async (driver): Promise<ProfileWindow> => {
      if (sha256File(bundle) !== bundleHash) console.warn("  warning: build/server/index.js changed while profiling started; app/ locations may be off");
      const benchCase = await plan.make(driver);
      const counters: Counters = { requests: 0, retries: 0 };
      for (const item of await benchCase.prepare(2000)) await timedRequest(driver, benchCase, item, 0, counters);
      counters.requests = 0;
      // Proofs are signed in chunks (they must be under a minute old); the server idles meanwhile, which the summary leaves out.
      const startMicros = Number(process.hrtime.bigint() / 1000n);
      for (let done = 0; done < requests; done += 500) {
        for (const item of await benchCase.prepare(Math.min(500, requests - done))) await timedRequest(driver, benchCase, item, 0, counters);
      }
      const endMicros = Number(process.hrtime.bigint() / 1000n);
      console.log(`  ${plan.name}: ${counters.requests} requests profiled in ${((endMicros - startMicros) / 1e6).toFixed(1)} s`);
      return { startMicros, endMicros, requests: counters.requests, bundleMap };
    });
    // Profiles are written when the server exits (SIGTERM → process.exit), i.e. by now; the main thread's is CPU.<date>.<time>.<pid>.0.<seq>.
    const main = readdirSync(caseDir).find((file) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(file));
    if (!main) throw new Error(`no main-thread profile in ${caseDir}: ${readdirSync(caseDir).join(", ")}`);
    renameSync(path.join(caseDir, main), path.join(dir, `${plan.name}.cpuprofile`));
    rmSync(caseDir, { recursive: true, force: true });
    writeFileSync(path.join(dir, `${plan.name}.window.json`), `${JSON.stringify(window)}\n`);
    console.log(`\n${summarize(path.join(dir, `${plan.name}.cpuprofile`), { window, top: 15 })}\n`);
  }
}

const { values } = parseArgs({
  options: {
    profile: { type: "boolean", default: false },
    "profile-dir": { type: "string", default: "/tmp/prof" },
    "profile-requests": { type: "string", default: "2000" },
  },
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void (activeServer?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

if (values.profile) await profile(path.resolve(values["profile-dir"]), Number(values["profile-requests"]));
else await bench();
