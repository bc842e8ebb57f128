import type { StoredRecord } from "../../repo/repo-store.ts";

/**
 * Views of the account's own newest records in the app view's shapes (app.bsky.feed.defs#postView,
 * app.bsky.actor.defs#profileView*), built here for read-after-write (docs/decisions/0048), as the reference PDS's
 * LocalViewer builds them: counts of zero (the post was just made), the author from the account's profile record,
 * images as this server's com.atproto.sync.getBlob URLs, and quoted records asked of the app view.
 */

type Json = Record<string, unknown>;

/** A local record, as the munging reads it. */
export type LocalRecord = { uri: string; cid: string; indexedAt: string; record: Json };

/** What the account wrote after the app view's revision: every record counted, the profile and posts kept. */
export type LocalRecords = { count: number; profile: LocalRecord | null; posts: LocalRecord[] };

const PROFILE = "app.bsky.actor.profile";
const POST = "app.bsky.feed.post";

export function localRecordsOf(did: string, records: StoredRecord[]): LocalRecords {
  const local: LocalRecords = { count: records.length, profile: null, posts: [] };
  for (const stored of records) {
    if (!isObject(stored.value)) continue;
    const record: LocalRecord = {
      uri: `at://${did}/${stored.collection}/${stored.rkey}`,
      cid: stored.cid,
      indexedAt: new Date(stored.updatedAt).toISOString(),
      record: stored.value,
    };
    if (stored.collection === PROFILE && stored.rkey === "self") local.profile = record;
    else if (stored.collection === POST) local.posts.push(record);
  }
  return local;
}

/** The app view's answer to a read of `lxm` with `params`, or undefined when it has none (or may not be asked). */
export type AppviewRead = (lxm: string, params: Record<string, string | string[]>) => Promise<Json | undefined>;

export type ViewerContext = {
  did: string;
  handle: string;
  /** The issuer: where this server's blobs are served. */
  issuer: string;
  /** The account's profile record as it is now. */
  profile: () => Promise<Json | undefined>;
  appview: AppviewRead;
};

export class LocalViewer {
  constructor(private readonly context: ViewerContext) {}

  get did(): string {
    return this.context.did;
  }

  /** app.bsky.feed.defs#postView of a local post. */
  async postView(post: LocalRecord): Promise<Json> {
    const embed = isObject(post.record.embed) ? await this.embedView(post.record.embed) : undefined;
    return {
      uri: post.uri,
      cid: post.cid,
      author: await this.profileBasic(),
      record: post.record,
      ...(embed ? { embed } : {}),
      replyCount: 0,
      repostCount: 0,
      likeCount: 0,
      quoteCount: 0,
      indexedAt: post.indexedAt,
    };
  }

  /** app.bsky.actor.defs#profileViewBasic of the account, from its profile record. */
  async profileBasic(): Promise<Json> {
    return this.withProfileBasics({ did: this.context.did, handle: this.context.handle }, (await this.context.profile()) ?? {});
  }

  /** A profile view of the account with its display name and avatar as the local record has them. */
  withProfileBasics(view: Json, profile: Json): Json {
    const { avatar: _avatar, displayName: _displayName, ...rest } = view;
    const avatar = this.imageUrl(profile.avatar);
    return { ...rest, ...(typeof profile.displayName === "string" ? { displayName: profile.displayName } : {}), ...(avatar ? { avatar } : {}) };
  }

  /** …and its description and banner (app.bsky.actor.defs#profileViewDetailed). */
  withProfileDetails(view: Json, profile: Json): Json {
    const { description: _description, banner: _banner, ...rest } = this.withProfileBasics(view, profile);
    const banner = this.imageUrl(profile.banner);
    return { ...rest, ...(typeof profile.description === "string" ? { description: profile.description } : {}), ...(banner ? { banner } : {}) };
  }

  private async embedView(embed: Json): Promise<Json | undefined> {
    switch (embed.$type) {
      case "app.bsky.embed.images":
        return this.imagesView(embed);
      case "app.bsky.embed.external":
        return this.externalView(embed);
      case "app.bsky.embed.record":
        return this.recordView(embed);
      case "app.bsky.embed.recordWithMedia":
        return this.recordWithMediaView(embed);
      default:
        return undefined;
    }
  }

