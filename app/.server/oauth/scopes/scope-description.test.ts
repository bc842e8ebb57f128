import { describe, expect, it } from "vitest";
import { english, translatorFor } from "../../i18n/translate.ts";
import { describeScopeValue, groupPermissions, summarizePermissions } from "./scope-description.ts";

describe("groupPermissions", () => {
  it("merges repository permissions into one row per collection", () => {
    const groups = groupPermissions("atproto repo:app.bsky.feed.post?action=create repo:app.bsky.feed.post?action=delete repo:com.example.thing", english);
    expect(groups.general.map((permission) => permission.title)).toEqual(["Know who you are"]);
    expect(groups.repository).toEqual([
      { collection: "app.bsky.feed.post", label: "Posts", create: true, update: false, delete: true },
      { collection: "com.example.thing", label: "Thing records", create: true, update: true, delete: true },
    ]);
    // Deleting records is destructive: a caution.
    expect(groups.hasWarnings).toBe(true);
    expect(groupPermissions("atproto repo:app.bsky.feed.post?action=create", english).hasWarnings).toBe(false);
  });

  it("puts any collection first and warns about it", () => {
    const groups = groupPermissions("atproto repo:app.bsky.feed.like repo:*?action=create", english);
    expect(groups.repository[0]).toMatchObject({ collection: "*", label: "Any kind of record", create: true, update: false });
    expect(groups.hasWarnings).toBe(true);
  });

  it("lists uploads by media type; */* covers the rest", () => {
    expect(groupPermissions("blob:image/* blob:video/mp4", english).uploads).toEqual([
      { accept: "image/*", label: "Images of any format" },
      { accept: "video/mp4", label: "MP4 videos" },
    ]);
    expect(groupPermissions("blob:image/* blob:*/*", english).uploads).toEqual([{ accept: "*/*", label: "Any kind of file" }]);
  });

  it("groups calls by service", () => {
    const groups = groupPermissions(
      "rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview rpc:app.bsky.actor.getProfile?aud=did:web:api.bsky.app%23bsky_appview rpc:*?aud=did:web:chat.example%23chat", english);
    expect(groups.calls).toEqual([
      {
        service: "did:web:api.bsky.app#bsky_appview",
        serviceLabel: "api.bsky.app (bsky_appview)",
        methods: [
          { nsid: "app.bsky.feed.getTimeline", label: "Get timeline" },
          { nsid: "app.bsky.actor.getProfile", label: "Get profile" },
        ],
        anyMethod: false,
      },
      { service: "did:web:chat.example#chat", serviceLabel: "chat.example (chat)", methods: [], anyMethod: true },
    ]);
  });

  it("names calls in the screen's language: known methods in their own words, others with a translated phrase around their name", () => {
    const scope = [
      "rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview",
      "rpc:app.bsky.actor.getProfile?aud=did:web:api.bsky.app%23bsky_appview",
      "rpc:com.example.calendar.getEvents?aud=did:web:calendar.test%23cal",
    ].join(" ");
    const labels = (language: "en" | "fr" | "ja") => groupPermissions(scope, translatorFor(language)).calls.flatMap((call) => call.methods.map((method) => method.label));
    expect(labels("en")).toEqual(["Get timeline", "Get profile", "Get events"]);
    expect(labels("fr")).toEqual(["Lire le fil d'actualité", "Lire un profil", "Appel «\u00a0getEvents\u00a0»"]);
    expect(labels("ja")).toEqual(["タイムラインの取得", "プロフィールの取得", "「getEvents」の呼び出し"]);
  });

  it("warns about account management and identity takeover", () => {
    const groups = groupPermissions("account:email account:status?action=manage identity:handle identity:*", english);
    expect(groups.account.map((permission) => [permission.title, Boolean(permission.warning)])).toEqual([
      ["See your email address", false],
      ["Deactivate or reactivate your account", true],
    ]);
    // identity:* includes identity:handle: only the stronger one is shown.
    expect(groups.identity).toHaveLength(1);
    expect(groups.identity[0]?.detail).toMatch(/take over your account/);
    expect(groups.hasWarnings).toBe(true);
  });

  it("keeps transition scopes in plain words and unknown values as they are", () => {
    const groups = groupPermissions("atproto transition:generic transition:email something-else", english);
    expect(groups.general.map((permission) => permission.title)).toEqual(["Know who you are", "Act on your account in almost every way"]);
    // Broad access: summarised, with what it includes (destructive powers marked) and leaves out.
    const generic = groups.general[1]!;
    expect(generic.warning).toBe(true);
    expect(generic.title).not.toMatch(/official/i);
    expect(generic.includes?.filter((power) => power.warning).map((power) => power.title)).toEqual([
      "Change or delete any of your records, your profile included",
      "Change your handle and other identity settings",
      "Ask another server to open an account in your name: the first step of moving your account away",
    ]);
    expect(generic.excludes).toMatch(/email/);
    expect(groups.account.map((permission) => permission.title)).toEqual(["See your email address"]);
    expect(groups.other.map((permission) => permission.title)).toEqual(["something-else"]);
    expect(groupPermissions("", english)).toMatchObject({ general: [], repository: [], uploads: [], calls: [], account: [], identity: [], other: [], hasWarnings: false });
  });

  it("an rpc: permission covering com.atproto.server.createAccount says, with a caution, that it starts moving the account", () => {
    const groups = groupPermissions("atproto rpc:com.atproto.server.createAccount?aud=did:web:newpds.example%23atproto_pds", english);
    expect(groups.account).toEqual([
      {
        scope: "rpc:com.atproto.server.createAccount?aud=did:web:newpds.example%23atproto_pds",
        title: "Start moving your account to newpds.example (atproto_pds)",
        detail: expect.stringMatching(/^The app can get a pass with which newpds\.example \(atproto_pds\) opens an account in your name.*Allow this only if you mean to move your account/),
        warning: true,
      },
    ]);
    expect(groups.hasWarnings).toBe(true);
    // Any other method: no such caution.
    expect(groupPermissions("atproto rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview", english).account).toEqual([]);
  });

  it("describes a did:web audience by its host", () => {
    expect(describeScopeValue("rpc:app.bsky.feed.getTimeline?aud=did:web:api.bsky.app%23bsky_appview", english).title).toBe(
      "Call app.bsky.feed.getTimeline on api.bsky.app (bsky_appview) as you",
    );
  });
});

