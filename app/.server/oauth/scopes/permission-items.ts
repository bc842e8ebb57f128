import { AccountPermission, BlobPermission, IdentityPermission, RepoPermission, RpcPermission } from "@atproto/oauth-scopes";
import { isNsid } from "../../repo/identifiers.ts";

/*
 * Permissions a person takes back from an app after allowing them (docs/decisions/0053). A granted scope value can be
 * broad (`transition:generic`, `repo:*`, `rpc:*?aud=…`); what a person takes back is one item of it: one action on one
 * kind of record (or on every kind), one media range of uploads, one method of one service (or every method, every
 * service), the chat, one account attribute's read or management, the handle or the whole identity. A grant and the
 * remembered consent keep the items taken back beside their scope, space-separated in the text `format` writes; every
 * check refuses what an item takes back, whatever the scope says, and the scope a token response names leaves out
 * what the scope syntax can leave out (`narrowScope`).
 */

export type RepoAction = "create" | "update" | "delete";
export const REPO_ACTIONS: readonly RepoAction[] = ["create", "update", "delete"];

export type AccountAttribute = "email" | "repo" | "status";
export type AccountAction = "read" | "manage";

/** One permission a person can take back. `*` stands for every collection, method or service. */
export type PermissionItem =
  | { kind: "repo"; collection: string; action: RepoAction }
  | { kind: "blob"; accept: string }
  | { kind: "rpc"; lxm: string; aud: string }
  | { kind: "chat" }
  | { kind: "account"; attr: AccountAttribute; action: AccountAction }
  | { kind: "identity"; attr: "handle" | "*" };

const CHAT = "transition:chat.bsky";
const GENERIC = "transition:generic";
const EMAIL = "transition:email";
const CHAT_PREFIX = "chat.bsky.";

