/**
 * The documents name files that exist: every repository path in docs/ and the READMEs (in `code` or as a link target)
 * must name a file or folder that is there, so a move or a deletion cannot leave the map of the code wrong.
 *
 * A span is taken for a path when it has a slash and its first segment is a file or folder of the repository, either at
 * its root or under one of the folders the documents write paths relative to (docs/architecture.md names files
 * under app/.server/ by their path there, e.g. `stores/sql-grant-store.ts`). Placeholders (`<name>`, `…`) and globs
 * are allowed: a glob must match at least one file; a module may be named without its extension, an ADR by its
 * number (`docs/decisions/0006`). What the build, the server and the benchmarks write (build/, data/, bench/results/)
 * is not in a clone and is left alone, as are URLs, URL paths (`/oauth/par`), MIME types and package names.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
/** Where the documents' relative paths start: the root, then the folders the architecture map writes paths under. */
const BASES = ["", "app/.server", "app/.server/oauth", "app", "docs", "docs/decisions"];

function markdownFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md"))
    .map((name) => path.join(dir, name));
}

const DOCUMENTS = [...markdownFiles("docs"), "README.md", "bench/README.md"];
const GENERATED = ["build/", "data/", "bench/results/", "test-results/"];
const EXTENSIONS = ["", ".ts", ".tsx", ".md"];

/** The `code` spans and link targets of a markdown text that could be repository paths. */
function candidates(text: string): string[] {
  const spans = [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!.replace(/#.*$/, ""));
  return [...spans, ...links]
    .map((span) => span.replace(/[.,;:]+$/, ""))
    .filter((span) => span.includes("/") && !/[\s:=?@"'{}()]/.test(span) && !span.startsWith("/") && !span.startsWith("."));
}

/** A path with its placeholders (`<name>`, `…`) and globs as a regular expression over the repository's files. */
function pattern(candidate: string): RegExp {
  const source = candidate
    .replace(/\/$/, "")
    .split(/(<[^>]*>|…|\*)/)
    .map((part, index) => (index % 2 ? "[^/]*" : part.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

const filesUnder = new Map<string, string[]>();
function listing(base: string): string[] {
  let files = filesUnder.get(base);
  if (!files) {
    const dir = path.join(ROOT, base);
    files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) => !name.startsWith("node_modules") && !name.startsWith("build/") && !name.includes(".git/"));
    filesUnder.set(base, files);
  }
  return files;
}

/** Whether `candidate` names something that exists under some base; undefined when it is not a repository path at all. */
function exists(candidate: string): boolean | undefined {
  if (GENERATED.some((prefix) => candidate.startsWith(prefix))) return undefined;
  if (/^docs\/decisions\/\d{4}[a-z]?$/.test(candidate)) return exists(`${candidate}-*.md`);
  const first = candidate.split("/")[0]!;
  const bases = BASES.filter((base) => first !== "" && !/[<*…]/.test(first) && existsSync(path.join(ROOT, base, first)));
  if (bases.length === 0) return undefined;
  return bases.some((base) => {
    if (!/[<*…]/.test(candidate)) return EXTENSIONS.some((extension) => existsSync(path.join(ROOT, base, candidate + extension)));
    const wanted = pattern(candidate);
    return listing(base).some((file) => wanted.test(file));
  });
}

describe("paths named in the documents exist", () => {
  it.each(DOCUMENTS)("%s", (document) => {
    const missing = [...new Set(candidates(readFileSync(path.join(ROOT, document), "utf8")))].filter((candidate) => exists(candidate) === false);
    expect(missing, `${document} names paths that do not exist`).toEqual([]);
  });

  it("recognises a path that does not exist (the check can fail)", () => {
    expect(exists("app/.server/stores/sql-grant-store.ts")).toBe(true);
    expect(exists("stores/sql-grant-store.ts")).toBe(true);
    expect(exists("stores/sqlite-grant-store.ts")).toBe(false);
    expect(exists("prisma/migrations/<timestamp>_<name>/migration.sql")).toBe(true);
    expect(exists("app/.server/stores/sqlite-*.ts")).toBe(false);
    expect(exists("application/json")).toBeUndefined();
    expect(exists("docs/decisions/0017")).toBe(true);
    expect(exists("docs/decisions/0099")).toBe(false);
  });
});
