import { AccountPermission, BlobPermission, IdentityPermission, RepoPermission, RpcPermission } from "@atproto/oauth-scopes";
import { listOf, type Translate } from "../../i18n/translate.ts";

/*
 * Scopes in plain words, in the screen's language (docs/decisions/0019): every text comes from the catalogue's
 * permissions namespace (app/i18n/locales/<language>/permissions.json) through `t`. Technical names (NSIDs, media
 * types, services) stay as they are, beside the words.
 */

/** One power a broad permission includes, in plain words; `warning` marks what can destroy or take over. */
export type IncludedPower = { title: string; warning?: boolean };

/**
 * One requested permission in plain words, for the consent screen. A broad one (transition:generic) also lists
 * what it includes and what it leaves out, which the screen folds under its summary.
 */
export type PermissionDescription = { scope: string; title: string; detail?: string; warning?: boolean; includes?: IncludedPower[]; excludes?: string };

const REPO_ACTIONS = ["create", "update", "delete"] as const;

export function describeScopeValue(scope: string, t: Translate): PermissionDescription {
  switch (scope) {
    case "atproto":
      return { scope, title: t("permissions:scope.atproto.title"), detail: t("permissions:scope.atproto.detail") };
    case "transition:generic":
      // Not "like the official app": the words must not lend an app the authority of another (the review of issue 11).
      // What it covers: docs/architecture.md, "Scopes and the data server" (everything but account: and chat).
      return {
        scope,
        title: t("permissions:scope.generic.title"),
        detail: t("permissions:scope.generic.detail"),
        warning: true,
        includes: [
          { title: t("permissions:scope.generic.includes.create") },
          { title: t("permissions:scope.generic.includes.changeDelete"), warning: true },
          { title: t("permissions:scope.generic.includes.upload") },
          { title: t("permissions:scope.generic.includes.handle"), warning: true },
          { title: t("permissions:scope.generic.includes.preferences") },
          { title: t("permissions:scope.generic.includes.services") },
          { title: t("permissions:scope.generic.includes.moveAccount"), warning: true },
        ],
        excludes: t("permissions:scope.generic.excludes"),
      };
    case "transition:email":
      return { scope, title: t("permissions:scope.email.title"), detail: t("permissions:scope.email.detail") };
    case "transition:chat.bsky":
      return { scope, title: t("permissions:scope.chat.title"), detail: t("permissions:scope.chat.detail"), warning: true };
  }
  const repo = RepoPermission.fromString(scope);
  if (repo) {
    const actions = listOf(
      t,
      REPO_ACTIONS.filter((action) => repo.action.includes(action)).map((action) => t(`permissions:scope.repo.verbs.${action}`)),
    );
    const title = repo.collection.includes("*")
      ? t("permissions:scope.repo.any", { actions })
      : t("permissions:scope.repo.types", { actions, types: listOf(t, repo.collection) });
    // Deleting is destructive whatever the kind of record.
    return { scope, title, ...(repo.action.includes("delete") || repo.collection.includes("*") ? { warning: true } : {}) };
  }
  const rpc = RpcPermission.fromString(scope);
  if (rpc) {
    const methods = rpc.lxm.includes("*") ? t("permissions:scope.rpc.anyMethod") : listOf(t, rpc.lxm);
    return { scope, title: t("permissions:scope.rpc.title", { methods, service: serviceLabel(rpc.aud, t) }) };
  }
  const blob = BlobPermission.fromString(scope);
  if (blob) return { scope, title: t("permissions:scope.blob", { types: listOf(t, blob.accept.map((accept) => mediaTypeLabel(accept, t))) }) };
  const account = AccountPermission.fromString(scope);
  if (account) return describeAccount(scope, account, t);
  const identity = IdentityPermission.fromString(scope);
  if (identity) {
    return identity.attr === "handle"
      ? { scope, title: t("permissions:scope.handle.title"), detail: t("permissions:scope.handle.detail"), warning: true }
      : { scope, title: t("permissions:scope.identity.title"), detail: t("permissions:scope.identity.detail"), warning: true };
  }
  return { scope, title: scope };
}

