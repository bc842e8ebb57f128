import { AccountPermission, BlobPermission, IdentityPermission, RepoPermission, RpcPermission } from "@atproto/oauth-scopes";

/** One power a broad permission includes, in plain words; `warning` marks what can destroy or take over. */
export type IncludedPower = { title: string; warning?: boolean };

/**
 * One requested permission in plain words, for the consent screen. A broad one (transition:generic) also lists
 * what it includes and what it leaves out, which the screen folds under its summary.
 */
export type PermissionDescription = { scope: string; title: string; detail?: string; warning?: boolean; includes?: IncludedPower[]; excludes?: string };

const listFormat = new Intl.ListFormat("en", { style: "long", type: "conjunction" });

function list(values: readonly string[]): string {
  return listFormat.format(values.map((value) => (value === "*" ? "any" : value)));
}

const REPO_VERBS: Record<string, string> = { create: "create", update: "change", delete: "delete" };

const IDENTITY_TAKEOVER =
  "Change your handle, your signing keys and which server hosts your account. An app with this permission can take over your account: only allow apps you fully trust.";

export function describeScopeValue(scope: string): PermissionDescription {
  switch (scope) {
    case "atproto":
      return { scope, title: "Know who you are", detail: "Your account identifier (DID) and handle." };
    case "transition:generic":
      // Not "like the official app": the words must not lend an app the authority of another (the review of issue 11).
      // What it covers: docs/architecture.md, "Scopes and the data server" (everything but account: and chat).
      return {
        scope,
        title: "Act on your account in almost every way",
        detail: "Post, like and follow, change or delete any of your records, upload files, change your handle, and use other services as you.",
        warning: true,
        includes: [
          { title: "Create posts, likes, follows and any other kind of record" },
          { title: "Change or delete any of your records, your profile included", warning: true },
          { title: "Upload images, videos and other files" },
          { title: "Change your handle and other identity settings", warning: true },
          { title: "See and change your preferences" },
          { title: "Use other services as you, such as your feeds and notifications" },
        ],
        excludes: "Not included: your email address, your direct messages, and account settings such as deactivating your account.",
      };
    case "transition:email":
      return { scope, title: "See your email address", detail: "Including whether it is confirmed." };
    case "transition:chat.bsky":
      return { scope, title: "Read and send your direct messages", detail: "Bluesky chat (chat.bsky.*).", warning: true };
  }
  const repo = RepoPermission.fromString(scope);
  if (repo) {
    const verbs = list(repo.action.map((action) => REPO_VERBS[action] ?? action));
    const what = repo.collection.includes("*") ? "any kind of record" : `records of type ${list(repo.collection)}`;
    // Deleting is destructive whatever the kind of record.
    return { scope, title: `${capitalize(verbs)} ${what} in your repository`, ...(repo.action.includes("delete") || repo.collection.includes("*") ? { warning: true } : {}) };
  }
  const rpc = RpcPermission.fromString(scope);
  if (rpc) {
    const methods = rpc.lxm.includes("*") ? "any method" : list(rpc.lxm);
    return { scope, title: `Call ${methods} on ${serviceLabel(rpc.aud)} as you` };
  }
  const blob = BlobPermission.fromString(scope);
  if (blob) return { scope, title: `Upload files (${list(blob.accept.map(mediaTypeLabel))})` };
  const account = AccountPermission.fromString(scope);
  if (account) return describeAccount(scope, account);
  const identity = IdentityPermission.fromString(scope);
  if (identity) {
    return identity.attr === "handle"
      ? { scope, title: "Change your handle", detail: "People will find you under the new name; links to your old handle stop working.", warning: true }
      : { scope, title: "Control your identity", detail: IDENTITY_TAKEOVER, warning: true };
  }
  return { scope, title: scope };
}

export function describeScope(scope: string): PermissionDescription[] {
  return scope.split(" ").filter(Boolean).map(describeScopeValue);
}

