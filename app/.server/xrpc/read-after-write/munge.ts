import { isObject, type LocalRecord, type LocalRecords, type LocalViewer } from "./local-viewer.ts";

/**
 * How each read-after-write method's answer takes in the account's newest records (docs/decisions/0048), as the
 * reference PDS's handlers of these methods do (its api/app/bsky/): posts go into the timeline and the account's own
 * author feed by time and under the post they reply to in a thread; the account's own profile views take its newest
 * profile record. An answer of another shape than expected is given back as it came.
 */

type Json = Record<string, unknown>;
export type Munge = (viewer: LocalViewer, original: Json, local: LocalRecords) => Promise<Json>;

const THREAD_VIEW_POST = "app.bsky.feed.defs#threadViewPost";

export const MUNGES: Record<string, Munge> = {
  "app.bsky.feed.getTimeline": async (viewer, original, local) => {
    const feed = feedItems(original);
    return feed ? { ...original, feed: await withLocalPosts(viewer, feed, local.posts) } : original;
  },

  "app.bsky.feed.getAuthorFeed": async (viewer, original, local) => {
    let feed = feedItems(original);
    if (!feed || !isOwnFeed(feed, viewer.did)) return original;
    const profile = local.profile;
    if (profile) feed = feed.map((item) => (authorOf(item) === viewer.did ? withAuthor(item, viewer.withProfileBasics(item.post.author as Json, profile.record)) : item));
    return { ...original, feed: await withLocalPosts(viewer, feed, local.posts) };
  },

  "app.bsky.feed.getPostThread": async (viewer, original, local) => {
    if (!isObject(original.thread) || original.thread.$type !== THREAD_VIEW_POST) return original;
    return { ...original, thread: await withLocalReplies(viewer, original.thread, local.posts) };
  },

  "app.bsky.actor.getProfile": async (viewer, original, local) => {
    if (!local.profile || original.did !== viewer.did) return original;
    return viewer.withProfileDetails(original, local.profile.record);
  },

  "app.bsky.actor.getProfiles": async (viewer, original, local) => {
    const profile = local.profile;
    if (!profile || !Array.isArray(original.profiles)) return original;
    return { ...original, profiles: original.profiles.map((view: unknown) => (isObject(view) && view.did === viewer.did ? viewer.withProfileDetails(view, profile.record) : view)) };
  },
};

type FeedItem = Json & { post: Json & { indexedAt: string } };

function feedItems(original: Json): FeedItem[] | undefined {
  if (!Array.isArray(original.feed)) return undefined;
  const items = original.feed as unknown[];
  return items.every((item) => isObject(item) && isObject(item.post) && typeof item.post.indexedAt === "string") ? (items as FeedItem[]) : undefined;
}

function authorOf(item: FeedItem): unknown {
  return isObject(item.post.author) ? item.post.author.did : undefined;
}

function withAuthor(item: FeedItem, author: Json): FeedItem {
  return { ...item, post: { ...item.post, author } };
}

/** The account's own feed: it starts with a post of the account's, or a repost by it. */
function isOwnFeed(feed: FeedItem[], did: string): boolean {
  const first = feed[0];
  if (!first) return false;
  if (!first.reason) return authorOf(first) === did;
  return isObject(first.reason) && first.reason.$type === "app.bsky.feed.defs#reasonRepost" && isObject(first.reason.by) && first.reason.by.did === did;
}

/** Local posts newer than the feed's last item, each placed before the first older item (newest first). */
async function withLocalPosts(viewer: LocalViewer, feed: FeedItem[], posts: LocalRecord[]): Promise<FeedItem[]> {
  if (posts.length === 0) return feed;
  const lastTime = feed.at(-1)?.post.indexedAt ?? new Date(0).toISOString();
  const newestFirst = posts.filter((post) => post.indexedAt > lastTime).reverse();
  const result = [...feed];
  for (const local of newestFirst) {
    const post = (await viewer.postView(local)) as FeedItem["post"];
    const index = result.findIndex((item) => item.post.indexedAt < post.indexedAt);
    if (index >= 0) result.splice(index, 0, { post });
    else result.push({ post });
  }
  return result;
}

/** Local replies in the thread's tree (their root is its post, or its post's root), each under the post it answers. */
export async function withLocalReplies(viewer: LocalViewer, thread: Json, posts: LocalRecord[]): Promise<Json> {
  const post = isObject(thread.post) ? thread.post : {};
  const roots = [post.uri, replyRef(isObject(post.record) ? post.record : {}, "root")].filter((uri) => typeof uri === "string");
  let result = thread;
  for (const local of posts) {
    const root = replyRef(local.record, "root");
    if (root !== undefined && roots.includes(root)) result = await insertReply(viewer, result, local);
  }
  return result;
}

function replyRef(record: Json, which: "root" | "parent"): string | undefined {
  const reply = isObject(record.reply) ? record.reply : undefined;
  const ref = reply && isObject(reply[which]) ? reply[which] : undefined;
  return typeof ref?.uri === "string" ? ref.uri : undefined;
}

async function insertReply(viewer: LocalViewer, view: Json, post: LocalRecord): Promise<Json> {
  const uri = isObject(view.post) ? view.post.uri : undefined;
  const replies = Array.isArray(view.replies) ? (view.replies as unknown[]) : undefined;
  if (replyRef(post.record, "parent") === uri) {
    return { ...view, replies: [await threadPostView(viewer, post), ...(replies ?? [])] };
  }
  if (!replies) return view;
  const updated = await Promise.all(replies.map((reply) => (isObject(reply) && reply.$type === THREAD_VIEW_POST ? insertReply(viewer, reply, post) : reply)));
  return { ...view, replies: updated };
}

export async function threadPostView(viewer: LocalViewer, post: LocalRecord): Promise<Json> {
  return { $type: THREAD_VIEW_POST, post: await viewer.postView(post) };
}

/** The uri the highest post of a thread replies to, to ask the app view for what is above it. */
export function highestParentUri(thread: Json): string | undefined {
  let current = thread;
  while (isObject(current.parent) && current.parent.$type === THREAD_VIEW_POST) current = current.parent;
  const post = isObject(current.post) ? current.post : {};
  return replyRef(isObject(post.record) ? post.record : {}, "parent");
}