  private imagesView(embed: Json): Json {
    const images = Array.isArray(embed.images) ? embed.images.filter(isObject) : [];
    return {
      $type: "app.bsky.embed.images#view",
      images: images.map((image) => ({
        thumb: this.imageUrl(image.image),
        fullsize: this.imageUrl(image.image),
        alt: typeof image.alt === "string" ? image.alt : "",
        ...(isObject(image.aspectRatio) ? { aspectRatio: image.aspectRatio } : {}),
      })),
    };
  }

  private externalView(embed: Json): Json | undefined {
    if (!isObject(embed.external)) return undefined;
    const { uri, title, description, thumb } = embed.external;
    const thumbUrl = this.imageUrl(thumb);
    return { $type: "app.bsky.embed.external#view", external: { uri, title, description, ...(thumbUrl ? { thumb: thumbUrl } : {}) } };
  }

  private async recordView(embed: Json): Promise<Json> {
    const uri = isObject(embed.record) && typeof embed.record.uri === "string" ? embed.record.uri : "";
    const record = (await this.quotedRecord(uri)) ?? { $type: "app.bsky.embed.record#viewNotFound", uri, notFound: true };
    return { $type: "app.bsky.embed.record#view", record };
  }

  private async recordWithMediaView(embed: Json): Promise<Json | undefined> {
    const media = isObject(embed.media) ? embed.media : {};
    const mediaView = media.$type === "app.bsky.embed.images" ? this.imagesView(media) : media.$type === "app.bsky.embed.external" ? this.externalView(media) : undefined;
    if (!mediaView || !isObject(embed.record)) return undefined;
    return { $type: "app.bsky.embed.recordWithMedia#view", record: await this.recordView(embed.record), media: mediaView };
  }

  /** A quoted post, feed or list, as the app view shows it. */
  private async quotedRecord(uri: string): Promise<Json | undefined> {
    const collection = /^at:\/\/[^/]+\/([^/]+)\//.exec(uri)?.[1];
    if (collection === POST) {
      const answer = await this.context.appview("app.bsky.feed.getPosts", { uris: [uri] });
      const post = Array.isArray(answer?.posts) && isObject(answer.posts[0]) ? answer.posts[0] : undefined;
      if (!post) return undefined;
      return {
        $type: "app.bsky.embed.record#viewRecord",
        uri: post.uri,
        cid: post.cid,
        author: post.author,
        value: post.record,
        ...(post.labels ? { labels: post.labels } : {}),
        ...(post.embed ? { embeds: [post.embed] } : {}),
        indexedAt: post.indexedAt,
      };
    }
    if (collection === "app.bsky.feed.generator") {
      const answer = await this.context.appview("app.bsky.feed.getFeedGenerator", { feed: uri });
      return isObject(answer?.view) ? { ...answer.view, $type: "app.bsky.feed.defs#generatorView" } : undefined;
    }
    if (collection === "app.bsky.graph.list") {
      const answer = await this.context.appview("app.bsky.graph.getList", { list: uri });
      return isObject(answer?.list) ? { ...answer.list, $type: "app.bsky.graph.defs#listView" } : undefined;
    }
    return undefined;
  }

  /** The URL of a blob the account's record references, served by this server; undefined for anything else. */
  private imageUrl(blob: unknown): string | undefined {
    const cid = blobCid(blob);
    if (!cid) return undefined;
    return `${this.context.issuer}/xrpc/com.atproto.sync.getBlob?did=${encodeURIComponent(this.context.did)}&cid=${encodeURIComponent(cid)}`;
  }
}

/** A blob reference's CID: `{$type: "blob", ref: {$link}}`, or the legacy `{cid}`. */
function blobCid(blob: unknown): string | undefined {
  if (!isObject(blob)) return undefined;
  if (isObject(blob.ref) && typeof blob.ref.$link === "string") return blob.ref.$link;
  return typeof blob.cid === "string" ? blob.cid : undefined;
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
