/**
 * Read-after-write (docs/decisions/0048): the app view (a stand-in on loopback, its did:plc at the run's PLC
 * directory, verifying every token: tests/helpers/service-stand-in.ts) answers as of an older revision of Alice's
 * repository (`atproto-repo-rev`); what Alice wrote after it shows in her timeline, her author feed, her threads and
 * her profile all the same, as the reference PDS shows it. The newest records are read from the database: on both
 * engines.
 */
import type http from "node:http";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { startServiceStandIn, type ServiceStandIn, type StandInCall } from "../helpers/service-stand-in.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { SAMPLES, scopedSession, uploadBlob, type ScopedSession } from "../helpers/xrpc-extra.ts";

const PLC_DIRECTORY = inject("plcDirectoryUrl");
const POST = "app.bsky.feed.post";
const PROFILE = "app.bsky.actor.profile";
const OTHER = "did:plc:someoneelsesomeoneelseso";
const OLD = "2020-01-01T00:00:00.000Z";

type Json = Record<string, unknown>;
type Ref = { uri: string; cid: string };

let server: TestServer;
let appview: ServiceStandIn;
let session: ScopedSession;
let alice: { did: string; handle: string };
/** The revision the app view has read Alice's repository up to. */
let indexedRev: string;
let headRev: string;
let firstPost: Ref;
let freshPost: Ref;
let reply: Ref;
let imageCid: string;

async function xrpc<T = Json>(nsid: string, options: { params?: Record<string, string>; json?: unknown } = {}) {
  return session.client.xrpc<T>(session.accessToken, nsid, options);
}

async function createRecord(collection: string, record: Json, rkey?: string): Promise<Ref> {
  const answer = await xrpc<Ref>(rkey ? "com.atproto.repo.putRecord" : "com.atproto.repo.createRecord", { json: { repo: alice.did, collection, record, ...(rkey ? { rkey } : {}) } });
  expect(answer.status).toBe(200);
  return answer.body;
}

async function latestRev(): Promise<string> {
  const answer = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getLatestCommit?did=${alice.did}`);
  return ((await answer.json()) as { rev: string }).rev;
}

function answerJson(response: http.ServerResponse, body: unknown, rev = indexedRev, status = 200): void {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", "atproto-repo-rev": rev });
  response.end(JSON.stringify(body));
}

/** A post as the app view shows it (its view of Alice's first post has her old profile). */
function appviewPost(ref: Ref, author: Json, record: Json, indexedAt: string): Json {
  return { uri: ref.uri, cid: ref.cid, author, record, replyCount: 0, repostCount: 0, likeCount: 0, quoteCount: 0, indexedAt };
}

const oldAliceView = () => ({ did: alice.did, handle: alice.handle, displayName: "Alice (old)" });

beforeAll(async () => {
  appview = await startServiceStandIn({ plcDirectoryUrl: PLC_DIRECTORY, identity: "did:plc", services: { bsky_appview: "BskyAppView" } });
  server = await startTestServer({ ATRIUM_APPVIEW: `${appview.did}#bsky_appview` });
  alice = await createAlice(server);
  session = await scopedSession(server, "atproto transition:generic");

  // What the app view has seen: her old profile and her first post.
  await createRecord(PROFILE, { $type: PROFILE, displayName: "Alice (old)", description: "old words" }, "self");
  firstPost = await createRecord(POST, { $type: POST, text: "first", createdAt: OLD });
  indexedRev = await latestRev();

  // What it has not: a new profile with an avatar, a post with an image and a quote, and a reply to the first post.
  const uploaded = await uploadBlob<{ blob: Json & { ref: { $link: string } } }>(session, SAMPLES.png, "image/png");
  expect(uploaded.status).toBe(200);
  imageCid = uploaded.body.blob.ref.$link;
  await createRecord(PROFILE, { $type: PROFILE, displayName: "Alice (new)", description: "new words", avatar: uploaded.body.blob }, "self");
  freshPost = await createRecord(POST, {
    $type: POST,
    text: "fresh",
    createdAt: new Date().toISOString(),
    embed: {
      $type: "app.bsky.embed.recordWithMedia",
      record: { $type: "app.bsky.embed.record", record: { uri: `at://${OTHER}/${POST}/quoted`, cid: firstPost.cid } },
      media: { $type: "app.bsky.embed.images", images: [{ image: uploaded.body.blob, alt: "a pixel" }] },
    },
  });
  reply = await createRecord(POST, { $type: POST, text: "a reply", createdAt: new Date().toISOString(), reply: { root: firstPost, parent: firstPost } });
  headRev = await latestRev();

  appview.route("app.bsky.feed.getPosts", (call, response) => {
    answerJson(response, { posts: [appviewPost({ uri: call.query.uris!, cid: firstPost.cid }, { did: OTHER, handle: "other.test" }, { $type: POST, text: "quoted", createdAt: OLD }, OLD)] });
  });
});
afterAll(async () => {
  await server?.stop();
  await appview?.close();
});