function describeAccount(scope: string, permission: AccountPermission): PermissionDescription {
  const manage = permission.action.includes("manage");
  switch (permission.attr) {
    case "email":
      return manage
        ? { scope, title: "See and change your email address", detail: "Whoever controls your email can reset your password.", warning: true }
        : { scope, title: "See your email address", detail: "Including whether it is confirmed." };
    case "repo":
      return manage
        ? { scope, title: "Import or replace your whole repository", detail: "Everything you have posted could be overwritten.", warning: true }
        : { scope, title: "See the state of your repository" };
    case "status":
      return manage
        ? { scope, title: "Deactivate or reactivate your account", detail: "While deactivated, your posts and profile are hidden.", warning: true }
        : { scope, title: "See whether your account is active" };
  }
  return { scope, title: `${manage ? "Manage" : "See"} your account ${permission.attr as string}`, warning: manage };
}

/* ------------------------------------------------------------------ */
/* Grouping by family, for the consent screen and the connected apps. */

/** One collection of the repository table: which of create/update/delete the app may do, and its name in plain words. */
export type RepositoryRow = { collection: string; label: string; create: boolean; update: boolean; delete: boolean };

/** The media types an app may upload. */
export type UploadRow = { accept: string; label: string };

/** Methods an app may call on one service, as the person: each by its NSID and in plain words. */
export type CallGroup = { service: string; serviceLabel: string; methods: { nsid: string; label: string }[]; anyMethod: boolean };

/** A scope's permissions grouped by family, in plain words. */
export type PermissionGroups = {
  /** atproto and the broad transition: scopes. */
  general: PermissionDescription[];
  /** Repository writes: one row per collection ("*" first, as "Any kind of record"). */
  repository: RepositoryRow[];
  uploads: UploadRow[];
  calls: CallGroup[];
  /** account: permissions (and transition:email), with warnings on the powerful ones. */
  account: PermissionDescription[];
  /** identity: permissions; identity:* says it can take over the account. */
  identity: PermissionDescription[];
  /** Values this screen does not know, shown as they are. */
  other: PermissionDescription[];
  /** True when any permission is dangerous enough for a warning. */
  hasWarnings: boolean;
};

/** Friendly names for the collections people meet most often. */
const COLLECTION_LABELS: Record<string, string> = {
  "app.bsky.feed.post": "Posts",
  "app.bsky.feed.like": "Likes",
  "app.bsky.feed.repost": "Reposts",
  "app.bsky.feed.threadgate": "Who can reply to your posts",
  "app.bsky.feed.postgate": "Who can quote your posts",
  "app.bsky.feed.generator": "Custom feeds",
  "app.bsky.graph.follow": "Follows",
  "app.bsky.graph.block": "Blocks",
  "app.bsky.graph.list": "Lists",
  "app.bsky.graph.listitem": "People on your lists",
  "app.bsky.graph.listblock": "Blocked lists",
  "app.bsky.graph.starterpack": "Starter packs",
  "app.bsky.actor.profile": "Your profile",
  "chat.bsky.actor.declaration": "Who can message you",
};

const MEDIA_LABELS: Record<string, string> = {
  "*/*": "Any kind of file",
  "image/*": "Images of any format",
  "video/*": "Videos of any format",
  "audio/*": "Audio of any format",
  "text/*": "Text files of any format",
  "application/*": "Documents and other application files",
};

const MEDIA_KINDS: Record<string, string> = { image: "images", video: "videos", audio: "audio", text: "text files" };

/** image/* → "Images of any format", video/mp4 → "MP4 videos", anything else as it is. */
function mediaTypeLabel(accept: string): string {
  const known = MEDIA_LABELS[accept];
  if (known) return known;
  const [kind = "", subtype = ""] = accept.split("/");
  const kinds = MEDIA_KINDS[kind];
  if (kinds && /^[a-z0-9.+-]+$/i.test(subtype)) return `${subtype.replace(/^x-/, "").toUpperCase()} ${kinds}`;
  return accept;
}

/**
 * The plain words of an NSID's name: app.bsky.feed.getTimeline → "Get timeline", com.example.calendar.rsvp →
 * "Rsvp". Only a reading aid: the NSID itself is always shown beside it.
 */
