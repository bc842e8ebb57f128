import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Sums the self time (and inclusive time) of a V8 .cpuprofile by function,
 * restricted to the load window written next to it by `bench/run.ts
 * --profile` (so start-up and shutdown are left out). Positions in the
 * server build (build/server/: the entry, its chunks, the routes) are mapped
 * back to their sources through the copies of its source maps the profile
 * run saved.
 *
 *   npx tsx bench/profile-summary.ts /tmp/prof/getSession.cpuprofile [--top 15]
 */

const ROOT = path.resolve(import.meta.dirname, "..");
const SERVER_BUILD = path.join(ROOT, "build", "server");

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };
/** The load window on the monotonic clock (µs), and a folder with the source maps of the build the server ran (paths as under build/server). */
export type ProfileWindow = {
  startMicros: number;
  endMicros: number;
  requests: number;
  bundleMaps?: string;
  /** Stretches inside the window that are not the requests counted (bench/repo-commit.ts: its getSession batches). */
  excluded?: { startMicros: number; endMicros: number }[];
};

type Row = { functionName: string; location: string; bucket: string; self: number; total: number };
type Located = { location: string; bucket: string };

function bucketOf(relative: string): string {
  const parts = relative.split(path.sep);
  const index = parts.lastIndexOf("node_modules");
  if (index >= 0) {
    const name = parts[index + 1] ?? "";
    return name.startsWith("@") ? `${name}/${parts[index + 2] ?? ""}` : name;
  }
  return relative;
}

function loadMap(mapFile: string): SourceMap | null {
  return existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, "utf8"))) : null;
}

/** `file:line` (1-based, relative to the project) of a frame, through a source map when there is one. */
function makeLocator(bundleMaps: string | undefined): (frame: CallFrame) => Located {
  const maps = new Map<string, SourceMap | null>();
  const inBuild = (file: string) => !path.relative(SERVER_BUILD, file).startsWith("..");
  const mapOf = (file: string): SourceMap | null => {
    if (!maps.has(file)) maps.set(file, inBuild(file) ? loadMap(`${path.join(bundleMaps ?? SERVER_BUILD, path.relative(SERVER_BUILD, file))}.map`) : null);
    return maps.get(file) ?? null;
  };
  return (frame) => {
    const { url, lineNumber, columnNumber } = frame;
    if (!url) return { location: "", bucket: frame.functionName || "(native)" };
    if (url.startsWith("node:")) return { location: `${url}:${lineNumber + 1}`, bucket: "node: internals" };
    const file = url.startsWith("file://") ? fileURLToPath(url) : url;
    const map = path.isAbsolute(file) ? mapOf(file) : null;
    if (map) {
      const entry = map.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number };
      if (entry.originalSource) {
        const original = entry.originalSource.startsWith("file://") ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(file), entry.originalSource);
        const relative = path.relative(ROOT, original);
        return { location: `${relative}:${(entry.originalLine ?? 0) + 1}`, bucket: bucketOf(relative) };
      }
    }
    const relative = path.isAbsolute(file) ? path.relative(ROOT, file) : file;
    const unmapped = path.isAbsolute(file) && inBuild(file) ? ` (col ${columnNumber + 1}, unmapped)` : "";
    return { location: `${relative}:${lineNumber + 1}${unmapped}`, bucket: bucketOf(relative) };
  };
}

