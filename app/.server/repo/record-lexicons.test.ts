import { lexicons } from "@atproto/api";
import { describe, expect, it } from "vitest";
import { recordToLex } from "./record-data.ts";
import { checkNewRecord, InvalidRecordError, knownRecordLexicon, recordKeyProblem } from "./record-lexicons.ts";

const POST = "app.bsky.feed.post";
const PROFILE = "app.bsky.actor.profile";
const TID_KEY = "3kaaaaaaaaaa2";
const IMAGE_CID = "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
const CREATED = "2026-11-28T12:00:00.000Z";

const post = (fields: Record<string, unknown> = {}) => ({ $type: POST, text: "hello", createdAt: CREATED, ...fields });
const typedBlob = (mimeType = "image/png") => ({ $type: "blob", ref: { $link: IMAGE_CID }, mimeType, size: 1234 });
const legacyBlob = () => ({ cid: IMAGE_CID, mimeType: "image/png" });

/** What checking a JSON record says: its status ("none" when not validated), or the refusal's message. */
async function check(collection: string, rkey: string, json: Record<string, unknown>, validate?: boolean): Promise<string> {
  try {
    return (await checkNewRecord(collection, rkey, recordToLex(json), validate)) ?? "none";
  } catch (error) {
    if (error instanceof InvalidRecordError) return `refused: ${error.message}`;
    throw error;
  }
}

/**
 * Records checked against their lexicons (docs/decisions/0049), with the lexicon documents @atproto/api ships and
 * @atproto/lexicon's validator, which declare Node 22: this also shows they run on this Node.
 */