export function nsidWords(nsid: string): string {
  const name = nsid.split(".").pop() ?? nsid;
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .toLowerCase()
    .trim();
  return capitalize(words || nsid);
}

/** did:web:api.bsky.app#bsky_appview → "api.bsky.app (bsky_appview)". */
function serviceLabel(aud: string): string {
  if (aud === "*") return "any service";
  const [did = aud, fragment] = aud.split("#");
  const host = did.startsWith("did:web:") ? decodeURIComponent(did.slice("did:web:".length)) : did;
  return fragment ? `${host} (${fragment})` : host;
}

/**
 * Groups a scope's values by family (repository writes, uploads, calls,
 * account, identity), merging values of the same family so a person sees
 * one table of collections × actions instead of a list of scope strings.
 */
export function groupPermissions(scope: string): PermissionGroups {
  const groups: PermissionGroups = { general: [], repository: [], uploads: [], calls: [], account: [], identity: [], other: [], hasWarnings: false };
  const repository = new Map<string, RepositoryRow>();
  const uploads = new Set<string>();
  const calls = new Map<string, Set<string>>();
  const values = [...new Set(scope.split(" ").filter(Boolean))];

  for (const value of values) {
    if (value === "atproto" || value === "transition:generic" || value === "transition:chat.bsky") {
      groups.general.push(describeScopeValue(value));
      continue;
    }
    if (value === "transition:email") {
      groups.account.push(describeScopeValue(value));
      continue;
    }
    const repo = RepoPermission.fromString(value);
    if (repo) {
      for (const collection of repo.collection) {
        const label = collection === "*" ? "Any kind of record" : (COLLECTION_LABELS[collection] ?? `${nsidWords(collection)} records`);
        const row = repository.get(collection) ?? { collection, label, create: false, update: false, delete: false };
        for (const action of repo.action) row[action] = true;
        repository.set(collection, row);
      }
      continue;
    }
    const blob = BlobPermission.fromString(value);
    if (blob) {
      for (const accept of blob.accept) uploads.add(accept);
      continue;
    }
    const rpc = RpcPermission.fromString(value);
    if (rpc) {
      const methods = calls.get(rpc.aud) ?? new Set<string>();
      for (const lxm of rpc.lxm) methods.add(lxm);
      calls.set(rpc.aud, methods);
      continue;
    }
    const account = AccountPermission.fromString(value);
    if (account) {
      groups.account.push(describeAccount(value, account));
      continue;
    }
    const identity = IdentityPermission.fromString(value);
    if (identity) {
      groups.identity.push(describeScopeValue(value));
      continue;
    }
    groups.other.push(describeScopeValue(value));
  }

  // "Any kind of record" first, then the collections in the order asked.
  groups.repository = [...repository.values()].sort((a, b) => Number(b.collection === "*") - Number(a.collection === "*"));
  groups.uploads = uploads.has("*/*") ? [{ accept: "*/*", label: mediaTypeLabel("*/*") }] : [...uploads].map((accept) => ({ accept, label: mediaTypeLabel(accept) }));
  groups.calls = [...calls].map(([service, methods]) => ({
    service,
    serviceLabel: serviceLabel(service),
    methods: methods.has("*") ? [] : [...methods].map((nsid) => ({ nsid, label: nsidWords(nsid) })),
    anyMethod: methods.has("*"),
  }));
  // identity:* covers identity:handle: show only the stronger one.
  const isFullIdentity = (permission: PermissionDescription) => IdentityPermission.fromString(permission.scope)?.attr === "*";
  if (groups.identity.some(isFullIdentity)) groups.identity = groups.identity.filter(isFullIdentity);
  const warned = [...groups.general, ...groups.account, ...groups.identity].some((permission) => permission.warning);
  // Deleting records of any kind is destructive: a caution too.
  groups.hasWarnings = warned || groups.repository.some((row) => row.collection === "*" || row.delete) || groups.calls.some((call) => call.anyMethod && call.service === "*");
  return groups;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
