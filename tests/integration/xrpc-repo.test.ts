/**
 * com.atproto.repo.* on the data server: granular repo: permissions (docs/architecture.md, "Scopes and the data server"),
 * transition:generic, ownership, conflicts, public reads and input checks.
 */
import { TID } from "@atproto/common-web";
import { cidForLex } from "@atproto/lex-cbor";
import { jsonToLex } from "@atproto/lex-json";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HttpResult } from "../../scripts/lib/dpop-client.ts";
import { createAlice } from "../helpers/flow.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import {
  call,
  callAnonymous,
  callRaw,
  expectInsufficientScope,
  expectXrpcError,
  tokensForScopes,
  type ScopedToken,
  type XrpcErrorBody,
} from "../helpers/xrpc.ts";

const POST = "app.bsky.feed.post";
const LIKE = "app.bsky.feed.like";
const need = (collection: string, action: "create" | "update" | "delete") => `repo:${collection}?action=${action}`;

type WriteResult = { uri: string; cid: string; validationStatus?: string };
type RecordView = { uri: string; cid: string; value: Record<string, unknown> };
type ListResult = { records: RecordView[]; cursor?: string };

let server: TestServer;
let alice: { did: string; handle: string };
let bob: { did: string; handle: string };
const t = {} as Record<"atproto" | "create" | "update" | "createUpdate" | "delete" | "allPost" | "generic", ScopedToken>;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  bob = await createAccount(server, { handle: "bob.test", email: "bob@example.com", password: "another horse battery" });
  const scopes = {
    atproto: "atproto",
    create: `atproto ${need(POST, "create")}`,
    update: `atproto ${need(POST, "update")}`,
    createUpdate: `atproto repo:${POST}?action=create&action=update`,
    delete: `atproto ${need(POST, "delete")}`,
    allPost: `atproto repo:${POST}`,
    generic: "atproto transition:generic",
  } as const;
  Object.assign(t, await tokensForScopes(server, scopes));
});
afterAll(() => server?.stop());

/** A fresh record key: a TID, the key type posts and likes have in their lexicons (docs/decisions/0049). */
const freshKey = () => TID.nextStr();

const post = (text: string) => ({ text, createdAt: new Date().toISOString() });
/** A like of one of alice's posts, valid for app.bsky.feed.like (the subject's CID need not be one of hers). */
const like = (postKey = freshKey()) => ({
  subject: { uri: `at://${alice.did}/${POST}/${postKey}`, cid: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" },
  createdAt: new Date().toISOString(),
});

function create(token: ScopedToken, input: { collection?: string; rkey?: string; record?: unknown; repo?: string }) {
  return call<WriteResult>(token, "com.atproto.repo.createRecord", {
    json: { repo: input.repo ?? alice.did, collection: input.collection ?? POST, rkey: input.rkey, record: input.record ?? post("hello") },
  });
}

function put(token: ScopedToken, input: { collection?: string; rkey: string; record?: unknown; repo?: string; swapRecord?: string | null }) {
  return call<WriteResult>(token, "com.atproto.repo.putRecord", {
    json: {
      repo: input.repo ?? alice.did,
      collection: input.collection ?? POST,
      rkey: input.rkey,
      record: input.record ?? post("put"),
      ...(input.swapRecord !== undefined ? { swapRecord: input.swapRecord } : {}),
    },
  });
}

function del(token: ScopedToken, input: { collection?: string; rkey: string; repo?: string }) {
  return call(token, "com.atproto.repo.deleteRecord", {
    json: { repo: input.repo ?? alice.did, collection: input.collection ?? POST, rkey: input.rkey },
  });
}

function applyWrites(token: ScopedToken, writes: unknown[], repo = alice.did) {
  return call<{ results: Record<string, unknown>[] }>(token, "com.atproto.repo.applyWrites", { json: { repo, writes } });
}

function getRecord(collection: string, rkey: string, repo = alice.did) {
  return callAnonymous<RecordView | XrpcErrorBody>(server, "com.atproto.repo.getRecord", { params: { repo, collection, rkey } });
}

function listRecords(collection: string, params: Record<string, string> = {}, repo = alice.did) {
  return callAnonymous<ListResult>(server, "com.atproto.repo.listRecords", { params: { repo, collection, ...params } });
}

async function expectStored(collection: string, rkey: string, text?: string): Promise<RecordView> {
  const result = await getRecord(collection, rkey);
  expect(result.status).toBe(200);
  const view = result.body as RecordView;
  expect(view.uri).toBe(`at://${alice.did}/${collection}/${rkey}`);
  if (text !== undefined) expect(view.value.text).toBe(text);
  return view;
}

async function expectAbsent(collection: string, rkey: string, repo = alice.did): Promise<void> {
  expectXrpcError(await getRecord(collection, rkey, repo), 400, "RecordNotFound");
}

/** Every rkey of a collection, through listRecords pages. */
async function allKeys(collection: string, repo = alice.did): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const result = await listRecords(collection, { limit: "100", ...(cursor ? { cursor } : {}) }, repo);
    expect(result.status).toBe(200);
    keys.push(...result.body.records.map((record) => record.uri.split("/").pop()!));
    cursor = result.body.cursor;
    if (!cursor) break;
  }
  return keys;
}

