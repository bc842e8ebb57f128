import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { isNsid, type LexiconPermissionSet } from "@atproto/oauth-scopes";
import { lexiconDocumentId, permissionSetFromLexicon } from "./lexicon-document.ts";
import { PermissionSetResolutionError, type PermissionSetResolver } from "./permission-set-resolver.ts";

/** Largest lexicon file read from the directory. */
const MAX_FILE_BYTES = 1024 * 1024;
/** How many unreadable files an "unknown permission set" message names. */
const MAX_NAMED_PROBLEMS = 5;

type FileEntry = {
  mtimeMs: number;
  size: number;
  /** The lexicon id the file declares (also set for documents that fail validation, when they have a string id). */
  id?: string;
  /** Set when the file is usable. */
  permissionSet?: LexiconPermissionSet;
  /** Why the file is not usable. */
  problem?: string;
};

/**
 * Permission sets from a directory of lexicon documents (`*.json`, one
 * lexicon per file, for offline and private deployments). Files are indexed
 * by the `id` inside them; a file whose name (without `.json`) is itself an
 * NSID must declare that NSID as its id. The directory is read on first use
 * and then re-checked on every resolve: a file is parsed again only when its
 * modification time or size changed, and removed files drop out.
 */
export class DirectoryPermissionSetResolver implements PermissionSetResolver {
  private readonly files = new Map<string, FileEntry>();
  private scanning: Promise<void> | undefined;

  constructor(private readonly dir: string) {}

  async resolve(nsid: string): Promise<LexiconPermissionSet> {
    if (!isNsid(nsid)) throw new PermissionSetResolutionError(nsid, `${JSON.stringify(nsid)} is not a valid NSID`);
    await this.refresh(nsid);

    const matches = [...this.files.entries()].filter(([, entry]) => entry.id === nsid);
    if (matches.length > 1) {
      // Sorted: files load concurrently, so the map's order is whichever finished first.
      const names = matches.map(([name]) => name).sort().join(", ");
      throw new PermissionSetResolutionError(nsid, `The permission set ${nsid} is defined by more than one file in ${this.dir}: ${names}`);
    }
    const match = matches[0];
    if (match) {
      const [name, entry] = match;
      if (entry.permissionSet) return entry.permissionSet;
      throw new PermissionSetResolutionError(nsid, `The permission set ${nsid} in ${path.join(this.dir, name)} is unusable: ${entry.problem}`);
    }

    // A broken file named after the NSID is the likely culprit.
    const named = this.files.get(`${nsid}.json`);
    if (named?.problem) {
      throw new PermissionSetResolutionError(nsid, `The permission set ${nsid} in ${path.join(this.dir, `${nsid}.json`)} is unusable: ${named.problem}`);
    }
    const unreadable = [...this.files.entries()].filter(([, entry]) => entry.id === undefined && entry.problem);
    let message = `Unknown permission set ${nsid}: no lexicon with that id in ${this.dir}`;
    if (unreadable.length > 0) {
      const listed = unreadable.slice(0, MAX_NAMED_PROBLEMS).map(([name, entry]) => `${name} (${entry.problem})`);
      if (unreadable.length > MAX_NAMED_PROBLEMS) listed.push(`${unreadable.length - MAX_NAMED_PROBLEMS} more`);
      message += `; unreadable files: ${listed.join(", ")}`;
    }
    throw new PermissionSetResolutionError(nsid, message);
  }

  /** One scan at a time; concurrent resolves share it. */
  private async refresh(nsid: string): Promise<void> {
    this.scanning ??= this.scan().finally(() => {
      this.scanning = undefined;
    });
    try {
      await this.scanning;
    } catch (error) {
      throw new PermissionSetResolutionError(nsid, `Cannot read the permission-set directory ${this.dir}: ${describe(error)}`, {
        cause: error,
      });
    }
  }

  private async scan(): Promise<void> {
    const names = (await readdir(this.dir, { withFileTypes: true }))
      .filter((entry) => entry.name.endsWith(".json") && !entry.name.startsWith(".") && (entry.isFile() || entry.isSymbolicLink()))
      .map((entry) => entry.name);
    const present = new Set(names);
    for (const name of this.files.keys()) if (!present.has(name)) this.files.delete(name);

    await Promise.all(
      names.map(async (name) => {
        const file = path.join(this.dir, name);
        let info;
        try {
          info = await stat(file);
        } catch (error) {
          this.files.delete(name); // removed between readdir and stat
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
          return;
        }
        if (!info.isFile()) {
          this.files.delete(name);
          return;
        }
        const known = this.files.get(name);
        if (known && known.mtimeMs === info.mtimeMs && known.size === info.size) return;
        this.files.set(name, await loadFile(file, name, info.mtimeMs, info.size));
      }),
    );
  }
}

async function loadFile(file: string, name: string, mtimeMs: number, size: number): Promise<FileEntry> {
  const entry: FileEntry = { mtimeMs, size };
  if (size > MAX_FILE_BYTES) return { ...entry, problem: `larger than ${MAX_FILE_BYTES} bytes` };
  let document: unknown;
  try {
    document = JSON.parse(await readFile(file, "utf8"));
  } catch (error) {
    return { ...entry, problem: error instanceof SyntaxError ? "not valid JSON" : describe(error) };
  }
  const id = lexiconDocumentId(document);
  if (id === undefined) return { ...entry, problem: "no string id" };
  const stem = name.slice(0, -".json".length);
  if (isNsid(stem) && stem !== id) {
    // Indexed under neither name: resolving the file's name finds this problem, and the declared id may still be
    // served by a correctly named file.
    return { ...entry, problem: `the file is named ${name} but declares the lexicon id ${id}` };
  }
  try {
    return { ...entry, id, permissionSet: permissionSetFromLexicon(id, document) };
  } catch (error) {
    return { ...entry, id, problem: describe(error) };
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
