import { describe, expect, it } from "vitest";
import { blobCidsIn } from "./blob-refs.ts";

const CID_A = "bafkreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const CID_B = "bafkreibbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const CID_C = "bafkreicccccccccccccccccccccccccccccccccccccccccccccccccccc";

const typed = (cid: string) => ({ $type: "blob", ref: { $link: cid }, mimeType: "image/png", size: 42 });
const legacy = (cid: string) => ({ cid, mimeType: "image/jpeg" });

/** docs/decisions/0008: the blob refs a record holds, in both forms of the atproto data model. */
describe("blobCidsIn", () => {
  it("finds nothing in a record without blobs", () => {
    expect(blobCidsIn({ $type: "app.bsky.feed.post", text: "hello", createdAt: "2026-11-23T00:00:00Z" })).toEqual([]);
  });

  it("finds typed blob refs where a post embeds images", () => {
    const post = {
      $type: "app.bsky.feed.post",
      text: "two pictures",
      embed: { $type: "app.bsky.embed.images", images: [{ alt: "one", image: typed(CID_A) }, { alt: "two", image: typed(CID_B) }] },
    };
    expect(blobCidsIn(post)).toEqual([CID_A, CID_B]);
  });

  it("finds the legacy form {cid, mimeType}", () => {
    expect(blobCidsIn({ $type: "app.bsky.actor.profile", avatar: legacy(CID_C) })).toEqual([CID_C]);
  });

  it("finds a ref at the top level and inside arrays of arrays", () => {
    expect(blobCidsIn(typed(CID_A))).toEqual([CID_A]);
    expect(blobCidsIn({ grid: [[typed(CID_B)], [[legacy(CID_C)]]] })).toEqual([CID_B, CID_C]);
  });

  it("names each blob once however often the record refers to it", () => {
    expect(blobCidsIn({ a: typed(CID_A), b: [typed(CID_A), legacy(CID_A)] })).toEqual([CID_A]);
  });

  it("reads extra keys as still a reference: missing one would delete a blob under its record", () => {
    expect(blobCidsIn({ image: { ...typed(CID_A), extra: true } })).toEqual([CID_A]);
    expect(blobCidsIn({ avatar: { ...legacy(CID_B), size: 3 } })).toEqual([CID_B]);
  });

  it.each([
    ["a strong ref {uri, cid}", { subject: { uri: "at://did:plc:x/app.bsky.feed.post/1", cid: CID_A } }],
    ["a cid-link alone", { link: { $link: CID_A } }],
    ["$type blob whose ref is a string", { image: { $type: "blob", ref: CID_A, mimeType: "image/png", size: 1 } }],
    ["$type blob whose $link is not a string", { image: { $type: "blob", ref: { $link: 7 }, mimeType: "image/png", size: 1 } }],
    ["$type blob whose ref is an array", { image: { $type: "blob", ref: [CID_A], mimeType: "image/png", size: 1 } }],
    ["a ref.$link without $type blob", { image: { ref: { $link: CID_A }, mimeType: "image/png" } }],
    ["legacy form with a non-string mimeType", { avatar: { cid: CID_A, mimeType: null } }],
    ["a blob CID in plain text", { text: CID_A }],
  ])("is not fooled by %s", (_name, record) => {
    expect(blobCidsIn(record)).toEqual([]);
  });

  it("walks nesting far deeper than the call stack allows, without recursion", () => {
    let deep: unknown = typed(CID_A);
    for (let i = 0; i < 200_000; i++) deep = i % 2 ? { next: deep } : [deep];
    expect(blobCidsIn(deep)).toEqual([CID_A]);
  });

  it("ignores values that are not objects", () => {
    expect(blobCidsIn(null)).toEqual([]);
    expect(blobCidsIn("bafkrei")).toEqual([]);
    expect(blobCidsIn(42)).toEqual([]);
  });
});