function expectWritten(result: HttpResult<WriteResult>, collection: string, rkey?: string) {
  expect(result.status).toBe(200);
  if (rkey) expect(result.body.uri).toBe(`at://${alice.did}/${collection}/${rkey}`);
  else expect(result.body.uri).toMatch(new RegExp(`^at://${alice.did}/${collection.replace(/\./g, "\\.")}/[A-Za-z0-9._:~-]+$`));
  // CIDv1, dag-cbor (0x71), sha2-256: "bafyrei…" in base32.
  expect(result.body.cid).toMatch(/^bafyrei[a-z2-7]{52}$/);
}

describe("com.atproto.repo.createRecord: repo:<collection>?action=create", () => {
  it("is allowed with the precise permission, and the record is stored with its $type", async () => {
    const rkey = freshKey();
    const result = await create(t.create, { rkey, record: post("precise") });
    expectWritten(result, POST, rkey);
    const view = await expectStored(POST, rkey, "precise");
    expect(view.value.$type).toBe(POST);
    expect(view.cid).toBe(result.body.cid);
    // The atproto data model's CID of the record: its DAG-CBOR block's, as the reference libraries compute it.
    expect(view.cid).toBe((await cidForLex(jsonToLex(view.value as never))).toString());
  });

  it("is allowed with repo:<collection> (every action) and with transition:generic", async () => {
    const a = freshKey();
    expectWritten(await create(t.allPost, { rkey: a, record: post("all actions") }), POST, a);
    const b = freshKey();
    expectWritten(await create(t.generic, { rkey: b, record: post("generic") }), POST, b);
    const c = freshKey();
    expectWritten(await create(t.generic, { collection: LIKE, rkey: c, record: like(a) }), LIKE, c);
    await expectStored(POST, a, "all actions");
    await expectStored(POST, b, "generic");
    await expectStored(LIKE, c);
  });

  it("generates a record key when none is given", async () => {
    const result = await create(t.create, { record: post("no rkey") });
    expectWritten(result, POST);
    const rkey = result.body.uri.split("/").pop()!;
    await expectStored(POST, rkey, "no rkey");
  });

  it("accepts the repository named by the account's handle", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.create, { repo: alice.handle, rkey }), POST, rkey);
    await expectStored(POST, rkey);
  });

  it("is refused without the permission: atproto only, update only, delete only (403, nothing written)", async () => {
    for (const token of [t.atproto, t.update, t.delete]) {
      const rkey = freshKey();
      expectInsufficientScope(await create(token, { rkey }), need(POST, "create"));
      await expectAbsent(POST, rkey);
    }
  });

  it("a token scoped to one collection cannot create in another", async () => {
    for (const token of [t.create, t.allPost, t.createUpdate]) {
      const rkey = freshKey();
      expectInsufficientScope(await create(token, { collection: LIKE, rkey, record: like() }), need(LIKE, "create"));
      await expectAbsent(LIKE, rkey);
    }
  });

  it("a collection is one NSID in any case of its authority: stored canonically, and no case reaches another collection", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.create, { collection: "APP.BSKY.feed.post", rkey, record: { $type: "App.Bsky.feed.post", ...post("upper") } }), POST, rkey);
    await expectStored(POST, rkey, "upper");
    expect((await getRecord("APP.BSKY.FEED.post", rkey)).status).toBe(200);
    const likes = await Promise.all(["APP.BSKY.FEED.like", "app.Bsky.feed.like"].map((collection) => create(t.create, { collection, rkey: freshKey(), record: like() })));
    for (const refused of likes) expectInsufficientScope(refused, need(LIKE, "create"));
  });

  it("creating at an existing rkey is 400 RecordAlreadyExists and leaves the record as it was", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.create, { rkey, record: post("first") }), POST, rkey);
    expectXrpcError(await create(t.create, { rkey, record: post("second") }), 400, "RecordAlreadyExists");
    await expectStored(POST, rkey, "first");
  });

  it("writing to another account's repository is 403, by DID or by handle, and nothing lands there", async () => {
    for (const repo of [bob.did, bob.handle]) {
      const rkey = freshKey();
      const result = await create(t.generic, { repo, rkey });
      expect(result.status).toBe(403);
      expect(typeof (result.body as XrpcErrorBody).message).toBe("string");
      await expectAbsent(POST, rkey, bob.did);
    }
    expect(await allKeys(POST, bob.did)).toEqual([]);
  });

  it("a record whose $type names another collection is refused with 400", async () => {
    const rkey = freshKey();
    const result = await create(t.create, { rkey, record: { $type: LIKE, text: "mislabelled" } });
    expect(result.status).toBe(400);
    await expectAbsent(POST, rkey);
  });
});

