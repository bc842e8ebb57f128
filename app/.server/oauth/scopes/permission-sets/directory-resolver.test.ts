import { mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { IncludeScope } from "@atproto/oauth-scopes";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DirectoryPermissionSetResolver } from "./directory-resolver.ts";
import { permissionSetFromLexicon } from "./lexicon-document.ts";
import { PermissionSetResolutionError } from "./permission-set-resolver.ts";

const NSID = "com.example.calendar.authFull";

function lexicon(id: string, main: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    lexicon: 1,
    id,
    defs: {
      main: {
        type: "permission-set",
        title: "Full calendar access",
        "title:lang": { de: "Voller Kalenderzugriff" },
        detail: "Create, edit and delete events.",
        permissions: [
          { type: "permission", resource: "repo", collection: ["com.example.calendar.event", "com.example.calendar.rsvp"] },
          { type: "permission", resource: "rpc", lxm: ["com.example.calendar.getEvents"], inheritAud: true },
        ],
        ...main,
      },
    },
  };
}

async function rejection(promise: Promise<unknown>): Promise<PermissionSetResolutionError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PermissionSetResolutionError);
    return error as PermissionSetResolutionError;
  }
  throw new Error("expected the promise to reject");
}

describe("DirectoryPermissionSetResolver", () => {
  let dir: string;
  const write = (name: string, content: unknown) =>
    writeFileSync(path.join(dir, name), typeof content === "string" ? content : JSON.stringify(content, null, 2));

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-permission-sets-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("resolves a lexicon by its id, whatever the file is called, and the result expands", async () => {
    write("calendar.json", lexicon(NSID));
    write("notes.txt", "not a lexicon, not a .json file");
    const resolver = new DirectoryPermissionSetResolver(dir);

    const set = await resolver.resolve(NSID);
    expect(set).toEqual({
      type: "permission-set",
      title: "Full calendar access",
      "title:lang": { de: "Voller Kalenderzugriff" },
      detail: "Create, edit and delete events.",
      permissions: [
        { type: "permission", resource: "repo", collection: ["com.example.calendar.event", "com.example.calendar.rsvp"] },
        { type: "permission", resource: "rpc", lxm: ["com.example.calendar.getEvents"], inheritAud: true },
      ],
    });
    const include = IncludeScope.fromString(`include:${NSID}?aud=did:web:api.example.com%23calendar`)!;
    expect(include.toScopes(set)).toEqual([
      "repo?collection=com.example.calendar.event&collection=com.example.calendar.rsvp",
      "rpc:com.example.calendar.getEvents?aud=did:web:api.example.com%23calendar",
    ]);
  });

  it("resolves a file named after its NSID", async () => {
    write(`${NSID}.json`, lexicon(NSID));
    expect((await new DirectoryPermissionSetResolver(dir).resolve(NSID)).permissions).toHaveLength(2);
  });

  it("refuses an unknown NSID and an invalid one", async () => {
    write("calendar.json", lexicon(NSID));
    const resolver = new DirectoryPermissionSetResolver(dir);
    const unknown = await rejection(resolver.resolve("com.example.other.thing"));
    expect(unknown.nsid).toBe("com.example.other.thing");
    expect(unknown.message).toMatch(/Unknown permission set com\.example\.other\.thing/);
    expect((await rejection(resolver.resolve("not an nsid"))).message).toMatch(/not a valid NSID/);
  });

  it("refuses a malformed document with a message naming the file and the problem", async () => {
    write("calendar.json", lexicon(NSID, { type: "query" }));
    write("broken.json", "{ not json");
    write("tasks.json", lexicon("com.example.tasks.all", { permissions: "everything" }));
    const resolver = new DirectoryPermissionSetResolver(dir);

    const notASet = await rejection(resolver.resolve(NSID));
    expect(notASet.message).toMatch(/calendar\.json is unusable/);
    expect(notASet.message).toMatch(/defs\.main\.type/);

    const badPermissions = await rejection(resolver.resolve("com.example.tasks.all"));
    expect(badPermissions.message).toMatch(/tasks\.json is unusable.*defs\.main\.permissions/);

    const unknown = await rejection(resolver.resolve("com.example.notes.all"));
    expect(unknown.message).toMatch(/broken\.json \(not valid JSON\)/);
  });

  it("refuses a file whose name is an NSID other than its id", async () => {
    write("com.example.calendar.read.json", lexicon(NSID));
    const resolver = new DirectoryPermissionSetResolver(dir);
    const byName = await rejection(resolver.resolve("com.example.calendar.read"));
    expect(byName.message).toMatch(/named com\.example\.calendar\.read\.json but declares the lexicon id com\.example\.calendar\.authFull/);
    const byId = await rejection(resolver.resolve(NSID));
    expect(byId.message).toMatch(/Unknown permission set.*com\.example\.calendar\.read\.json/);
  });

  it("refuses an NSID defined by two files", async () => {
    write("a.json", lexicon(NSID));
    write("b.json", lexicon(NSID));
    expect((await rejection(new DirectoryPermissionSetResolver(dir).resolve(NSID))).message).toMatch(/more than one file.*a\.json, b\.json/);
  });

  it("refuses more than 100 permissions", async () => {
    const permissions = Array.from({ length: 101 }, (_, i) => ({ type: "permission", resource: "repo", collection: [`com.example.calendar.c${i}`] }));
    write("calendar.json", lexicon(NSID, { permissions }));
    expect((await rejection(new DirectoryPermissionSetResolver(dir).resolve(NSID))).message).toMatch(/at most 100 permissions/);
  });

  it("picks up changed, added and removed files", async () => {
    write("calendar.json", lexicon(NSID, { title: "First" }));
    const resolver = new DirectoryPermissionSetResolver(dir);
    expect((await resolver.resolve(NSID)).title).toBe("First");

    write("calendar.json", lexicon(NSID, { title: "Second title" }));
    const later = new Date(Date.now() + 5_000);
    utimesSync(path.join(dir, "calendar.json"), later, later);
    expect((await resolver.resolve(NSID)).title).toBe("Second title");

    write("tasks.json", lexicon("com.example.tasks.all"));
    expect((await resolver.resolve("com.example.tasks.all")).type).toBe("permission-set");

    unlinkSync(path.join(dir, "calendar.json"));
    expect((await rejection(resolver.resolve(NSID))).message).toMatch(/Unknown permission set/);
  });

  it("reports a missing directory", async () => {
    const resolver = new DirectoryPermissionSetResolver(path.join(dir, "missing"));
    expect((await rejection(resolver.resolve(NSID))).message).toMatch(/Cannot read the permission-set directory/);
  });
});