describe(`records checked against the lexicons of @atproto/api with @atproto/lexicon, on Node ${process.versions.node}`, () => {
  it("knows every record type of com.atproto.*, app.bsky.* and chat.bsky.* the package ships, and nothing else", async () => {
    const records = [...lexicons.docs.values()].filter((doc) => doc.defs.main?.type === "record").map((doc) => doc.id);
    const known: string[] = [];
    for (const id of records) if ((await knownRecordLexicon(id)) !== undefined) known.push(id);
    expect(known).toEqual(records.filter((id) => /^(com\.atproto|app\.bsky|chat\.bsky)\./.test(id)));
    expect(known).toEqual(expect.arrayContaining([POST, PROFILE, "app.bsky.feed.like", "app.bsky.graph.follow", "chat.bsky.actor.declaration", "com.atproto.lexicon.schema"]));
    // The package ships it, the reference PDS validates it, but it is outside the three namespaces.
    expect(records).toContain("com.germnetwork.declaration");
    for (const unknown of ["com.germnetwork.declaration", "com.example.note", "app.bsky.feed.defs", "app.bsky.feed.getTimeline", "app.bsky.feed.nothing"]) {
      expect(await knownRecordLexicon(unknown), unknown).toBeUndefined();
    }
  });

  it("validate unset: a known record is validated (valid or refused), an unknown one stored as unknown", async () => {
    expect(await check(POST, TID_KEY, post())).toBe("valid");
    expect(await check("chat.bsky.actor.declaration", "self", { $type: "chat.bsky.actor.declaration", allowIncoming: "following" })).toBe("valid");
    expect(await check(POST, TID_KEY, { $type: POST, createdAt: CREATED })).toBe(`refused: Invalid ${POST} record: Record must have the property "text"`);
    expect(await check("com.example.note", "anything", { $type: "com.example.note", whatever: [1, 2] })).toBe("unknown");
  });

  it("validate true: a known record must be valid and an unknown type is refused", async () => {
    expect(await check(POST, TID_KEY, post(), true)).toBe("valid");
    expect(await check(POST, TID_KEY, post({ text: 42 }), true)).toBe(`refused: Invalid ${POST} record: Record/text must be a string`);
    expect(await check("com.example.note", "anything", { $type: "com.example.note" }, true)).toBe("refused: Unknown lexicon type: com.example.note");
  });

  it("validate false: nothing is validated, not even the record key, and no status is given", async () => {
    expect(await check(POST, "not-a-tid", { $type: POST }, false)).toBe("none");
    expect(await check("com.example.note", "anything", { $type: "com.example.note" }, false)).toBe("none");
  });

  it("the lexicon's own words say what is wrong, with the field's path", async () => {
    const tooLong = post({ text: "x".repeat(3001) });
    expect(await check(POST, TID_KEY, tooLong)).toMatch(/^refused: Invalid app\.bsky\.feed\.post record: Record\/text must not be longer than 3000 characters$/);
    const badReply = post({ reply: { root: { uri: "not a uri", cid: IMAGE_CID }, parent: { uri: "at://did:plc:abc/app.bsky.feed.post/3kaaaaaaaaaa2", cid: IMAGE_CID } } });
    expect(await check(POST, TID_KEY, badReply)).toBe(`refused: Invalid ${POST} record: Record/reply/root/uri must be a valid at-uri`);
    const badLike = { $type: "app.bsky.feed.like", subject: { uri: "at://did:plc:abc/app.bsky.feed.post/3kaaaaaaaaaa2" }, createdAt: CREATED };
    expect(await check("app.bsky.feed.like", TID_KEY, badLike)).toBe('refused: Invalid app.bsky.feed.like record: Record/subject must have the property "cid"');
  });

  it("createdAt is checked strictly, as the reference does: a time without its zone is refused", async () => {
    expect(await check(POST, TID_KEY, post({ createdAt: "2026-11-28T12:00:00" }))).toBe(
      `refused: Invalid ${POST} record: Record/createdAt must be an valid atproto datetime (both RFC-3339 and ISO-8601)`,
    );
    expect(await check(POST, TID_KEY, post({ createdAt: "0000-00-12T23:20:50.123Z" }))).toMatch(/^refused: Invalid app\.bsky\.feed\.post record: Record\/createdAt must be an valid atproto datetime/);
    expect(await check(POST, TID_KEY, post({ createdAt: "2026-11-28T12:00:00+09:00" }))).toBe("valid");
  });

  it("the record key follows the lexicon's key type: tid for posts, self for profiles, an NSID for lexicon schemas, any for feed generators", async () => {
    expect(await check(POST, "my-post", post())).toBe(`refused: Invalid record key for ${POST}: "my-post" must be a TID`);
    expect(await check(PROFILE, TID_KEY, { $type: PROFILE, displayName: "Alice" })).toBe(`refused: Invalid record key for ${PROFILE}: "${TID_KEY}" must be "self"`);
    expect(await check(PROFILE, "self", { $type: PROFILE, displayName: "Alice" })).toBe("valid");
    const schema = { $type: "com.atproto.lexicon.schema", lexicon: 1 };
    expect(await check("com.atproto.lexicon.schema", "com.example.note", schema)).toBe("valid");
    expect(await check("com.atproto.lexicon.schema", "self", schema)).toBe('refused: Invalid record key for com.atproto.lexicon.schema: "self" must be an NSID');
    const generator = { $type: "app.bsky.feed.generator", did: "did:web:feeds.example.com", displayName: "Feed", createdAt: CREATED };
    expect(await check("app.bsky.feed.generator", "whats-hot", generator)).toBe("valid");
  });

  it("record key types: literal values, and a type this server does not know refuses rather than passes", () => {
    expect(recordKeyProblem("literal:settings", "settings")).toBeUndefined();
    expect(recordKeyProblem("literal:settings", "self")).toBe('"self" must be "settings"');
    expect(recordKeyProblem(undefined, "anything")).toBeUndefined();
    expect(recordKeyProblem("any", "anything")).toBeUndefined();
    expect(recordKeyProblem("tid", TID_KEY)).toBeUndefined();
    expect(recordKeyProblem("uuid", "anything")).toBe('the lexicon\'s record key type "uuid" is not one this server knows');
  });

  it("blobs: the typed form is what a lexicon's blob field takes", async () => {
    expect(await check(PROFILE, "self", { $type: PROFILE, avatar: typedBlob() })).toBe("valid");
    const images = post({ embed: { $type: "app.bsky.embed.images", images: [{ alt: "a cat", image: typedBlob("image/jpeg") }] } });
    expect(await check(POST, TID_KEY, images, true)).toBe("valid");
    expect(await check(PROFILE, "self", { $type: PROFILE, avatar: "not a blob" })).toBe(`refused: Invalid ${PROFILE} record: Record/avatar should be a blob ref`);
  });

  it("a legacy blob reference is refused in any new record, validated or not, as the reference PDS does", async () => {
    const refusal = `refused: Legacy blobs are not allowed (${IMAGE_CID})`;
    expect(await check("com.example.note", "any", { $type: "com.example.note", image: legacyBlob() })).toBe(refusal);
    expect(await check("com.example.note", "any", { $type: "com.example.note", nested: [{ image: legacyBlob() }] }, false)).toBe(refusal);
    expect(await check(POST, "not-a-tid", post({ image: legacyBlob() }), false)).toBe(refusal);
    // Where the lexicon wants a blob, the lexicon refuses it first (the reference validates first, for that message).
    expect(await check(PROFILE, "self", { $type: PROFILE, avatar: legacyBlob() })).toBe(`refused: Invalid ${PROFILE} record: Record/avatar should be a blob ref`);
    // The shape only: other keys, or a string that is not a CID, make it ordinary data.
    expect(await check("com.example.note", "any", { $type: "com.example.note", file: { cid: "not a cid", mimeType: "text/plain" } })).toBe("unknown");
    expect(await check("com.example.note", "any", { $type: "com.example.note", file: { ...legacyBlob(), name: "x.png" } })).toBe("unknown");
  });
});