describe("summarizePermissions (issue 28, item 20: a summary never says more than the grant allows)", () => {
  const summary = (scope: string, t = english, hideEmail = false) =>
    summarizePermissions(groupPermissions(scope, t), t, { hideEmail }).map((line) => `${line.family}: ${line.items.join(", ")}`);
  const APPVIEW = "aud=did:web:api.bsky.app%23bsky_appview";

  it("records: every action under the family's name; a subset of actions is said, one line per set", () => {
    expect(summary("atproto repo:app.bsky.feed.post")).toEqual(["Records in your repository: Posts"]);
    expect(summary("atproto repo:app.bsky.feed.post?action=create")).toEqual(["Records in your repository (create only): Posts"]);
    expect(
      summary("repo:app.bsky.feed.like repo:app.bsky.feed.post?action=create repo:app.bsky.actor.profile?action=update repo:app.bsky.graph.follow?action=create&action=delete"),
    ).toEqual([
      "Records in your repository: Likes",
      "Records in your repository (create and delete only): Follows",
      "Records in your repository (create only): Posts",
      "Records in your repository (change only): Your profile",
    ]);
    // Two values for one collection add up: create and delete asked separately are "create and delete".
    expect(summary("repo:app.bsky.feed.post?action=create repo:app.bsky.feed.post?action=delete")).toEqual(["Records in your repository (create and delete only): Posts"]);
  });

  it("calls: one method by name, a few by their number, only rpc:* as anything", () => {
    expect(summary(`rpc:app.bsky.feed.getTimeline?${APPVIEW}`)).toEqual(["Use other services as you: Get timeline on api.bsky.app (bsky_appview)"]);
    expect(summary(`rpc:app.bsky.feed.getTimeline?${APPVIEW} rpc:app.bsky.actor.getProfile?${APPVIEW}`)).toEqual(["Use other services as you: 2 things on api.bsky.app (bsky_appview)"]);
    expect(summary(`rpc:*?${APPVIEW}`)).toEqual(["Use other services as you: Anything on api.bsky.app (bsky_appview)"]);
    expect(summary("rpc:app.bsky.feed.getTimeline?aud=*")).toEqual(["Use other services as you: Get timeline on any service"]);
  });

  it("in the screen's language", () => {
    const french = translatorFor("fr");
    expect(summary(`repo:app.bsky.feed.post?action=create rpc:app.bsky.feed.getTimeline?${APPVIEW}`, french)).toEqual([
      "Enregistrements de votre dépôt (créer seulement): Publications",
      "Utiliser d'autres services en votre nom: Lire le fil d'actualité sur api.bsky.app (bsky_appview)",
    ]);
    const japanese = translatorFor("ja");
    expect(summary("repo:app.bsky.feed.post?action=create&action=update", japanese)).toEqual(["リポジトリのレコード（作成、変更のみ）: 投稿"]);
  });

  it("leaves out the cautions (shown in full beside it) and, when it may be declined, the email address", () => {
    expect(summary("atproto account:email identity:handle account:status?action=manage")).toEqual(["Your account: See your email address"]);
    expect(summary("atproto account:email blob:image/*", english, true)).toEqual(["Upload files: Images of any format"]);
  });
});
