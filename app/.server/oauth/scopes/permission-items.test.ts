import { ScopePermissionsTransition } from "@atproto/oauth-scopes";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatItem,
  itemsOfScope,
  narrowScope,
  overlapOf,
  parseItem,
  parseItems,
  scopeCovers,
  valueOverlaps,
  withdrawsAccount,
  withdrawsBlob,
  withdrawsIdentity,
  withdrawsRepo,
  withdrawsRpc,
  type PermissionItem,
} from "./permission-items.ts";

const POST = "app.bsky.feed.post";
const LIKE = "app.bsky.feed.like";
const APPVIEW = "did:web:api.bsky.app#bsky_appview";
/** The service as a scope value writes it: its fragment encoded. */
const APPVIEW_IN_SCOPE = "did:web:api.bsky.app%23bsky_appview";
const items = (...texts: string[]): PermissionItem[] => texts.map((text) => parseItem(text)!);

/** Permissions taken back from an app after allowing them (docs/decisions/0053). */
describe("permission items", () => {
  it("write and read back as the scope values that grant exactly them, and nothing else reads", () => {
    for (const text of [
      `repo:${POST}?action=create`,
      "repo:*?action=delete",
      "blob:image/*",
      "blob:*/*",
      `rpc:app.bsky.feed.getTimeline?aud=${APPVIEW_IN_SCOPE}`,
      "rpc:*?aud=*",
      "transition:chat.bsky",
      "account:email?action=read",
      "account:repo?action=manage",
      "identity:handle",
      "identity:*",
    ]) {
      expect(formatItem(parseItem(text)!)).toBe(text);
    }
    for (const text of ["", "atproto", "transition:generic", `repo:${POST}`, "repo:not an nsid?action=create", "repo:*?action=burn", "blob:image", "rpc:x?aud=evil", "account:phone?action=read", "identity:email", `repo:${POST}?action=create&action=delete`]) {
      expect(parseItem(text), text).toBeUndefined();
    }
    expect(parseItems(`repo:${POST}?action=create garbage identity:handle`)).toEqual(items(`repo:${POST}?action=create`, "identity:handle"));
  });

  it("a granted value is made of the items its page offers to take back; transition:generic of its four families", () => {
    expect(itemsOfScope(`atproto repo:${POST} blob:image/*`).map(formatItem)).toEqual([
      `repo:${POST}?action=create`,
      `repo:${POST}?action=update`,
      `repo:${POST}?action=delete`,
      "blob:image/*",
    ]);
    expect(itemsOfScope("atproto transition:generic transition:email transition:chat.bsky").map(formatItem)).toEqual([
      "repo:*?action=create",
      "repo:*?action=update",
      "repo:*?action=delete",
      "blob:*/*",
      "rpc:*?aud=*",
      "identity:*",
      "account:email?action=read",
      "transition:chat.bsky",
    ]);
    expect(itemsOfScope("account:email?action=manage").map(formatItem)).toEqual(["account:email?action=read", "account:email?action=manage"]);
  });

  it("refuse exactly what they take back", () => {
    const taken = items(`repo:${LIKE}?action=create`, "blob:video/*", `rpc:app.bsky.feed.getTimeline?aud=${APPVIEW}`, "account:email?action=read", "identity:handle");
    expect(withdrawsRepo(taken, LIKE, "create")).toBe(true);
    expect(withdrawsRepo(taken, LIKE, "delete")).toBe(false);
    expect(withdrawsRepo(taken, POST, "create")).toBe(false);
    expect(withdrawsBlob(taken, "video/mp4")).toBe(true);
    expect(withdrawsBlob(taken, "image/png")).toBe(false);
    expect(withdrawsRpc(taken, "app.bsky.feed.getTimeline", APPVIEW)).toBe(true);
    expect(withdrawsRpc(taken, "app.bsky.feed.getTimeline", "did:web:other.example#svc")).toBe(false);
    // Taking back reading the email takes back managing it too.
    expect(withdrawsAccount(taken, "email", "manage")).toBe(true);
    // The whole identity includes the handle.
    expect(withdrawsIdentity(taken, "*")).toBe(true);
    expect(withdrawsIdentity(items("identity:*"), "handle")).toBe(true);
    // Every kind of record; transition:generic's calls leave out the chat, the chat item takes it all.
    expect(withdrawsRepo(items("repo:*?action=delete"), POST, "delete")).toBe(true);
    expect(withdrawsRpc(items("rpc:*?aud=*"), "app.bsky.feed.getTimeline", APPVIEW)).toBe(true);
    expect(withdrawsRpc(items("rpc:*?aud=*"), "chat.bsky.convo.listConvos", APPVIEW)).toBe(false);
    expect(withdrawsRpc(items("transition:chat.bsky"), "chat.bsky.convo.listConvos", APPVIEW)).toBe(true);
  });

  it("the scope a token names leaves out what it can say: whole values, collections, actions, media ranges, methods", () => {
    expect(narrowScope(`atproto repo:${POST} repo:${LIKE} blob:image/*`, items(...["create", "update", "delete"].map((action) => `repo:${LIKE}?action=${action}`)))).toBe(
      `atproto repo:${POST} blob:image/*`,
    );
    expect(narrowScope(`atproto repo?collection=${LIKE}&collection=${POST}`, items(`repo:${LIKE}?action=create`))).toBe(
      `atproto repo:${LIKE}?action=update&action=delete repo:${POST}`,
    );
    expect(narrowScope("atproto repo:*", items("repo:*?action=delete"))).toBe("atproto repo:*?action=create&action=update");
    expect(narrowScope("atproto blob?accept=image/*&accept=video/*", items("blob:video/*"))).toBe("atproto blob:image/*");
    expect(narrowScope(`atproto rpc?lxm=app.bsky.feed.getTimeline&lxm=app.bsky.actor.getProfile&aud=${APPVIEW}`, items(`rpc:app.bsky.feed.getTimeline?aud=${APPVIEW}`))).toBe(
      `atproto rpc:app.bsky.actor.getProfile?aud=${APPVIEW_IN_SCOPE}`,
    );
    expect(narrowScope("atproto transition:email account:email?action=manage", items("account:email?action=read"))).toBe("atproto");
    expect(narrowScope("atproto identity:handle transition:chat.bsky", items("identity:*", "transition:chat.bsky"))).toBe("atproto");
    // Inside a wildcard the syntax cannot say "all but": the value stays, and the checks refuse the part.
    expect(narrowScope("atproto transition:generic repo:*", items(`repo:${LIKE}?action=create`))).toBe("atproto transition:generic repo:*");
    expect(narrowScope("atproto identity:*", items("identity:handle"))).toBe("atproto identity:*");
    // transition:generic goes once all of it is taken back.
    expect(narrowScope("atproto transition:generic", itemsOfScope("transition:generic"))).toBe("atproto");
  });

  it("what a request asks again: the part of an allowed value taken back, narrowed to the value", () => {
    expect(formatItem(overlapOf(parseItem(`repo:${LIKE}?action=create`)!, "transition:generic")!)).toBe(`repo:${LIKE}?action=create`);
    expect(formatItem(overlapOf(parseItem("repo:*?action=create")!, `repo:${POST}`)!)).toBe(`repo:${POST}?action=create`);
    expect(formatItem(overlapOf(parseItem("blob:*/*")!, "blob:image/*")!)).toBe("blob:image/*");
    expect(formatItem(overlapOf(parseItem(`rpc:*?aud=${APPVIEW}`)!, `rpc:app.bsky.feed.getTimeline?aud=${APPVIEW}`)!)).toBe(
      `rpc:app.bsky.feed.getTimeline?aud=${APPVIEW_IN_SCOPE}`,
    );
    expect(overlapOf(parseItem(`repo:${LIKE}?action=create`)!, `repo:${POST}`)).toBeUndefined();
    expect(overlapOf(parseItem("rpc:*?aud=*")!, "transition:chat.bsky")).toBeUndefined();
    expect(valueOverlaps("transition:email", parseItem("account:email?action=read")!)).toBe(true);
  });

  it("an approval gives back only what it covers whole", () => {
    expect(scopeCovers("atproto transition:generic", parseItem(`repo:${LIKE}?action=create`)!)).toBe(true);
    expect(scopeCovers(`atproto repo:${LIKE}`, parseItem(`repo:${LIKE}?action=create`)!)).toBe(true);
    expect(scopeCovers(`atproto repo:${POST}`, parseItem("repo:*?action=create")!)).toBe(false);
    expect(scopeCovers("atproto blob:image/png", parseItem("blob:image/*")!)).toBe(false);
    expect(scopeCovers("atproto transition:generic", parseItem("rpc:*?aud=*")!)).toBe(true);
    expect(scopeCovers("atproto transition:generic", parseItem("transition:chat.bsky")!)).toBe(false);
    expect(scopeCovers("atproto transition:email", parseItem("account:email?action=read")!)).toBe(true);
  });

  it("PROPERTY: the narrowed scope never allows more than the scope, nor anything an item expressible in it takes back", () => {
    const collections = ["*", POST, LIKE, "app.bsky.graph.follow"];
    const actions = ["create", "update", "delete"] as const;
    const repoValue = fc
      .tuple(fc.subarray(collections, { minLength: 1 }), fc.subarray([...actions], { minLength: 1 }))
      .map(([cs, as]) => `repo?${cs.map((c) => `collection=${c}`).join("&")}&${as.map((a) => `action=${a}`).join("&")}`);
    const scope = fc.array(fc.oneof(repoValue, fc.constantFrom("blob:image/*", "blob:*/*", "transition:generic", "identity:handle", "account:email")), { maxLength: 4 });
    const item = fc.oneof(
      fc.tuple(fc.constantFrom(...collections), fc.constantFrom(...actions)).map(([c, a]) => `repo:${c}?action=${a}`),
      fc.constantFrom("blob:image/*", "blob:*/*", "identity:handle", "identity:*", "account:email?action=read"),
    );
    fc.assert(
      fc.property(scope, fc.array(item, { maxLength: 4 }), (values, texts) => {
        const granted = ["atproto", ...values].join(" ");
        const taken = items(...texts);
        const narrowed = new ScopePermissionsTransition(narrowScope(granted, taken));
        const before = new ScopePermissionsTransition(granted);
        for (const collection of collections.slice(1)) {
          for (const action of actions) {
            if (narrowed.allowsRepo({ collection, action })) {
              expect(before.allowsRepo({ collection, action })).toBe(true);
              // Allowed still: only a wildcard the syntax cannot narrow keeps it, and the check refuses it then.
              if (withdrawsRepo(taken, collection, action)) expect(granted.includes("repo?collection=*") || granted.includes("transition:generic")).toBe(true);
            }
          }
        }
        for (const mime of ["image/png", "video/mp4"]) if (narrowed.allowsBlob({ mime })) expect(before.allowsBlob({ mime })).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