describe("com.atproto.repo.putRecord: needs create and update", () => {
  it("is allowed with create+update: creates, then replaces", async () => {
    const rkey = freshKey();
    const first = await put(t.createUpdate, { rkey, record: post("v1") });
    expectWritten(first, POST, rkey);
    await expectStored(POST, rkey, "v1");
    const second = await put(t.createUpdate, { rkey, record: post("v2") });
    expectWritten(second, POST, rkey);
    expect(second.body.cid).not.toBe(first.body.cid);
    const view = await expectStored(POST, rkey, "v2");
    expect(view.cid).toBe(second.body.cid);
  });

  it("is allowed with repo:<collection> and with transition:generic", async () => {
    const rkey = freshKey();
    expectWritten(await put(t.allPost, { rkey, record: post("all") }), POST, rkey);
    expectWritten(await put(t.generic, { rkey, record: post("generic") }), POST, rkey);
    await expectStored(POST, rkey, "generic");
  });

  it("a token with only action=update is refused naming action=create; the record is unchanged", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.generic, { rkey, record: post("original") }), POST, rkey);
    expectInsufficientScope(await put(t.update, { rkey, record: post("changed") }), need(POST, "create"));
    await expectStored(POST, rkey, "original");
  });

  it("a token with only action=create is refused naming action=update; nothing is written", async () => {
    const existing = freshKey();
    expectWritten(await create(t.generic, { rkey: existing, record: post("original") }), POST, existing);
    expectInsufficientScope(await put(t.create, { rkey: existing, record: post("changed") }), need(POST, "update"));
    await expectStored(POST, existing, "original");
    const absent = freshKey();
    expectInsufficientScope(await put(t.create, { rkey: absent }), need(POST, "update"));
    await expectAbsent(POST, absent);
  });

  it("atproto only and delete only are refused; another collection is refused", async () => {
    const rkey = freshKey();
    expectInsufficientScope(await put(t.atproto, { rkey }), need(POST, "create"));
    expectInsufficientScope(await put(t.delete, { rkey }), need(POST, "create"));
    await expectAbsent(POST, rkey);
    expectInsufficientScope(await put(t.createUpdate, { collection: LIKE, rkey, record: like() }), need(LIKE, "create"));
    await expectAbsent(LIKE, rkey);
  });

  it("a wrong swapRecord is 400 InvalidSwap and the record is unchanged; the right one succeeds", async () => {
    const rkey = freshKey();
    const created = await create(t.generic, { rkey, record: post("v1") });
    expectWritten(created, POST, rkey);
    const other = await create(t.generic, { rkey: freshKey(), record: post("other") });
    expectWritten(other, POST);

    expectXrpcError(await put(t.createUpdate, { rkey, record: post("v2"), swapRecord: other.body.cid }), 400, "InvalidSwap");
    await expectStored(POST, rkey, "v1");
    // swapRecord null means "only if there is no record yet".
    expectXrpcError(await put(t.createUpdate, { rkey, record: post("v2"), swapRecord: null }), 400, "InvalidSwap");
    await expectStored(POST, rkey, "v1");

    expectWritten(await put(t.createUpdate, { rkey, record: post("v2"), swapRecord: created.body.cid }), POST, rkey);
    await expectStored(POST, rkey, "v2");
  });

  it("writing to another account's repository is 403", async () => {
    const rkey = freshKey();
    const result = await put(t.generic, { repo: bob.did, rkey });
    expect(result.status).toBe(403);
    await expectAbsent(POST, rkey, bob.did);
  });
});