describe("permissionSetFromLexicon", () => {
  it("requires the id to be the NSID asked for", () => {
    expect(() => permissionSetFromLexicon("com.example.calendar.read", lexicon(NSID))).toThrow(
      /com\.example\.calendar\.read has id "com\.example\.calendar\.authFull"/,
    );
  });

  it.each([
    ["not an object", "lexicon"],
    ["lexicon version 2", { ...lexicon(NSID), lexicon: 2 }],
    ["no main definition", { lexicon: 1, id: NSID, defs: {} }],
    ["a permission without resource", lexicon(NSID, { permissions: [{ type: "permission" }] })],
    ["a permission of another type", lexicon(NSID, { permissions: [{ type: "token", resource: "repo" }] })],
    ["a parameter that is an object", lexicon(NSID, { permissions: [{ type: "permission", resource: "repo", collection: { a: 1 } }] })],
    ["a title that is not a string", lexicon(NSID, { title: 3 })],
  ])("refuses %s", (_, document) => {
    expect(() => permissionSetFromLexicon(NSID, document)).toThrow(PermissionSetResolutionError);
  });

  it("keeps only the permission-set fields of main and accepts other definitions", () => {
    const document: Record<string, unknown> = { ...lexicon(NSID, { description: "ignored" }), $type: "com.atproto.lexicon.schema", revision: 2 };
    (document.defs as Record<string, unknown>).other = { type: "string" };
    const set = permissionSetFromLexicon(NSID, document);
    expect(Object.keys(set).sort()).toEqual(["detail", "permissions", "title", "title:lang", "type"]);
  });
});

describe("permissionSetFromLexicon: the publisher's text", () => {
  it("loses bidi and control characters before anyone sees it (title, detail and their translations)", () => {
    const set = permissionSetFromLexicon(
      NSID,
      lexicon(NSID, {
        title: "Read \u202eetirw\u202c posts\u0007",
        "title:lang": { de: "Beiträge \u2067lesen\u2069" },
        detail: "Only \u200fthis\u200e.\u0000",
        "detail:lang": { fr: "\u202a" },
      }),
    );
    expect(set.title).toBe("Read etirw posts");
    expect(set["title:lang"]).toEqual({ de: "Beiträge lesen" });
    expect(set.detail).toBe("Only this.");
    // A translation that was nothing but hidden characters is no translation.
    expect(set["detail:lang"]).toEqual({});
  });
});
