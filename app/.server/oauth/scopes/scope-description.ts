import { AccountPermission, BlobPermission, IdentityPermission, RepoPermission, RpcPermission } from "@atproto/oauth-scopes";

/** One requested permission in plain words, for the consent screen. */
export type PermissionDescription = { scope: string; title: string; detail?: string; warning?: boolean };

const listFormat = new Intl.ListFormat("en", { style: "long", type: "conjunction" });

function list(values: readonly string[]): string {
  return listFormat.format(values.map((value) => (value === "*" ? "any" : value)));
}

const REPO_VERBS: Record<string, string> = { create: "create", update: "change", delete: "delete" };

export function describeScopeValue(scope: string): PermissionDescription {
  switch (scope) {
    case "atproto":
      return { scope, title: "Know who you are", detail: "Your account identifier (DID) and handle." };
    case "transition:generic":
      return {
        scope,
        title: "Act on your account like the official app",
        detail: "Post, like, follow, upload media, change your preferences and your handle, and call other services as you. Not your email, direct messages or account settings.",
        warning: true,
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
    return { scope, title: `${capitalize(verbs)} ${what} in your repository` };
  }
  const rpc = RpcPermission.fromString(scope);
  if (rpc) {
    const methods = rpc.lxm.includes("*") ? "any method" : list(rpc.lxm);
    const service = rpc.aud === "*" ? "any service" : rpc.aud;
    return { scope, title: `Call ${methods} on ${service} as you` };
  }
  const blob = BlobPermission.fromString(scope);
  if (blob) return { scope, title: `Upload files (${list(blob.accept)})` };
  const account = AccountPermission.fromString(scope);
  if (account) {
    const manage = account.action.includes("manage");
    return { scope, title: `${manage ? "Manage" : "See"} your account ${account.attr}`, warning: manage };
  }
  const identity = IdentityPermission.fromString(scope);
  if (identity) {
    return identity.attr === "handle"
      ? { scope, title: "Change your handle", warning: true }
      : { scope, title: "Control your identity", detail: "This can take over your account: only allow apps you fully trust.", warning: true };
  }
  return { scope, title: scope };
}

export function describeScope(scope: string): PermissionDescription[] {
  return scope.split(" ").filter(Boolean).map(describeScopeValue);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