describe("com.atproto.repo.deleteRecord: repo:<collection>?action=delete", () => {
  it("is allowed with the precise permission", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.generic, { rkey }), POST, rkey);
    const result = await del(t.delete, { rkey });
    expect(result.status).toBe(200);
    await expectAbsent(POST, rkey);
  });

  it("is allowed with repo:<collection> and with transition:generic", async () => {
    for (const token of [t.allPost, t.generic]) {
      const rkey = freshKey();
      expectWritten(await create(t.generic, { rkey }), POST, rkey);
      expect((await del(token, { rkey })).status).toBe(200);
      await expectAbsent(POST, rkey);
    }
  });

  it("is refused without action=delete (atproto, create, update, create+update): the record stays", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.generic, { rkey, record: post("keep me") }), POST, rkey);
    for (const token of [t.atproto, t.create, t.update, t.createUpdate]) {
      expectInsufficientScope(await del(token, { rkey }), need(POST, "delete"));
    }
    await expectStored(POST, rkey, "keep me");
  });

  it("a delete permission on one collection does not reach another", async () => {
    const rkey = freshKey();
    expectWritten(await create(t.generic, { collection: LIKE, rkey, record: like() }), LIKE, rkey);
    expectInsufficientScope(await del(t.delete, { collection: LIKE, rkey }), need(LIKE, "delete"));
    expectInsufficientScope(await del(t.allPost, { collection: LIKE, rkey }), need(LIKE, "delete"));
    await expectStored(LIKE, rkey);
  });

  it("deleting in another account's repository is 403", async () => {
    const result = await del(t.generic, { repo: bob.did, rkey: freshKey() });
    expect(result.status).toBe(403);
  });
});