/** A media range as a blob permission accepts it: `*\/*`, `type/*` or `type/subtype`. */
const MEDIA_RANGE = /^(\*\/\*|[a-z0-9][a-z0-9!#$&^_.+-]*\/(\*|[a-z0-9][a-z0-9!#$&^_.+-]*))$/i;
/** A service reference (`did:…#service`) as an rpc permission names it. */
const SERVICE_REF = /^did:[a-z]+:[a-zA-Z0-9._:%-]+#[a-zA-Z0-9._~-]+$/;

/** The item as text: the scope value that grants exactly it, where scope syntax has one (`rpc:*?aud=*` aside). */
export function formatItem(item: PermissionItem): string {
  switch (item.kind) {
    case "repo":
      return `repo:${item.collection}?action=${item.action}`;
    case "blob":
      return `blob:${item.accept}`;
    case "rpc":
      // The service's fragment encoded, as the scope syntax writes it (the library reads both).
      return `rpc:${item.lxm}?aud=${item.aud.replace("#", "%23")}`;
    case "chat":
      return CHAT;
    case "account":
      return `account:${item.attr}?action=${item.action}`;
    case "identity":
      return `identity:${item.attr}`;
  }
}

/** The item `formatItem` wrote, or undefined for anything else (the form's value is checked with this). */
export function parseItem(text: string): PermissionItem | undefined {
  if (text === CHAT) return { kind: "chat" };
  let match = /^repo:([^?]+)\?action=(create|update|delete)$/.exec(text);
  if (match) return match[1] === "*" || isNsid(match[1]!) ? { kind: "repo", collection: match[1]!, action: match[2] as RepoAction } : undefined;
  match = /^blob:(.+)$/.exec(text);
  if (match) return MEDIA_RANGE.test(match[1]!) ? { kind: "blob", accept: match[1]!.toLowerCase() } : undefined;
  match = /^rpc:([^?]+)\?aud=(.+)$/.exec(text);
  if (match) {
    const [, lxm, encoded] = match as unknown as [string, string, string];
    const aud = encoded.replace(/%23/i, "#");
    return (lxm === "*" || isNsid(lxm)) && (aud === "*" || SERVICE_REF.test(aud)) ? { kind: "rpc", lxm, aud } : undefined;
  }
  match = /^account:(email|repo|status)\?action=(read|manage)$/.exec(text);
  if (match) return { kind: "account", attr: match[1] as AccountAttribute, action: match[2] as AccountAction };
  match = /^identity:(handle|\*)$/.exec(text);
  if (match) return { kind: "identity", attr: match[1] as "handle" | "*" };
  return undefined;
}

/** The items of a stored list (space-separated), the unreadable left out. */
export function parseItems(text: string): PermissionItem[] {
  return text
    .split(" ")
    .filter(Boolean)
    .map(parseItem)
    .filter((item): item is PermissionItem => item !== undefined);
}

/** `existing` with `added`, each once, in the order first seen (the stored form). */
export function joinItems(existing: string, added: readonly PermissionItem[]): string {
  return [...new Set([...existing.split(" ").filter(Boolean), ...added.map(formatItem)])].join(" ");
}

function mediaCovers(range: string, mime: string): boolean {
  if (range === "*/*") return true;
  const [type, subtype] = range.split("/");
  const [mimeType] = mime.split("/");
  return subtype === "*" ? type === mimeType : range === mime;
}

/** Whether two media ranges share any media type. */
function mediaOverlap(a: string, b: string): boolean {
  return mediaCovers(a, b) || mediaCovers(b, a);
}

/** The narrower of two overlapping media ranges. */
function narrowerRange(a: string, b: string): string {
  return mediaCovers(a, b) ? b : a;
}

/* ------------------------------------------------------------------ */
/* What an item takes back from a request.                            */

/** Whether `items` take back a write of `action` to `collection`. */
export function withdrawsRepo(items: readonly PermissionItem[], collection: string, action: RepoAction): boolean {
  return items.some((item) => item.kind === "repo" && item.action === action && (item.collection === "*" || item.collection === collection));
}

/** Whether `items` take back uploads of `mime`. */
export function withdrawsBlob(items: readonly PermissionItem[], mime: string): boolean {
  return items.some((item) => item.kind === "blob" && mediaCovers(item.accept, mime));
}

/**
 * Whether an rpc item reaches a call of `lxm` to `aud`. `rpc * *` is `transition:generic`'s calls, which leave out the
 * chat (the scope syntax has no such value: `rpc:*?aud=*` is refused), so it does not reach chat.bsky.* either.
 */
function rpcReaches(item: { lxm: string; aud: string }, lxm: string, aud: string): boolean {
  if (item.lxm === "*" && item.aud === "*") return !lxm.startsWith(CHAT_PREFIX);
  return (item.lxm === "*" || item.lxm === lxm) && (item.aud === "*" || item.aud === aud);
}

/** Whether `items` take back calls of `lxm` to `aud` (`did#service`). */
export function withdrawsRpc(items: readonly PermissionItem[], lxm: string, aud: string): boolean {
  return items.some((item) => (item.kind === "chat" && lxm.startsWith(CHAT_PREFIX)) || (item.kind === "rpc" && rpcReaches(item, lxm, aud)));
}

/** Whether `items` take back the account's `attr` for `action`: taking back reading it takes back managing it too. */
export function withdrawsAccount(items: readonly PermissionItem[], attr: string, action: AccountAction): boolean {
  return items.some((item) => item.kind === "account" && item.attr === attr && (item.action === "read" || item.action === action));
}

/** Whether `items` take back the identity's `attr` (`*`: the whole identity, which includes the handle). */
export function withdrawsIdentity(items: readonly PermissionItem[], attr: "handle" | "*"): boolean {
  return items.some((item) => item.kind === "identity" && (item.attr === "*" || attr === "*" || item.attr === attr));
}

/* ------------------------------------------------------------------ */
/* Items against the values of a scope.                               */

type ParsedValue =
  | { kind: "atproto" }
  | { kind: "generic" }
  | { kind: "email" }
  | { kind: "chat" }
  | { kind: "repo"; permission: RepoPermission }
  | { kind: "blob"; permission: BlobPermission }
  | { kind: "rpc"; permission: RpcPermission }
  | { kind: "account"; permission: AccountPermission }
  | { kind: "identity"; permission: IdentityPermission }
  | { kind: "other" };

function parseValue(value: string): ParsedValue {
  if (value === "atproto") return { kind: "atproto" };
  if (value === GENERIC) return { kind: "generic" };
  if (value === EMAIL) return { kind: "email" };
  if (value === CHAT) return { kind: "chat" };
  const repo = RepoPermission.fromString(value);
  if (repo) return { kind: "repo", permission: repo };
  const blob = BlobPermission.fromString(value);
  if (blob) return { kind: "blob", permission: blob };
  const rpc = RpcPermission.fromString(value);
  if (rpc) return { kind: "rpc", permission: rpc };
  const account = AccountPermission.fromString(value);
  if (account) return { kind: "account", permission: account };
  const identity = IdentityPermission.fromString(value);
  if (identity) return { kind: "identity", permission: identity };
  return { kind: "other" };
}

/**
 * The items a granted value is made of: what the app's page offers to take back for it. `transition:generic` is
 * every action on every kind of record, every upload, every service's methods (but the chat) and the identity, as
 * this server reads it (docs/architecture.md, "Scopes and the data server").
 */
export function itemsOfValue(value: string): PermissionItem[] {
  const parsed = parseValue(value);
  switch (parsed.kind) {
    case "generic":
      return [
        ...REPO_ACTIONS.map((action): PermissionItem => ({ kind: "repo", collection: "*", action })),
        { kind: "blob", accept: "*/*" },
        { kind: "rpc", lxm: "*", aud: "*" },
        { kind: "identity", attr: "*" },
      ];
    case "email":
      return [{ kind: "account", attr: "email", action: "read" }];
    case "chat":
      return [{ kind: "chat" }];
    case "repo":
      return parsed.permission.collection.flatMap((collection) => parsed.permission.action.map((action): PermissionItem => ({ kind: "repo", collection, action })));
    case "blob":
      return parsed.permission.accept.map((accept): PermissionItem => ({ kind: "blob", accept }));
    case "rpc":
      return parsed.permission.lxm.map((lxm): PermissionItem => ({ kind: "rpc", lxm, aud: parsed.permission.aud }));
    case "account": {
      const { attr, action } = parsed.permission;
      const actions: AccountAction[] = action.includes("manage") ? ["read", "manage"] : ["read"];
      return actions.map((one): PermissionItem => ({ kind: "account", attr: attr as AccountAttribute, action: one }));
    }
    case "identity":
      return [{ kind: "identity", attr: parsed.permission.attr }];
    default:
      return [];
  }
}

/** The items of a whole scope, each once. */
export function itemsOfScope(scope: string): PermissionItem[] {
  const seen = new Map<string, PermissionItem>();
  for (const value of scope.split(" ").filter(Boolean)) for (const item of itemsOfValue(value)) seen.set(formatItem(item), item);
  return [...seen.values()];
}

/** What of `item` a granted value reaches: the item narrowed to the value (for the consent screen), or undefined. */
export function overlapOf(item: PermissionItem, value: string): PermissionItem | undefined {
  const narrowed = itemsOfValue(value)
    .map((part) => overlapOfItems(item, part))
    .filter((part): part is PermissionItem => part !== undefined);
  // The most specific first: a wildcard item against a narrow value is the value's own item.
  return narrowed[0];
}

/** Whether `value` reaches anything `item` takes back. */
export function valueOverlaps(value: string, item: PermissionItem): boolean {
  return overlapOf(item, value) !== undefined;
}

/** Whether the values of `scope` together reach everything `item` takes back (an approval of them gives it back). */
export function scopeCovers(scope: string, item: PermissionItem): boolean {
  const parts = itemsOfScope(scope);
  return parts.some((part) => covers(part, item));
}

/** Whether `part` reaches everything `item` does (an item taken back already takes back `item` too, say). */
export function itemCovers(part: PermissionItem, item: PermissionItem): boolean {
  return covers(part, item);
}

/** Whether granted `part` reaches everything `item` takes back. */
function covers(part: PermissionItem, item: PermissionItem): boolean {
  switch (item.kind) {
    case "repo":
      return part.kind === "repo" && part.action === item.action && (part.collection === "*" || part.collection === item.collection);
    case "blob":
      return part.kind === "blob" && mediaCovers(part.accept, item.accept);
    case "rpc": {
      if (part.kind === "chat") return item.lxm !== "*" && item.lxm.startsWith(CHAT_PREFIX);
      if (part.kind !== "rpc") return false;
      // A wildcard of the item is covered only by the same wildcard; transition:generic's calls (rpc * *) leave out the chat.
      if (item.lxm === "*") return part.lxm === "*" && (item.aud === "*" ? part.aud === "*" : part.aud === item.aud);
      if (item.aud === "*") return part.aud === "*" && (part.lxm === "*" ? !item.lxm.startsWith(CHAT_PREFIX) : part.lxm === item.lxm);
      return rpcReaches(part, item.lxm, item.aud);
    }
    case "chat":
      return part.kind === "chat";
    case "account":
      return part.kind === "account" && part.attr === item.attr && (part.action === item.action || part.action === "manage");
    case "identity":
      return part.kind === "identity" && (part.attr === "*" || part.attr === item.attr);
  }
}

/** What `item` takes back of granted `part`, or undefined when they share nothing. */
function overlapOfItems(item: PermissionItem, part: PermissionItem): PermissionItem | undefined {
  switch (item.kind) {
    case "repo":
      if (part.kind !== "repo" || part.action !== item.action) return undefined;
      if (item.collection === "*") return part;
      return part.collection === "*" || part.collection === item.collection ? item : undefined;
    case "blob":
      return part.kind === "blob" && mediaOverlap(part.accept, item.accept) ? { kind: "blob", accept: narrowerRange(part.accept, item.accept) } : undefined;
    case "rpc":
      return rpcOverlap(item, part);
    case "chat":
      if (part.kind === "chat") return item;
      if (part.kind === "rpc" && part.lxm.startsWith(CHAT_PREFIX)) return part;
      return undefined;
    case "account":
      if (part.kind !== "account" || part.attr !== item.attr) return undefined;
      // Taking back reading takes back managing too.
      return item.action === "read" || part.action === "manage" ? part : undefined;
    case "identity":
      if (part.kind !== "identity") return undefined;
      return item.attr === "*" ? part : item;
  }
}

function rpcOverlap(item: Extract<PermissionItem, { kind: "rpc" }>, part: PermissionItem): PermissionItem | undefined {
  const genericCalls = (one: { lxm: string; aud: string }) => one.lxm === "*" && one.aud === "*";
  if (part.kind === "chat") {
    // The chat is every chat.bsky.* method of any service: an item reaches it unless it is transition:generic's calls.
    if (genericCalls(item)) return undefined;
    return item.lxm === "*" || item.lxm.startsWith(CHAT_PREFIX) ? item : undefined;
  }
  if (part.kind !== "rpc") return undefined;
  // transition:generic's calls (either side) leave out the chat.
  if ((genericCalls(part) && item.lxm.startsWith(CHAT_PREFIX)) || (genericCalls(item) && part.lxm.startsWith(CHAT_PREFIX))) return undefined;
  const lxmMatch = item.lxm === "*" || part.lxm === "*" || item.lxm === part.lxm;
  const audMatch = item.aud === "*" || part.aud === "*" || item.aud === part.aud;
  if (!lxmMatch || !audMatch) return undefined;
  return { kind: "rpc", lxm: item.lxm === "*" ? part.lxm : item.lxm, aud: item.aud === "*" ? part.aud : item.aud };
}

/* ------------------------------------------------------------------ */
/* The scope a token response names.                                   */

/**
 * `scope` without what `items` take back, as far as scope syntax can say it (RFC 6749 §5.1: the response's `scope`
 * names what the token may do). A value entirely taken back goes; one partly taken back is written again with what
 * remains (a repo value with fewer collections or actions, a blob value with fewer media ranges, an rpc value with
 * fewer methods); one whose taken-back part lies inside a wildcard (`repo:*` less likes, `transition:generic` less
 * anything) stays as it is, as the syntax cannot say "all but", and every check refuses the part all the same.
 */
export function narrowScope(scope: string, items: readonly PermissionItem[]): string {
  if (items.length === 0) return scope;
  const kept: string[] = [];
  for (const value of scope.split(" ").filter(Boolean)) for (const rewritten of narrowValue(value, items)) if (!kept.includes(rewritten)) kept.push(rewritten);
  return kept.join(" ");
}

function narrowValue(value: string, items: readonly PermissionItem[]): string[] {
  const parsed = parseValue(value);
  switch (parsed.kind) {
    case "atproto":
    case "other":
      return [value];
    case "generic":
      return itemsOfValue(value).every((part) => items.some((item) => covers(item, part))) ? [] : [value];
    case "email":
      return withdrawsAccount(items, "email", "read") ? [] : [value];
    case "chat":
      return items.some((item) => item.kind === "chat") ? [] : [value];
    case "repo":
      return narrowRepo(parsed.permission, items);
    case "blob": {
      const accept = parsed.permission.accept.filter((range) => !items.some((item) => item.kind === "blob" && mediaCovers(item.accept, range)));
      return accept.length === 0 ? [] : [new BlobPermission(accept as never).toString()];
    }
    case "rpc": {
      const { aud } = parsed.permission;
      const lxm = parsed.permission.lxm.filter((method) => !(method === "*" ? takesEveryMethod(items, aud) : withdrawsRpc(items, method, aud)));
      return lxm.length === 0 ? [] : [new RpcPermission(aud as never, lxm as never).toString()];
    }
    case "account": {
      const { attr } = parsed.permission;
      const action = parsed.permission.action.filter((one) => !withdrawsAccount(items, attr, one as AccountAction));
      return action.length === 0 ? [] : [new AccountPermission(attr, action as never).toString()];
    }
    case "identity":
      return withdrawsIdentity(items, parsed.permission.attr) && (parsed.permission.attr === "handle" || items.some((item) => item.kind === "identity" && item.attr === "*"))
        ? []
        : [value];
  }
}

/** Whether `items` take back every method of `aud` (an rpc:* value's whole reach; transition:generic's calls leave out the chat). */
function takesEveryMethod(items: readonly PermissionItem[], aud: string): boolean {
  return items.some((item) => item.kind === "rpc" && item.lxm === "*" && item.aud === aud);
}

/** A repo value less what `items` take back: its collections regrouped by the actions each keeps. */
function narrowRepo(permission: RepoPermission, items: readonly PermissionItem[]): string[] {
  const byActions = new Map<string, { collections: string[]; actions: RepoAction[] }>();
  for (const collection of permission.collection) {
    const actions = permission.action.filter((action) =>
      collection === "*"
        ? !items.some((item) => item.kind === "repo" && item.collection === "*" && item.action === action)
        : !withdrawsRepo(items, collection, action),
    );
    if (actions.length === 0) continue;
    const key = actions.join(",");
    const group = byActions.get(key) ?? { collections: [], actions };
    group.collections.push(collection);
    byActions.set(key, group);
  }
  return [...byActions.values()].map(({ collections, actions }) => new RepoPermission(collections as never, actions as never).toString());
}
