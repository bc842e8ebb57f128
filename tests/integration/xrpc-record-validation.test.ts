/**
 * Records checked against their lexicons over HTTP (docs/decisions/0049): com.atproto.repo.createRecord, putRecord
 * and applyWrites with `validate` true, unset and false, as the reference PDS answers them; and strings that are not
 * well-formed Unicode refused (issue 28, item 10). The rules themselves are unit-tested (app/.server/repo/
 * record-lexicons.test.ts, record-data.test.ts); this shows the answers, and that a refusal writes nothing.
 * Nothing here depends on the database: SQLite only (vitest.config.ts).
 */
import { TID } from "@atproto/common-web";
import { decode } from "@atproto/lex-cbor";
import { jsonToLex } from "@atproto/lex-json";
import { readCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectXrpcError } from "../helpers/xrpc.ts";
import { scopedSession, type ScopedSession } from "../helpers/xrpc-extra.ts";

const POST = "app.bsky.feed.post";
const PROFILE = "app.bsky.actor.profile";
const NOTE = "com.example.note";

type WriteAnswer = { uri: string; cid: string; commit?: { cid: string; rev: string }; validationStatus?: string };
type BatchAnswer = { commit: { cid: string; rev: string }; results: Array<Record<string, unknown>> };
type RecordView = { uri: string; cid: string; value: Record<string, unknown> };

let server: TestServer;
let alice: { did: string; handle: string };
let session: ScopedSession;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  session = await scopedSession(server, "atproto transition:generic");
});
afterAll(() => server?.stop());

const post = (text: string) => ({ $type: POST, text, createdAt: new Date().toISOString() });
const createRecord = (json: Record<string, unknown>) => call<WriteAnswer>(session, "com.atproto.repo.createRecord", { json: { repo: alice.did, ...json } });
const putRecord = (json: Record<string, unknown>) => call<WriteAnswer>(session, "com.atproto.repo.putRecord", { json: { repo: alice.did, ...json } });
const applyWrites = (json: Record<string, unknown>) => call<BatchAnswer>(session, "com.atproto.repo.applyWrites", { json: { repo: alice.did, ...json } });
const createOp = (collection: string, value: Record<string, unknown>, rkey?: string) => ({ $type: "com.atproto.repo.applyWrites#create", collection, value, ...(rkey ? { rkey } : {}) });

const head = async () => (await callAnonymous<{ cid: string }>(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } })).body.cid;
const getRecord = (collection: string, rkey: string) => callAnonymous<RecordView>(server, "com.atproto.repo.getRecord", { params: { repo: alice.did, collection, rkey } });
const rkeyOf = (uri: string) => uri.split("/").pop()!;

/** The call is refused with 400 InvalidRecord and this message, and the repository did not move. */
async function expectRefused(send: () => Promise<{ status: number; body: unknown }>, message: string | RegExp): Promise<void> {
  const before = await head();
  const body = expectXrpcError((await send()) as never, 400, "InvalidRecord");
  expect(body.message).toMatch(typeof message === "string" ? new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) : message);
  expect(await head()).toBe(before);
}