describe("com.atproto.repo.applyWrites: every write checked, all or nothing", () => {
  const createOp = (collection: string, rkey: string, value: Record<string, unknown>) => ({ $type: "com.atproto.repo.applyWrites#create", collection, rkey, value });
  const updateOp = (collection: string, rkey: string, value: Record<string, unknown>) => ({ $type: "com.atproto.repo.applyWrites#update", collection, rkey, value });
  const deleteOp = (collection: string, rkey: string) => ({ $type: "com.atproto.repo.applyWrites#delete", collection, rkey });

  it("a batch of create, update and delete on one collection is allowed with repo:<collection>", async () => {
    const [a, b, c] = [freshKey(), freshKey(), freshKey()];
    expectWritten(await create(t.generic, { rkey: c, record: post("to delete") }), POST, c);
    expectWritten(await create(t.generic, { rkey: b, record: post("to update") }), POST, b);
    const result = await applyWrites(t.allPost, [createOp(POST, a, post("created")), updateOp(POST, b, post("updated")), deleteOp(POST, c)]);
    expect(result.status).toBe(200);
    expect(result.body.results.map((r) => r.$type)).toEqual([
      "com.atproto.repo.applyWrites#createResult",
      "com.atproto.repo.applyWrites#updateResult",
      "com.atproto.repo.applyWrites#deleteResult",
    ]);
    expect(result.body.results[0]!.uri).toBe(`at://${alice.did}/${POST}/${a}`);
    await expectStored(POST, a, "created");
    await expectStored(POST, b, "updated");
    await expectAbsent(POST, c);
  });

  it("a batch across collections is allowed with transition:generic", async () => {
    const [a, b] = [freshKey(), freshKey()];
    const result = await applyWrites(t.generic, [createOp(POST, a, post("generic batch")), createOp(LIKE, b, like())]);
    expect(result.status).toBe(200);
    await expectStored(POST, a, "generic batch");
    await expectStored(LIKE, b);
  });

  it("a batch mixing an allowed and a disallowed collection is 403 and writes nothing", async () => {
    const postsBefore = await allKeys(POST);
    const likesBefore = await allKeys(LIKE);
    const [a, b] = [freshKey(), freshKey()];
    const result = await applyWrites(t.allPost, [createOp(POST, a, post("should not land")), createOp(LIKE, b, like())]);
    expectInsufficientScope(result, need(LIKE, "create"));
    await expectAbsent(POST, a);
    await expectAbsent(LIKE, b);
    expect(await allKeys(POST)).toEqual(postsBefore);
    expect(await allKeys(LIKE)).toEqual(likesBefore);
  });

  it("each write's action is checked: a create-only token cannot slip a delete or an update into a batch", async () => {
    const victim = freshKey();
    expectWritten(await create(t.generic, { rkey: victim, record: post("victim") }), POST, victim);
    const postsBefore = await allKeys(POST);

    const fresh = freshKey();
    expectInsufficientScope(await applyWrites(t.create, [createOp(POST, fresh, post("x")), deleteOp(POST, victim)]), need(POST, "delete"));
    expectInsufficientScope(await applyWrites(t.create, [createOp(POST, fresh, post("x")), updateOp(POST, victim, post("hijacked"))]), need(POST, "update"));
    expectInsufficientScope(await applyWrites(t.atproto, [createOp(POST, fresh, post("x"))]), need(POST, "create"));

    await expectAbsent(POST, fresh);
    await expectStored(POST, victim, "victim");
    expect(await allKeys(POST)).toEqual(postsBefore);
  });

  it("a conflict anywhere in the batch is 400 RecordAlreadyExists and nothing is applied", async () => {
    const existing = freshKey();
    expectWritten(await create(t.generic, { rkey: existing, record: post("existing") }), POST, existing);
    const fresh = freshKey();
    const result = await applyWrites(t.allPost, [createOp(POST, fresh, post("new")), createOp(POST, existing, post("clash"))]);
    expectXrpcError(result, 400, "RecordAlreadyExists");
    await expectAbsent(POST, fresh);
    await expectStored(POST, existing, "existing");
  });

  it("an update-only token cannot create by updating a key that does not exist (10 tries at once): 400, nothing stored", async () => {
    const postsBefore = await allKeys(POST);
    const keys = Array.from({ length: 10 }, () => freshKey());
    const results = await Promise.all(keys.map((rkey) => applyWrites(t.update, [updateOp(POST, rkey, post("created by an update"))])));
    for (const result of results) expect(expectXrpcError(result, 400, "InvalidRequest").message).toContain("Could not find a record");
    for (const rkey of keys) await expectAbsent(POST, rkey);
    expect(await allKeys(POST)).toEqual(postsBefore);
    // The same token does update a record that exists.
    const existing = freshKey();
    expectWritten(await create(t.generic, { rkey: existing, record: post("before") }), POST, existing);
    expect((await applyWrites(t.update, [updateOp(POST, existing, post("after"))])).status).toBe(200);
    await expectStored(POST, existing, "after");
  });

  it("an update of a missing key fails the whole batch, even after a create the token may make", async () => {
    const [created, missing] = [freshKey(), freshKey()];
    const result = await applyWrites(t.allPost, [createOp(POST, created, post("would be created")), updateOp(POST, missing, post("missing"))]);
    expectXrpcError(result, 400, "InvalidRequest");
    await expectAbsent(POST, created);
    await expectAbsent(POST, missing);
    // A create followed by an update of the same key, in one batch, is fine: the update sees the create.
    const both = freshKey();
    expect((await applyWrites(t.allPost, [createOp(POST, both, post("first")), updateOp(POST, both, post("second"))])).status).toBe(200);
    await expectStored(POST, both, "second");
  });

  it("a batch for another account's repository is 403", async () => {
    const rkey = freshKey();
    const result = await applyWrites(t.generic, [createOp(POST, rkey, post("x"))], bob.did);
    expect(result.status).toBe(403);
    await expectAbsent(POST, rkey, bob.did);
  });
});