export function summarize(profilePath: string, options: { top?: number; window?: ProfileWindow } = {}): string {
  const profile = JSON.parse(readFileSync(profilePath, "utf8")) as CpuProfile;
  const windowPath = profilePath.replace(/\.cpuprofile$/, ".window.json");
  const window = options.window ?? (existsSync(windowPath) ? (JSON.parse(readFileSync(windowPath, "utf8")) as ProfileWindow) : undefined);
  const top = options.top ?? 15;
  const locate = makeLocator(window?.bundleMaps);

  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }

  const rows = new Map<string, Row>();
  const rowOf = (node: ProfileNode): Row => {
    const frame = node.callFrame;
    const key = `${frame.functionName}@${frame.url}:${frame.lineNumber}:${frame.columnNumber}`;
    let row = rows.get(key);
    if (!row) {
      const { location, bucket } = locate(frame);
      row = { functionName: frame.functionName || "(anonymous)", location, bucket, self: 0, total: 0 };
      rows.set(key, row);
    }
    return row;
  };

  // Sample i happens at startTime + sum(timeDeltas[0..i]) and stands for the time until the next sample.
  const times: number[] = [];
  let clock = profile.startTime;
  for (const delta of profile.timeDeltas) times.push((clock += delta));
  /** Self time with Node internals and natives charged to their nearest caller in a package or app file. */
  const charges = new Map<Row, number>();
  let sampled = 0;
  let idle = 0;
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const at = times[i]!;
    if (window && (at < window.startMicros || at > window.endMicros)) continue;
    if (window?.excluded?.some((span) => at >= span.startMicros && at <= span.endMicros)) continue;
    const duration = (times[i + 1] ?? at) - at;
    sampled += duration;
    const node = byId.get(profile.samples[i]!)!;
    if (node.callFrame.functionName === "(idle)") {
      idle += duration;
      continue;
    }
    busy += duration;
    rowOf(node).self += duration;
    const seen = new Set<Row>();
    let caller: Row | undefined;
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      const row = rowOf(byId.get(id)!);
      if (!caller && frame.url && !frame.url.startsWith("node:")) caller = row;
      if (seen.has(row)) continue;
      seen.add(row);
      row.total += duration;
    }
    const charged = caller ?? rowOf(node);
    charges.set(charged, (charges.get(charged) ?? 0) + duration);
  }

  const requests = window?.requests ?? 1;
  const perRequest = (micros: number) => (micros / requests).toFixed(1).padStart(8);
  const share = (micros: number) => `${((100 * micros) / busy).toFixed(1)}%`.padStart(6);
  const lines: string[] = [];
  lines.push(
    `== ${path.basename(profilePath, ".cpuprofile")}: ${requests} requests in the window; ${(sampled / 1e6).toFixed(2)} s sampled, ` +
      `busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s → ${(busy / requests).toFixed(0)} µs busy (main thread) per request`,
  );
  if (!window) lines.push("   (no .window.json next to the profile: the whole profile, start-up included)");

  const all = [...rows.values()];
  lines.push("", `-- top ${top} by self time    µs/req  share  function  (file:line)`);
  for (const row of all.sort((a, b) => b.self - a.self).slice(0, top)) {
    lines.push(`   ${perRequest(row.self)} ${share(row.self)}  ${row.functionName}  (${row.location || row.bucket})`);
  }

  const buckets = new Map<string, number>();
  for (const row of all) buckets.set(row.bucket, (buckets.get(row.bucket) ?? 0) + row.self);
  lines.push("", `-- self time by package / file  µs/req  share`);
  for (const [bucket, self] of [...buckets].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`   ${perRequest(self)} ${share(self)}  ${bucket}`);

  lines.push("", `-- self time, Node internals charged to their caller  µs/req  share  function  (file:line)`);
  for (const [row, micros] of [...charges].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    lines.push(`   ${perRequest(micros)} ${share(micros)}  ${row.functionName}  (${row.location || row.bucket})`);
  }

  // The same, by package or app file: what each layer costs with the Node work it asks for (middleware that
  // call next() synchronously would claim everything after them in an inclusive view).
  const chargedBuckets = new Map<string, number>();
  for (const [row, micros] of charges) chargedBuckets.set(row.bucket, (chargedBuckets.get(row.bucket) ?? 0) + micros);
  lines.push("", `-- the same by package / file  µs/req  share`);
  for (const [bucket, micros] of [...chargedBuckets].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`   ${perRequest(micros)} ${share(micros)}  ${bucket}`);

  // Express middleware call the next one, so their inclusive time is everything after them: app/ functions only.
  const appRows = all.filter((row) => row.location.startsWith("app/") || row.location.startsWith("build/"));
  lines.push("", `-- app/ by inclusive time       µs/req  share  function  (file:line)`);
  for (const row of appRows.sort((a, b) => b.total - a.total).slice(0, top)) {
    lines.push(`   ${perRequest(row.total)} ${share(row.total)}  ${row.functionName}  (${row.location})`);
  }
  return lines.join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const topIndex = args.indexOf("--top");
  const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 15;
  if (args.length === 0) {
    console.error("usage: tsx bench/profile-summary.ts <file.cpuprofile>... [--top N]");
    process.exit(1);
  }
  for (const file of args) console.log(`${summarize(file, { top })}\n`);
}