describe("records checked against their lexicons", () => {
  it("a post missing a required field is refused with InvalidRecord, in the lexicon's words, and nothing is written", async () => {
    const rkey = TID.nextStr();
    await expectRefused(() => createRecord({ collection: POST, rkey, record: { createdAt: new Date().toISOString() } }), `Invalid ${POST} record: Record must have the property "text"`);
    expectXrpcError(await getRecord(POST, rkey), 400, "RecordNotFound");
    await expectRefused(() => putRecord({ collection: POST, rkey, record: { text: 7, createdAt: new Date().toISOString() } }), `Invalid ${POST} record: Record/text must be a string`);
  });

  it("a valid post answers validationStatus valid, from createRecord and putRecord", async () => {
    const created = await createRecord({ collection: POST, record: post("valid") });
    expect(created.status).toBe(200);
    expect(created.body.validationStatus).toBe("valid");
    const replaced = await putRecord({ collection: POST, rkey: rkeyOf(created.body.uri), record: post("still valid") });
    expect(replaced.body).toMatchObject({ cid: expect.any(String), validationStatus: "valid" });
    expect((await getRecord(POST, rkeyOf(created.body.uri))).body.value.text).toBe("still valid");
  });

  it("validate true refuses a type with no known lexicon; unset stores it as unknown; false validates nothing and says nothing", async () => {
    await expectRefused(() => createRecord({ collection: NOTE, validate: true, record: { words: "hi" } }), `Unknown lexicon type: ${NOTE}`);
    const unset = await createRecord({ collection: NOTE, record: { words: "hi" } });
    expect(unset.body.validationStatus).toBe("unknown");
    const unvalidated = await createRecord({ collection: NOTE, validate: false, record: { words: "hi" } });
    expect(unvalidated.status).toBe(200);
    expect(unvalidated.body).not.toHaveProperty("validationStatus");
    // false skips a known lexicon too: this post has no text and a key that is not a TID.
    const loose = await createRecord({ collection: POST, rkey: "not-a-tid", validate: false, record: { createdAt: "whenever" } });
    expect(loose.status).toBe(200);
    expect(loose.body).not.toHaveProperty("validationStatus");
    expect((await getRecord(POST, "not-a-tid")).body.value).toEqual({ $type: POST, createdAt: "whenever" });
  });

  it("the record key follows the lexicon: a profile only at self, a post only at a TID", async () => {
    await expectRefused(() => createRecord({ collection: PROFILE, record: { displayName: "Alice" } }), new RegExp(`^Invalid record key for ${PROFILE}: "[a-z2-7]{13}" must be "self"$`));
    await expectRefused(() => createRecord({ collection: POST, rkey: "my-post", record: post("keyed") }), `Invalid record key for ${POST}: "my-post" must be a TID`);
    const profile = await putRecord({ collection: PROFILE, rkey: "self", record: { displayName: "Alice" } });
    expect(profile.body.validationStatus).toBe("valid");
  });

  it("applyWrites answers each write's validationStatus, and one invalid write refuses the whole batch", async () => {
    const note = await createRecord({ collection: NOTE, record: { n: 1 } });
    const gone = await createRecord({ collection: NOTE, record: { n: 2 } });
    const batch = await applyWrites({
      writes: [
        createOp(POST, post("in a batch")),
        { $type: "com.atproto.repo.applyWrites#update", collection: NOTE, rkey: rkeyOf(note.body.uri), value: { n: 3 } },
        { $type: "com.atproto.repo.applyWrites#delete", collection: NOTE, rkey: rkeyOf(gone.body.uri) },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results.map(({ $type, validationStatus }) => ({ $type, validationStatus }))).toEqual([
      { $type: "com.atproto.repo.applyWrites#createResult", validationStatus: "valid" },
      { $type: "com.atproto.repo.applyWrites#updateResult", validationStatus: "unknown" },
      { $type: "com.atproto.repo.applyWrites#deleteResult", validationStatus: undefined },
    ]);
    const unvalidated = await applyWrites({ validate: false, writes: [createOp(POST, post("unchecked")), createOp(NOTE, { n: 4 })] });
    expect(unvalidated.body.results.map((result) => "validationStatus" in result)).toEqual([false, false]);

    const fine = TID.nextStr();
    await expectRefused(() => applyWrites({ writes: [createOp(POST, post("fine"), fine), createOp(POST, { $type: POST, text: "no date" })] }), `Invalid ${POST} record: Record must have the property "createdAt" (writes[1])`);
    await expectRefused(() => applyWrites({ validate: true, writes: [createOp(POST, post("fine"), fine), createOp(NOTE, { n: 5 })] }), `Unknown lexicon type: ${NOTE} (writes[1])`);
    expectXrpcError(await getRecord(POST, fine), 400, "RecordNotFound");
  });
});

describe("strings that are not well-formed Unicode", () => {
  it("a lone surrogate in a record, as a value or a key at any depth, is 400 InvalidRecord from every write, and nothing is written", async () => {
    const unicode = / is not well-formed Unicode \(it holds a lone surrogate\)$/;
    await expectRefused(() => createRecord({ collection: POST, record: post("half a butterfly \ud83e") }), unicode);
    await expectRefused(() => createRecord({ collection: NOTE, validate: false, record: { list: [{ ["key \udd8b"]: "x" }] } }), unicode);
    await expectRefused(() => putRecord({ collection: PROFILE, rkey: "self", record: { displayName: "\udc00Alice" } }), unicode);
    await expectRefused(() => applyWrites({ writes: [createOp(POST, post("fine")), createOp(NOTE, { deep: { deeper: ["ok", "\ud800"] } })] }), unicode);
  });

  it("what is accepted reads back from getRecord exactly as its signed block says, astral characters included", async () => {
    const written = await createRecord({ collection: POST, record: post("a butterfly 🦋, a 𝒻ancy f, 日本語") });
    expect(written.status).toBe(200);
    const view = (await getRecord(POST, rkeyOf(written.body.uri))).body;
    const proof = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRecord?${new URLSearchParams({ did: alice.did, collection: POST, rkey: rkeyOf(written.body.uri) })}`);
    const { blocks } = await readCar(new Uint8Array(await proof.arrayBuffer()));
    const block = [...blocks.entries()].find((entry) => entry.cid.toString() === view.cid);
    expect(decode(block!.bytes)).toEqual(jsonToLex(view.value as never));
  });

  it("preferences with a lone surrogate are refused with 400 InvalidRequest and left as they were", async () => {
    const saved = [{ $type: "app.bsky.actor.defs#savedFeedsPrefV2", items: [] }];
    const put = (preferences: unknown) => call(session, "app.bsky.actor.putPreferences", { json: { preferences } });
    expect((await put(saved)).status).toBe(200);
    const refused = expectXrpcError(await put([{ $type: "app.bsky.actor.defs#mutedWordsPref", items: [{ value: "\ud800", targets: ["content"] }] }]), 400, "InvalidRequest");
    expect(refused.message).toBe("preferences: the string at $[0].items[0].value is not well-formed Unicode (it holds a lone surrogate)");
    expect((await call<{ preferences: unknown }>(session, "app.bsky.actor.getPreferences")).body.preferences).toEqual(saved);
  });
});