describe("com.atproto.repo.getRecord / listRecords: public reads", () => {
  const PAGED = "com.example.atrium.paged";
  const pagedKeys = ["p1", "p2", "p3", "p4", "p5"];

  beforeAll(async () => {
    const result = await applyWrites(
      t.generic,
      pagedKeys.map((rkey, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: PAGED, rkey, value: { n: i + 1 } })),
    );
    if (result.status !== 200) throw new Error(`seeding failed: ${JSON.stringify(result.body)}`);
  });

  it("getRecord needs no token: 200 with uri, cid and value, by DID or handle", async () => {
    for (const repo of [alice.did, alice.handle]) {
      const result = await getRecord(PAGED, "p3", repo);
      expect(result.status).toBe(200);
      const view = result.body as RecordView;
      expect(view.uri).toBe(`at://${alice.did}/${PAGED}/p3`);
      expect(view.cid).toBe((await cidForLex(jsonToLex({ $type: PAGED, n: 3 }))).toString());
      expect(view.value).toEqual({ $type: PAGED, n: 3 });
    }
  });

  it("getRecord of a missing record is 400 RecordNotFound (also for an unknown repo)", async () => {
    expectXrpcError(await getRecord(PAGED, "nope"), 400, "RecordNotFound");
    expectXrpcError(await getRecord(PAGED, "p1", "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"), 400, "RecordNotFound");
  });

  it("listRecords needs no token", async () => {
    const result = await listRecords(PAGED);
    expect(result.status).toBe(200);
    expect(result.body.records.map((r) => r.value.n)).toEqual([5, 4, 3, 2, 1]);
    expect(result.body.records[0]!.uri).toBe(`at://${alice.did}/${PAGED}/p5`);
    expect(result.body.cursor).toBeUndefined();
  });

  it("pages with limit and cursor, newest key first, without gaps or repeats", async () => {
    const first = await listRecords(PAGED, { limit: "2" });
    expect(first.status).toBe(200);
    expect(first.body.records.map((r) => r.uri.split("/").pop())).toEqual(["p5", "p4"]);
    expect(first.body.cursor).toBeTruthy();

    const second = await listRecords(PAGED, { limit: "2", cursor: first.body.cursor! });
    expect(second.status).toBe(200);
    expect(second.body.records.map((r) => r.uri.split("/").pop())).toEqual(["p3", "p2"]);
    expect(second.body.cursor).toBeTruthy();

    const third = await listRecords(PAGED, { limit: "2", cursor: second.body.cursor! });
    expect(third.status).toBe(200);
    expect(third.body.records.map((r) => r.uri.split("/").pop())).toEqual(["p1"]);
    expect(third.body.cursor).toBeUndefined();
  });

  it("reverse=true lists oldest key first and pages the same way", async () => {
    const first = await listRecords(PAGED, { limit: "3", reverse: "true" });
    expect(first.status).toBe(200);
    expect(first.body.records.map((r) => r.uri.split("/").pop())).toEqual(["p1", "p2", "p3"]);
    const second = await listRecords(PAGED, { limit: "3", reverse: "true", cursor: first.body.cursor! });
    expect(second.body.records.map((r) => r.uri.split("/").pop())).toEqual(["p4", "p5"]);
    expect(second.body.cursor).toBeUndefined();
  });

  it("an out-of-range limit, a bad collection or missing repo is 400 InvalidRequest", async () => {
    expectXrpcError(await listRecords(PAGED, { limit: "0" }), 400, "InvalidRequest");
    expectXrpcError(await listRecords(PAGED, { limit: "1000" }), 400, "InvalidRequest");
    expectXrpcError(await listRecords(PAGED, { limit: "abc" }), 400, "InvalidRequest");
    expectXrpcError(await listRecords("not an nsid"), 400, "InvalidRequest");
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.listRecords", { params: { collection: PAGED } }), 400, "InvalidRequest");
    expectXrpcError(await callAnonymous(server, "com.atproto.repo.getRecord", { params: { repo: alice.did, collection: PAGED } }), 400, "InvalidRequest");
    expectXrpcError(await getRecord(PAGED, "bad/key"), 400, "InvalidRequest");
  });
});

