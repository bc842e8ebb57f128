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

/** GitHub's anchor of a heading: lower case, punctuation other than hyphens dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N}\s-]/gu, "")
    .replace(/\s/g, "-");
}

function anchorsOf(document: string): Set<string> {
  const text = readFileSync(path.join(ROOT, document), "utf8").replace(/```[\s\S]*?```/g, "");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

/** Every link with a `#fragment` to a markdown file (or to the same document), as [target document, anchor]. */
function anchorLinks(document: string): Array<[string, string]> {
  const text = readFileSync(path.join(ROOT, document), "utf8");
  return [...text.matchAll(/\]\(([^)\s]*?)#([^)\s]+)\)/g)]
    .filter((match) => match[1] === "" || match[1]!.endsWith(".md"))
    .map((match) => [match[1] === "" ? document : path.normalize(path.join(path.dirname(document), match[1]!)), match[2]!]);
}

describe("links to a section of a document find that section", () => {
  it.each(DOCUMENTS)("%s", (document) => {
    const broken = anchorLinks(document).filter(([target, anchor]) => !existsSync(path.join(ROOT, target)) || !anchorsOf(target).has(anchor));
    expect(broken, `${document} links to sections that do not exist`).toEqual([]);
  });

  it("recognises a section that does not exist (the check can fail)", () => {
    expect(anchorsOf("docs/configuration.md").has(anchorOf("Behind a reverse proxy"))).toBe(true);
    expect(anchorsOf("docs/configuration.md").has("behind-a-reverse-proxies")).toBe(false);
    expect(anchorOf("Backups: what a copy of the database holds")).toBe("backups-what-a-copy-of-the-database-holds");
  });
});

/** The settings the server reads: the environment names in its schema (config/environment.ts). */
const CONFIG_SOURCE = readFileSync(path.join(ROOT, "app/.server/config/environment.ts"), "utf8");
const SETTINGS = new Set([...CONFIG_SOURCE.matchAll(/^\s+((?:ATRIUM_[A-Z0-9_]+)|PORT|HOST|PUBLIC_URL|DATABASE_URL):/gm)].map((match) => match[1]!));
/** The source of the tests and tools, which read variables of their own (ATRIUM_TEST_PHOTOGRAPHS, …). */
const TOOL_SOURCE = ["tests", "scripts", "bench"]
  .flatMap((dir) => readdirSync(path.join(ROOT, dir), { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".ts")).map((name) => path.join(dir, name)))
  .map((file) => readFileSync(path.join(ROOT, file), "utf8"))
  .join("\n");

describe("the settings the documents name are the server's", () => {
  it("every ATRIUM_ variable a document names is read by the server's environment schema, or by a test or a tool", () => {
    const named = new Map<string, string>();
    for (const document of DOCUMENTS) {
      for (const match of readFileSync(path.join(ROOT, document), "utf8").matchAll(/\bATRIUM_[A-Z0-9_]*[A-Z0-9]\b/g)) named.set(match[0], document);
    }
    const unknown = [...named].filter(([name]) => !SETTINGS.has(name) && !TOOL_SOURCE.includes(`process.env.${name}`)).map(([name, document]) => `${name} (${document})`);
    expect(unknown).toEqual([]);
  });

  it("every setting the server reads has a row in docs/configuration.md", () => {
    const rows = readFileSync(path.join(ROOT, "docs/configuration.md"), "utf8");
    expect(SETTINGS.size).toBeGreaterThan(40);
    expect([...SETTINGS].filter((name) => !rows.includes(`| \`${name}\` |`))).toEqual([]);
  });
});

describe("the commands the documents name exist", () => {
  const scripts = Object.keys((JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
  it.each(DOCUMENTS)("%s", (document) => {
    const named = [...readFileSync(path.join(ROOT, document), "utf8").matchAll(/npm run ([a-z][a-z0-9:-]*)/g)].map((match) => match[1]!);
    expect([...new Set(named)].filter((name) => !scripts.includes(name))).toEqual([]);
  });
});

describe("the decisions' index", () => {
  const index = readFileSync(path.join(ROOT, "docs/decisions/README.md"), "utf8");
  const decisions = readdirSync(path.join(ROOT, "docs/decisions")).filter((name) => /^\d{4}[a-z]?-.*\.md$/.test(name));

  it.each(decisions)("lists %s once, with the status its file gives", (file) => {
    const rows = index.split("\n").filter((line) => line.includes(`](${file})`));
    expect(rows).toHaveLength(1);
    const listed = rows[0]!.split("|")[3]!.trim();
    const head = readFileSync(path.join(ROOT, "docs/decisions", file), "utf8").split("\n").slice(1, 8).join(" ");
    const status = /Status: *([a-z]+)/.exec(head)?.[1];
    expect(status, `${file} has no "Status:" line`).toBeDefined();
    expect(listed).toBe(status);
  });

  it("lists no decision that has no file", () => {
    const listed = [...index.matchAll(/\]\((\d{4}[a-z]?-[^)]+\.md)\)/g)].map((match) => match[1]!);
    expect(listed.filter((file) => !decisions.includes(file))).toEqual([]);
  });
});

describe("the README stays short", () => {
  it("is a page a newcomer reads in minutes (at most 250 lines); the rest belongs in docs/", () => {
    expect(readFileSync(path.join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(250);
  });
});