export function describeScope(scope: string, t: Translate): PermissionDescription[] {
  return scope
    .split(" ")
    .filter(Boolean)
    .map((value) => describeScopeValue(value, t));
}

const CREATE_ACCOUNT = "com.atproto.server.createAccount";

/**
 * An rpc: permission that covers com.atproto.server.createAccount lets the app obtain a service token with which
 * that service opens an account in the person's name: the first step of moving the account away (getServiceAuth,
 * xrpc/handlers/server.ts). Said in plain words, with a caution.
 */
function describeMoveAccount(scope: string, aud: string, t: Translate): PermissionDescription {
  const service = serviceLabel(aud, t);
  return { scope, title: t("permissions:scope.moveAccount.title", { service }), detail: t("permissions:scope.moveAccount.detail", { service }), warning: true };
}

function describeAccount(scope: string, permission: AccountPermission, t: Translate): PermissionDescription {
  const manage = permission.action.includes("manage");
  switch (permission.attr) {
    case "email":
      return manage
        ? { scope, title: t("permissions:scope.emailManage.title"), detail: t("permissions:scope.emailManage.detail"), warning: true }
        : { scope, title: t("permissions:scope.email.title"), detail: t("permissions:scope.email.detail") };
    case "repo":
      return manage
        ? { scope, title: t("permissions:scope.repoManage.title"), detail: t("permissions:scope.repoManage.detail"), warning: true }
        : { scope, title: t("permissions:scope.repoRead") };
    case "status":
      return manage
        ? { scope, title: t("permissions:scope.statusManage.title"), detail: t("permissions:scope.statusManage.detail"), warning: true }
        : { scope, title: t("permissions:scope.statusRead") };
  }
  const attribute = permission.attr as string;
  return { scope, title: manage ? t("permissions:scope.accountManage", { attribute }) : t("permissions:scope.accountRead", { attribute }), warning: manage };
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

/** Friendly names for the collections people meet most often: their keys under permissions:collections. */
const COLLECTION_LABELS = {
  "app.bsky.feed.post": "post",
  "app.bsky.feed.like": "like",
  "app.bsky.feed.repost": "repost",
  "app.bsky.feed.threadgate": "threadgate",
  "app.bsky.feed.postgate": "postgate",
  "app.bsky.feed.generator": "generator",
  "app.bsky.graph.follow": "follow",
  "app.bsky.graph.block": "block",
  "app.bsky.graph.list": "list",
  "app.bsky.graph.listitem": "listitem",
  "app.bsky.graph.listblock": "listblock",
  "app.bsky.graph.starterpack": "starterpack",
  "app.bsky.actor.profile": "profile",
  "chat.bsky.actor.declaration": "chatDeclaration",
} as const;

function collectionLabel(collection: string, t: Translate): string {
  if (collection === "*") return t("permissions:anyKindOfRecord");
  const known = COLLECTION_LABELS[collection as keyof typeof COLLECTION_LABELS];
  return known ? t(`permissions:collections.${known}`) : t("permissions:namedRecords", { name: nsidWords(collection) });
}

/** Media ranges with words of their own: their keys under permissions:media. */
const MEDIA_LABELS = { "*/*": "any", "image/*": "image", "video/*": "video", "audio/*": "audio", "text/*": "text", "application/*": "application" } as const;

const MEDIA_KINDS = ["image", "video", "audio", "text"] as const;

/** image/* → "Images of any format", video/mp4 → "MP4 videos", anything else as it is. */
function mediaTypeLabel(accept: string, t: Translate): string {
  const known = MEDIA_LABELS[accept as keyof typeof MEDIA_LABELS];
  if (known) return t(`permissions:media.${known}`);
  const [kind = "", subtype = ""] = accept.split("/");
  const kinds = MEDIA_KINDS.find((one) => one === kind);
  if (kinds && /^[a-z0-9.+-]+$/i.test(subtype)) return t(`permissions:media.typed.${kinds}`, { format: subtype.replace(/^x-/, "").toUpperCase() });
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

/** Service methods with words of their own in every language: their keys under permissions:methods. */
const METHOD_LABELS = {
  "app.bsky.feed.getTimeline": "getTimeline",
  "app.bsky.feed.getAuthorFeed": "getAuthorFeed",
  "app.bsky.feed.getPostThread": "getPostThread",
  "app.bsky.feed.getPosts": "getPosts",
  "app.bsky.feed.getFeed": "getFeed",
  "app.bsky.feed.searchPosts": "searchPosts",
  "app.bsky.actor.getProfile": "getProfile",
  "app.bsky.actor.getProfiles": "getProfiles",
  "app.bsky.actor.searchActors": "searchActors",
  "app.bsky.actor.getPreferences": "getPreferences",
  "app.bsky.actor.putPreferences": "putPreferences",
  "app.bsky.graph.getFollowers": "getFollowers",
  "app.bsky.graph.getFollows": "getFollows",
  "app.bsky.notification.listNotifications": "listNotifications",
  "app.bsky.notification.getUnreadCount": "getUnreadCount",
  "app.bsky.notification.updateSeen": "updateSeen",
  "chat.bsky.convo.listConvos": "listConvos",
  "chat.bsky.convo.getMessages": "getMessages",
  "chat.bsky.convo.sendMessage": "sendMessage",
} as const;

/**
 * A service method in the screen's language: its own words when it is a known one, else a generic phrase with its
 * name (issue 19: "Get timeline" stayed English on the French screen). English reads the name as words
 * (getEvents → "Get events"); other languages keep the name as it is inside their phrase
 * (permissions:otherMethodName says which). The NSID itself is always shown beside it.
 */
export function methodLabel(nsid: string, t: Translate): string {
  const known = METHOD_LABELS[nsid as keyof typeof METHOD_LABELS];
  if (known) return t(`permissions:methods.${known}`);
  const name = nsid.split(".").pop() || nsid;
  return t("permissions:otherMethod", { name: t("permissions:otherMethodName") === "words" ? nsidWords(nsid) : name });
}

/** did:web:api.bsky.app#bsky_appview → "api.bsky.app (bsky_appview)". */
function serviceLabel(aud: string, t: Translate): string {
  if (aud === "*") return t("permissions:scope.rpc.anyService");
  const [did = aud, fragment] = aud.split("#");
  const host = did.startsWith("did:web:") ? decodeURIComponent(did.slice("did:web:".length)) : did;
  return fragment ? `${host} (${fragment})` : host;
}

/**
 * Groups a scope's values by family (repository writes, uploads, calls,
 * account, identity), merging values of the same family so a person sees
 * one table of collections × actions instead of a list of scope strings.
 */
export function groupPermissions(scope: string, t: Translate): PermissionGroups {
  const groups: PermissionGroups = { general: [], repository: [], uploads: [], calls: [], account: [], identity: [], other: [], hasWarnings: false };
  const repository = new Map<string, RepositoryRow>();
  const uploads = new Set<string>();
  const calls = new Map<string, Set<string>>();
  const values = [...new Set(scope.split(" ").filter(Boolean))];

  for (const value of values) {
    if (value === "atproto" || value === "transition:generic" || value === "transition:chat.bsky") {
      groups.general.push(describeScopeValue(value, t));
      continue;
    }
    if (value === "transition:email") {
      groups.account.push(describeScopeValue(value, t));
      continue;
    }
    const repo = RepoPermission.fromString(value);
    if (repo) {
      for (const collection of repo.collection) {
        const label = collectionLabel(collection, t);
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
      if (rpc.lxm.includes(CREATE_ACCOUNT) || rpc.lxm.includes("*")) groups.account.push(describeMoveAccount(value, rpc.aud, t));
      continue;
    }
    const account = AccountPermission.fromString(value);
    if (account) {
      groups.account.push(describeAccount(value, account, t));
      continue;
    }
    const identity = IdentityPermission.fromString(value);
    if (identity) {
      groups.identity.push(describeScopeValue(value, t));
      continue;
    }
    groups.other.push(describeScopeValue(value, t));
  }

  // "Any kind of record" first, then the collections in the order asked.
  groups.repository = [...repository.values()].sort((a, b) => Number(b.collection === "*") - Number(a.collection === "*"));
  groups.uploads = uploads.has("*/*")
    ? [{ accept: "*/*", label: mediaTypeLabel("*/*", t) }]
    : [...uploads].map((accept) => ({ accept, label: mediaTypeLabel(accept, t) }));
  groups.calls = [...calls].map(([service, methods]) => ({
    service,
    serviceLabel: serviceLabel(service, t),
    methods: methods.has("*") ? [] : [...methods].map((nsid) => ({ nsid, label: methodLabel(nsid, t) })),
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

/* ------------------------------------------------------------------ */
/* The consent screen's summary: one line per family, in plain words.  */

/** One line of the summary: a family of permissions ("Records in your repository") and what it covers. */
export type SummaryLine = { key: string; family: string; items: string[] };

type RepoAction = (typeof REPO_ACTIONS)[number];

/** The value that gives the email address, which has a line of its own when it may be declined (the "Share" box). */
const EMAIL_VALUE = /^(transition:email|account:email)(\?|$)/;

/**
 * What an app asks for directly, one line per family in plain words, for the consent screen's first view (issue 19);
 * the details are folded under it. A line never says more than the grant allows (issue 28, item 20): records the app
 * may only create are "Records in your repository (create only)", not the family's bare name, which stands for
 * creating, changing and deleting; a service the app may call for one method names that method, for a few methods
 * their number, and only `rpc:*` reads "Anything on …". Cautions (deleting, the account's and identity's powers) are
 * not in the summary: the screen shows each in full beside it. With `hideEmail`, the email address is left out (the
 * "Share your email address" box stands for it).
 */
export function summarizePermissions(groups: PermissionGroups, t: Translate, options: { hideEmail: boolean }): SummaryLine[] {
  const plain = (permissions: PermissionDescription[]) =>
    permissions.filter((permission) => !permission.warning && !(options.hideEmail && EMAIL_VALUE.test(permission.scope))).map((permission) => permission.title);
  const lines: SummaryLine[] = [
    ...recordLines(groups.repository, t),
    { key: "uploads", family: t("permissions:uploads"), items: groups.uploads.map((upload) => upload.label) },
    { key: "calls", family: t("permissions:calls"), items: groups.calls.map((call) => callSummary(call, t)) },
    { key: "account", family: t("permissions:account"), items: plain(groups.account) },
    { key: "identity", family: t("permissions:identity"), items: plain(groups.identity) },
    { key: "other", family: t("permissions:other"), items: plain(groups.other) },
  ];
  return lines.filter((line) => line.items.length > 0);
}

/**
 * The records, one line per set of actions: every action under the family's own name, a subset said in it
 * ("create only", "create and change only"), in the order create, change, delete.
 */
function recordLines(rows: readonly RepositoryRow[], t: Translate): SummaryLine[] {
  const byActions = new Map<string, { actions: RepoAction[]; items: string[] }>();
  for (const row of rows) {
    const actions = REPO_ACTIONS.filter((action) => row[action]);
    const key = actions.join("+");
    const line = byActions.get(key) ?? { actions, items: [] };
    line.items.push(row.label);
    byActions.set(key, line);
  }
  return [...byActions.values()]
    .sort((a, b) => b.actions.length - a.actions.length || REPO_ACTIONS.indexOf(a.actions[0]!) - REPO_ACTIONS.indexOf(b.actions[0]!))
    .map(({ actions, items }) => ({
      key: `records-${actions.join("+")}`,
      family:
        actions.length === REPO_ACTIONS.length
          ? t("permissions:records")
          : t("permissions:summary.recordsOnly", { actions: listOf(t, actions.map((action) => t(`permissions:scope.repo.verbs.${action}`))) }),
      items,
    }));
}

/** One service's calls in a few words: the one method by name, else how many, or anything for rpc:*. */
function callSummary(call: CallGroup, t: Translate): string {
  if (call.anyMethod) return t("permissions:anythingOn", { service: call.serviceLabel });
  const [only] = call.methods;
  if (call.methods.length === 1 && only) return t("permissions:summary.callOn", { method: only.label, service: call.serviceLabel });
  return t("permissions:summary.callsOn", { count: call.methods.length, service: call.serviceLabel });
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