describe("malformed input is 400 InvalidRequest, never 500", () => {
  const createRecord = (json: unknown) => call(t.generic, "com.atproto.repo.createRecord", { json });

  it("missing collection", async () => {
    expectXrpcError(await createRecord({ repo: alice.did, record: post("x") }), 400, "InvalidRequest");
  });

  it("a collection that is not an NSID", async () => {
    for (const collection of ["not an nsid", "post", "app..bsky.post", "", "app.bsky.feed.post/../x"]) {
      expectXrpcError(await createRecord({ repo: alice.did, collection, record: post("x") }), 400, "InvalidRequest");
    }
  });

  it("a record that is not an object", async () => {
    for (const record of ["a string", 42, [1, 2, 3], null, true]) {
      expectXrpcError(await createRecord({ repo: alice.did, collection: POST, record }), 400, "InvalidRequest");
    }
    expectXrpcError(await createRecord({ repo: alice.did, collection: POST }), 400, "InvalidRequest");
  });

  it("a body that is not a JSON object", async () => {
    for (const json of [null, [], "text", 7]) expectXrpcError(await createRecord(json), 400, "InvalidRequest");
  });

  it("a bad record key", async () => {
    for (const rkey of ["has/slash", "..", "has space", ""]) {
      expectXrpcError(await createRecord({ repo: alice.did, collection: POST, rkey, record: post("x") }), 400, "InvalidRequest");
    }
  });

  it("a body that is not valid JSON", async () => {
    const result = await callRaw(t.generic, "POST", "com.atproto.repo.createRecord", {
      body: '{"repo": "did:x", "collection": ',
      headers: { "Content-Type": "application/json" },
    });
    expectXrpcError(result, 400, "InvalidRequest");
    const empty = await callRaw(t.generic, "POST", "com.atproto.repo.createRecord", { body: "", headers: { "Content-Type": "application/json" } });
    expectXrpcError(empty, 400, "InvalidRequest");
  });

  it("a Content-Type other than application/json", async () => {
    const body = JSON.stringify({ repo: alice.did, collection: POST, rkey: freshKey(), record: post("x") });
    for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
      expectXrpcError(await callRaw(t.generic, "POST", "com.atproto.repo.createRecord", { body, headers: { "Content-Type": type } }), 400, "InvalidRequest");
    }
    expectXrpcError(await callRaw(t.generic, "POST", "com.atproto.repo.createRecord", { body }), 400, "InvalidRequest");
  });

  it("a small record nested too deeply is refused with 400, not a 500 (createRecord, putRecord, applyWrites)", async () => {
    // 20 kB of JSON, well under the 100 kB record limit, but 10,000 levels deep.
    const deep = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
    const bodies: [string, string][] = [
      ["com.atproto.repo.createRecord", `{"repo":"${alice.did}","collection":"${POST}","rkey":"${freshKey()}","record":{"a":${deep}}}`],
      ["com.atproto.repo.putRecord", `{"repo":"${alice.did}","collection":"${POST}","rkey":"${freshKey()}","record":{"a":${deep}}}`],
      [
        "com.atproto.repo.applyWrites",
        `{"repo":"${alice.did}","writes":[{"$type":"com.atproto.repo.applyWrites#create","collection":"${POST}","rkey":"${freshKey()}","value":{"a":${deep}}}]}`,
      ],
    ];
    const answers: { nsid: string; status: number; error?: string }[] = [];
    for (const [nsid, body] of bodies) {
      const result = await callRaw(t.generic, "POST", nsid, { body, headers: { "Content-Type": "application/json" } });
      answers.push({ nsid, status: result.status, error: (result.body as XrpcErrorBody).error });
    }
    expect(answers).toEqual(bodies.map(([nsid]) => ({ nsid, status: 400, error: expect.stringMatching(/^Invalid(Request|Record)$/) })));
  });

  it("putRecord without rkey, deleteRecord without rkey, swapRecord that is not a CID", async () => {
    expectXrpcError(await call(t.generic, "com.atproto.repo.putRecord", { json: { repo: alice.did, collection: POST, record: post("x") } }), 400, "InvalidRequest");
    expectXrpcError(await call(t.generic, "com.atproto.repo.deleteRecord", { json: { repo: alice.did, collection: POST } }), 400, "InvalidRequest");
    expectXrpcError(
      await call(t.generic, "com.atproto.repo.putRecord", { json: { repo: alice.did, collection: POST, rkey: freshKey(), record: post("x"), swapRecord: "not-a-cid" } }),
      400,
      "InvalidRequest",
    );
  });

  it("applyWrites with no writes, an unknown write type, or a write without a collection", async () => {
    const applyWritesRaw = (json: unknown) => call(t.generic, "com.atproto.repo.applyWrites", { json });
    expectXrpcError(await applyWritesRaw({ repo: alice.did, writes: [] }), 400, "InvalidRequest");
    expectXrpcError(await applyWritesRaw({ repo: alice.did }), 400, "InvalidRequest");
    expectXrpcError(await applyWritesRaw({ repo: alice.did, writes: [{ $type: "com.atproto.repo.applyWrites#upsert", collection: POST, rkey: "x", value: {} }] }), 400, "InvalidRequest");
    expectXrpcError(await applyWritesRaw({ repo: alice.did, writes: [{ $type: "com.atproto.repo.applyWrites#create", value: {} }] }), 400, "InvalidRequest");
    expectXrpcError(await applyWritesRaw({ repo: alice.did, writes: "nope" }), 400, "InvalidRequest");
  });
});

describe("HTTP methods", () => {
  it("GET on a procedure is 405, with or without a token", async () => {
    for (const nsid of ["com.atproto.repo.createRecord", "com.atproto.repo.putRecord", "com.atproto.repo.deleteRecord", "com.atproto.repo.applyWrites"]) {
      const anonymous = await callAnonymous(server, nsid);
      expect(anonymous.status).toBe(405);
      expect((anonymous.body as XrpcErrorBody).error).toBe("InvalidRequest");
      const withToken = await call(t.generic, nsid);
      expect(withToken.status).toBe(405);
    }
  });

  it("POST on a query is 405", async () => {
    const result = await callAnonymous(server, "com.atproto.repo.getRecord", {
      method: "POST",
      params: { repo: alice.did, collection: POST, rkey: "x" },
      body: "{}",
      headers: { "Content-Type": "application/json" },
    });
    expect(result.status).toBe(405);
  });
});