function blobUrl(cid: string): string {
  return `${server.issuer}/xrpc/com.atproto.sync.getBlob?did=${encodeURIComponent(alice.did)}&cid=${cid}`;
}

describe("read-after-write", () => {
  it("the timeline gets her posts the app view has not indexed, newest first, as post views with her profile as it is now", async () => {
    appview.route("app.bsky.feed.getTimeline", (_call, response) => {
      answerJson(response, { feed: [{ post: appviewPost({ uri: `at://${OTHER}/${POST}/old`, cid: firstPost.cid }, { did: OTHER, handle: "other.test" }, { $type: POST, text: "old" }, OLD) }], cursor: "next" });
    });
    const answer = await xrpc<{ feed: Array<{ post: Json }>; cursor: string }>("app.bsky.feed.getTimeline");
    expect(answer.status).toBe(200);
    expect(answer.body.cursor).toBe("next");
    expect(answer.body.feed.map((item) => item.post.uri)).toEqual([reply.uri, freshPost.uri, `at://${OTHER}/${POST}/old`]);
    const fresh = answer.body.feed[1]!.post;
    expect(fresh).toMatchObject({
      uri: freshPost.uri,
      cid: freshPost.cid,
      author: { did: alice.did, handle: alice.handle, displayName: "Alice (new)", avatar: blobUrl(imageCid) },
      record: { text: "fresh" },
      replyCount: 0,
      likeCount: 0,
      repostCount: 0,
      quoteCount: 0,
    });
    // The quoted post as the app view has it (asked with her token for getPosts), beside the image served here.
    expect(fresh.embed).toEqual({
      $type: "app.bsky.embed.recordWithMedia#view",
      record: {
        $type: "app.bsky.embed.record#view",
        record: expect.objectContaining({ $type: "app.bsky.embed.record#viewRecord", uri: `at://${OTHER}/${POST}/quoted`, value: { $type: POST, text: "quoted", createdAt: OLD } }),
      },
      media: { $type: "app.bsky.embed.images#view", images: [{ thumb: blobUrl(imageCid), fullsize: blobUrl(imageCid), alt: "a pixel" }] },
    });
    const getPosts = appview.calls.filter((call) => call.nsid === "app.bsky.feed.getPosts");
    expect(getPosts.at(-1)!.token!.payload).toMatchObject({ iss: alice.did, aud: appview.did, lxm: "app.bsky.feed.getPosts" });
    expect(Number(answer.headers.get("atproto-upstream-lag"))).toBeGreaterThanOrEqual(0);
    expect(answer.headers.get("atproto-repo-rev")).toBe(indexedRev);
  });

  it("her author feed: her posts added, and her older posts shown with her profile as it is now", async () => {
    appview.route("app.bsky.feed.getAuthorFeed", (_call, response) => {
      answerJson(response, { feed: [{ post: appviewPost(firstPost, oldAliceView(), { $type: POST, text: "first", createdAt: OLD }, OLD) }] });
    });
    const answer = await xrpc<{ feed: Array<{ post: Json & { author: Json } }> }>("app.bsky.feed.getAuthorFeed", { params: { actor: alice.did } });
    expect(answer.body.feed.map((item) => [item.post.uri, item.post.author.displayName])).toEqual([
      [reply.uri, "Alice (new)"],
      [freshPost.uri, "Alice (new)"],
      [firstPost.uri, "Alice (new)"],
    ]);
  });

  it("someone else's author feed gets none of her posts", async () => {
    const original = { feed: [{ post: appviewPost({ uri: `at://${OTHER}/${POST}/x`, cid: firstPost.cid }, { did: OTHER, handle: "other.test" }, { $type: POST, text: "x" }, OLD) }] };
    appview.route("app.bsky.feed.getAuthorFeed", (_call, response) => answerJson(response, original));
    const answer = await xrpc("app.bsky.feed.getAuthorFeed", { params: { actor: OTHER } });
    expect(answer.body).toEqual(original);
  });

  it("the thread of her first post gets her reply", async () => {
    appview.route("app.bsky.feed.getPostThread", (_call, response) => {
      answerJson(response, { thread: { $type: "app.bsky.feed.defs#threadViewPost", post: appviewPost(firstPost, oldAliceView(), { $type: POST, text: "first" }, OLD), replies: [] } });
    });
    const answer = await xrpc<{ thread: { replies: Array<{ $type: string; post: Json }> } }>("app.bsky.feed.getPostThread", { params: { uri: firstPost.uri } });
    expect(answer.body.thread.replies.map((r) => [r.$type, r.post.uri, (r.post.record as Json).text])).toEqual([["app.bsky.feed.defs#threadViewPost", reply.uri, "a reply"]]);
  });

  it("a thread of her post the app view has not seen (400 NotFound) is built here, with what the app view has above it", async () => {
    appview.route("app.bsky.feed.getPostThread", (call, response) => {
      if (call.query.uri === firstPost.uri) {
        answerJson(response, { thread: { $type: "app.bsky.feed.defs#threadViewPost", post: appviewPost(firstPost, oldAliceView(), { $type: POST, text: "first" }, OLD) } });
      } else answerJson(response, { error: "NotFound", message: "Post not found" }, indexedRev, 400);
    });
    // By her handle, as an app may name it.
    const answer = await xrpc<{ thread: Json & { post: Json; parent: Json & { post: Json } } }>("app.bsky.feed.getPostThread", { params: { uri: reply.uri.replace(alice.did, alice.handle) } });
    expect(answer.status).toBe(200);
    expect(answer.body.thread).toMatchObject({ $type: "app.bsky.feed.defs#threadViewPost", post: { uri: reply.uri, record: { text: "a reply" } } });
    expect(answer.body.thread.parent.post.uri).toBe(firstPost.uri);
    const parents = appview.calls.filter((call) => call.nsid === "app.bsky.feed.getPostThread").at(-1)!;
    expect(parents.query).toMatchObject({ uri: firstPost.uri, depth: "0" });

    // Someone else's post that the app view does not know: its answer, as it came.
    const other = await xrpc("app.bsky.feed.getPostThread", { params: { uri: `at://${OTHER}/${POST}/gone` } });
    expect({ status: other.status, body: other.body }).toEqual({ status: 400, body: { error: "NotFound", message: "Post not found" } });
  });

  it("her profile, and hers among several, take her newest profile record; another's is untouched", async () => {
    appview.route("app.bsky.actor.getProfile", (_call, response) => answerJson(response, { ...oldAliceView(), description: "old words", followersCount: 3 }));
    const profile = await xrpc("app.bsky.actor.getProfile", { params: { actor: alice.did } });
    expect(profile.body).toEqual({ did: alice.did, handle: alice.handle, displayName: "Alice (new)", description: "new words", avatar: blobUrl(imageCid), followersCount: 3 });

    appview.route("app.bsky.actor.getProfiles", (_call, response) => answerJson(response, { profiles: [{ did: OTHER, handle: "other.test", displayName: "Other" }, { ...oldAliceView(), description: "old words" }] }));
    const profiles = await xrpc<{ profiles: Json[] }>("app.bsky.actor.getProfiles", { params: { actors: alice.did } });
    expect(profiles.body.profiles.map((p) => p.displayName)).toEqual(["Other", "Alice (new)"]);
  });

  it("when the app view is up to date, or names no revision, its answer is passed on as it came", async () => {
    const original = { feed: [], cursor: "same" };
    appview.route("app.bsky.feed.getTimeline", (call: StandInCall, response) => {
      if (call.query.rev === "none") {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify(original));
      } else answerJson(response, original, headRev);
    });
    for (const rev of ["head", "none"]) {
      const answer = await xrpc("app.bsky.feed.getTimeline", { params: { rev } });
      expect(answer.body).toEqual(original);
      expect(answer.headers.get("atproto-upstream-lag")).toBeNull();
    }
  });

  it("logged no unexpected error", () => {
    expect(server.output()).not.toMatch(/Unhandled server error|Adding the account's newest records/);
  });
});
