import { beforeEach, describe, expect, it } from "vitest";
import { MemoryConsentStore, MemoryGrantStore } from "../../../../tests/helpers/memory-stores.ts";
import { ConnectedApps } from "../../accounts/connected-apps.ts";
import {
  accountsThatMayAnswer,
  allowingAccount,
  consentOnScreen,
  declinedOnAllow,
  grantedScope,
  hintNames,
  isOptionalValue,
  screenStep,
  setAsideByPromptLogin,
  silentAnswer,
  type BrowserAccount,
  type PromptRequest,
  type ScreenChoice,
} from "./prompt-rules.ts";

const NOW = 1_800_000_000_000;
const CLIENT = "https://app.example/client-metadata.json";
const SCOPE = "atproto transition:generic";

function signedIn(name: string, options: { staySignedIn?: boolean; signedInAt?: number } = {}): BrowserAccount {
  return {
    account: { did: `did:plc:${name}000000000000000000000`, handle: `${name}.test`, email: `${name}@example.com` },
    signedInAt: new Date(options.signedInAt ?? NOW - 60_000),
    staySignedIn: options.staySignedIn ?? true,
  };
}

const alice = signedIn("alice");
const bob = signedIn("bob");

function request(parameters: Partial<PromptRequest["parameters"]> = {}, createdAt = NOW - 1000): PromptRequest {
  return { clientId: CLIENT, parameters: { scope: SCOPE, ...parameters }, createdAt };
}

const NO_CHOICE: ScreenChoice = { add: false, account: null, choose: false };

let apps: ConnectedApps;
let consents: MemoryConsentStore;

beforeEach(() => {
  const grants = new MemoryGrantStore();
  consents = new MemoryConsentStore(grants);
  apps = new ConnectedApps(consents, grants, () => NOW);
});

describe("login_hint and prompt=login: which accounts signed in here may answer", () => {
  it("a hint names its account in every spelling (handle, email, DID, any case, @, full width), and no other", () => {
    for (const hint of ["alice.test", "ALICE.TEST", "@Alice.Test", "alice@example.com", "Alice@Example.COM", alice.account.did, "ａｌｉｃｅ．ｔｅｓｔ", " alice.test "]) {
      expect(hintNames(hint, alice.account), hint).toBe(true);
      expect(accountsThatMayAnswer([alice, bob], request({ login_hint: hint })), hint).toEqual([alice]);
    }
    expect(hintNames("alice", alice.account)).toBe(false);
    expect(accountsThatMayAnswer([bob], request({ login_hint: "alice.test" }))).toEqual([]);
  });

  it("prompt=login counts only sessions begun after the request was pushed", () => {
    const fresh = signedIn("carol", { signedInAt: NOW });
    expect(accountsThatMayAnswer([alice, fresh], request({ prompt: "login" }, NOW - 1000))).toEqual([fresh]);
    expect(accountsThatMayAnswer([alice, fresh], request({}, NOW - 1000))).toEqual([alice, fresh]);
  });
});

describe("the screen's step", () => {
  it("one account: that account; several: the chooser; none: the sign-in form", () => {
    expect(screenStep(request(), [alice], NO_CHOICE)).toEqual({ kind: "account", signedIn: alice });
    expect(screenStep(request(), [alice, bob], NO_CHOICE)).toEqual({ kind: "choose", accounts: [alice, bob] });
    expect(screenStep(request(), [], NO_CHOICE)).toEqual({ kind: "sign-in" });
  });

  it("prompt=select_account and the chooser link show the chooser even for one account", () => {
    expect(screenStep(request({ prompt: "select_account" }), [alice], NO_CHOICE)).toEqual({ kind: "choose", accounts: [alice] });
    expect(screenStep(request(), [alice], { ...NO_CHOICE, choose: true })).toEqual({ kind: "choose", accounts: [alice] });
  });

  it("an account chosen on the chooser counts only when it is signed in here and may answer", () => {
    expect(screenStep(request(), [alice, bob], { ...NO_CHOICE, account: bob.account.did })).toEqual({ kind: "account", signedIn: bob });
    expect(screenStep(request({ login_hint: "alice.test" }), [alice, bob], { ...NO_CHOICE, account: bob.account.did })).toEqual({ kind: "account", signedIn: alice });
    expect(screenStep(request(), [alice, bob], { ...NO_CHOICE, account: "did:plc:someoneelse" })).toEqual({ kind: "choose", accounts: [alice, bob] });
  });

  it("'Use another account' asks for a sign-in; prompt=login's sign-in names the account it set aside, but not when adding one", () => {
    const adding = { ...NO_CHOICE, add: true };
    expect(screenStep(request(), [alice], adding)).toEqual({ kind: "sign-in" });
    const login = request({ prompt: "login" });
    expect(setAsideByPromptLogin(login, screenStep(login, [alice], NO_CHOICE), NO_CHOICE)).toBe(true);
    expect(setAsideByPromptLogin(login, screenStep(login, [alice], adding), adding)).toBe(false);
    expect(setAsideByPromptLogin(request(), screenStep(request(), [], NO_CHOICE), NO_CHOICE)).toBe(false);
  });

  it("prompt=create (docs/decisions/0052): the sign-up form until an account signs up or in on this screen, then that account's consent", () => {
    const create = request({ prompt: "create" }, NOW - 1000);
    expect(screenStep(create, [], NO_CHOICE, true)).toEqual({ kind: "sign-up" });
    // A session from before the request is set aside, as under prompt=login: the person asked to sign up.
    expect(screenStep(create, [alice], NO_CHOICE, true)).toEqual({ kind: "sign-up" });
    const created = signedIn("newcomer", { signedInAt: NOW });
    expect(screenStep(create, [alice, created], NO_CHOICE, true)).toEqual({ kind: "account", signedIn: created });
    expect(allowingAccount(create, [alice, created], alice.account.did)).toBeUndefined();
    // "Sign in instead", and sign-up closed meanwhile: the sign-in form.
    expect(screenStep(create, [], { ...NO_CHOICE, add: true }, true)).toEqual({ kind: "sign-in" });
    expect(screenStep(create, [], NO_CHOICE, false)).toEqual({ kind: "sign-in" });
    // "Create an account" on any request, while sign-up is open.
    expect(screenStep(request(), [alice], { ...NO_CHOICE, create: true }, true)).toEqual({ kind: "sign-up" });
    expect(screenStep(request(), [alice], { ...NO_CHOICE, create: true }, false)).toEqual({ kind: "account", signedIn: alice });
  });

  it("Allow without a password acts for the account the screen named, only when it may answer; a form naming none, for the only one", () => {
    expect(allowingAccount(request(), [alice, bob], bob.account.did)).toBe(bob);
    expect(allowingAccount(request({ login_hint: "alice.test" }), [alice, bob], bob.account.did)).toBeUndefined();
    expect(allowingAccount(request(), [alice], "")).toBe(alice);
    expect(allowingAccount(request(), [alice, bob], "")).toBeUndefined();
  });
});

describe("remembered consent", () => {
  const claims = async (req: PromptRequest, did: string) => (await consentOnScreen(apps, req, did)).remembered;

  it("is claimed when the account allowed every value before, never under prompt=consent", async () => {
    expect(await claims(request(), alice.account.did)).toBe(false);
    await apps.remember(alice.account.did, CLIENT, "atproto");
    expect(await claims(request(), alice.account.did)).toBe(false);
    await apps.remember(alice.account.did, CLIENT, "transition:generic");
    expect(await claims(request(), alice.account.did)).toBe(true);
    expect(await claims(request({ prompt: "consent" }), alice.account.did)).toBe(false);
    // Another client, or another account, was not allowed.
    expect(await claims({ ...request(), clientId: "https://other.example/meta.json" }, alice.account.did)).toBe(false);
    expect(await claims(request(), bob.account.did)).toBe(false);
  });
});

describe("a declined email (issue 19, item 8; docs/decisions/0032)", () => {
  const WITH_EMAIL = `${SCOPE} transition:email`;

  it("only the email permission is optional", () => {
    expect(["transition:email", "account:email", "account:email?action=read"].every(isOptionalValue)).toBe(true);
    expect(["atproto", "transition:generic", "account:status", "identity:handle", "repo:*"].some(isOptionalValue)).toBe(false);
  });

  it("an Allow declines what the box says; a form without the box keeps what was declined before", () => {
    expect(declinedOnAllow(WITH_EMAIL, "declined", [])).toEqual(["transition:email"]);
    expect(declinedOnAllow(WITH_EMAIL, "shared", ["transition:email"])).toEqual([]);
    expect(declinedOnAllow(WITH_EMAIL, "not-offered", ["transition:email"])).toEqual(["transition:email"]);
    expect(declinedOnAllow(WITH_EMAIL, "not-offered", [])).toEqual([]);
    // Only optional values of this request are ever declined.
    expect(declinedOnAllow(SCOPE, "declined", [])).toEqual([]);
    expect(grantedScope(WITH_EMAIL, ["transition:email"])).toBe(SCOPE);
  });

  it("the same request again is covered by the remembered consent, still without email; the screen shows the box as left, under prompt=consent too", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE, ["transition:email"]);
    expect(await consentOnScreen(apps, request({ scope: WITH_EMAIL }), alice.account.did)).toEqual({ remembered: true, declined: ["transition:email"] });
    expect(await consentOnScreen(apps, request({ scope: WITH_EMAIL, prompt: "consent" }), alice.account.did)).toEqual({ remembered: false, declined: ["transition:email"] });
    // A request that does not ask for the email is covered as before, with nothing declined in it.
    expect(await consentOnScreen(apps, request(), alice.account.did)).toEqual({ remembered: true, declined: [] });
  });

  it("prompt=none answers from it with a code for the rest, never the email", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE, ["transition:email"]);
    const answer = await silentAnswer(apps, request({ prompt: "none", scope: WITH_EMAIL }), [alice]);
    expect(answer).toEqual({ kind: "approve", signedIn: alice, scope: SCOPE, declined: ["transition:email"] });
  });

  it("the latest answer wins: ticked later, the email is granted and no longer declined; unticked later, it is taken out of the consent", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE, ["transition:email"]);
    await apps.remember(alice.account.did, CLIENT, WITH_EMAIL);
    expect(await apps.consentFor(alice.account.did, CLIENT, WITH_EMAIL)).toEqual({ status: "covers", declined: [], askedAgain: [] });
    expect((await consents.find(alice.account.did, CLIENT))?.declined).toBe("");
    await apps.remember(alice.account.did, CLIENT, SCOPE, ["transition:email"]);
    expect(await consents.find(alice.account.did, CLIENT)).toMatchObject({ scope: SCOPE, declined: "transition:email" });
    const answer = await silentAnswer(apps, request({ prompt: "none", scope: WITH_EMAIL }), [alice]);
    expect(answer.kind === "approve" && answer.scope).toBe(SCOPE);
  });

  it("a declined value covers only itself: a request for another email value asks again", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE, ["transition:email"]);
    expect((await apps.consentFor(alice.account.did, CLIENT, `${SCOPE} account:email`)).status).toBe("narrower");
    const answer = await silentAnswer(apps, request({ prompt: "none", scope: `${SCOPE} account:email` }), [alice]);
    expect(answer).toMatchObject({ kind: "refuse", error: "consent_required" });
  });
});

describe("prompt=none (OIDC Core §3.1.2.6)", () => {
  const none = (login_hint?: string) => request(login_hint === undefined ? { prompt: "none" } : { prompt: "none", login_hint });
  const errorOf = async (req: PromptRequest, accounts: BrowserAccount[]) => {
    const answer = await silentAnswer(apps, req, accounts);
    return answer.kind === "approve" ? `code for ${answer.signedIn.account.handle}` : `${answer.error}: ${answer.description}`;
  };

  /** Every browser a visitor may hold: nobody, the hinted account (staying or not), someone else, several. */
  const browsers = (): Record<string, BrowserAccount[]> => ({
    empty: [],
    "alice, staying signed in": [alice],
    "alice, not staying": [signedIn("alice", { staySignedIn: false })],
    "bob, staying signed in": [bob],
    "alice and bob": [alice, bob],
  });

  it("a client the hinted account never allowed gets the same answer whatever the browser holds (issue 16, hole 5)", async () => {
    // Bob allowed the client: his browsers must not make the answer for a hint of Alice differ either.
    await apps.remember(bob.account.did, CLIENT, SCOPE);
    for (const hint of ["alice.test", "ALICE@example.com", alice.account.did, "nobody.test"]) {
      const answers: Record<string, string> = {};
      for (const [name, accounts] of Object.entries(browsers())) answers[name] = await errorOf(none(hint), accounts);
      expect(new Set(Object.values(answers)), `${hint}: ${JSON.stringify(answers)}`).toEqual(new Set(["login_required: The user must sign in"]));
    }
  });

  it("without a hint, a client no account here allowed gets login_required however many accounts are signed in", async () => {
    for (const [name, accounts] of Object.entries(browsers())) expect(await errorOf(none(), accounts), name).toBe("login_required: The user must sign in");
  });

  it("for a client the account allowed: a code when it stays signed in, login_required when not, consent_required for a wider scope", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE);
    expect(await errorOf(none("alice.test"), [alice])).toBe("code for alice.test");
    expect(await errorOf(none(), [alice])).toBe("code for alice.test");
    expect(await errorOf(none("alice.test"), [signedIn("alice", { staySignedIn: false })])).toBe("login_required: The user must sign in");
    expect(await errorOf(none("alice.test"), [bob])).toBe("login_required: The user must sign in");
    const wider = request({ prompt: "none", login_hint: "alice.test", scope: `${SCOPE} transition:email` });
    expect(await errorOf(wider, [alice])).toBe("consent_required: The user must approve this request");
  });

  it("an app the account allowed cannot confirm a guessed email with prompt=none: an email hints only on a shown screen", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE);
    // The app holds no email permission: answering a code for the right email and login_required for a wrong one
    // would tell it, one silent navigation per guess, which email is the account's.
    for (const guess of ["alice@example.com", "ALICE@EXAMPLE.COM", "alice@example.org", "bob@example.com"]) {
      expect(await errorOf(none(guess), [alice]), guess).toBe("login_required: The user must sign in");
    }
    expect(await errorOf(none("alice.test"), [alice])).toBe("code for alice.test");
    // On the screen the person sees, an email still names the account.
    expect(accountsThatMayAnswer([alice], request({ login_hint: "alice@example.com" }))).toEqual([alice]);
  });

  it("several accounts that may answer, one of which allowed the client: account_selection_required; a hint picks one", async () => {
    await apps.remember(bob.account.did, CLIENT, SCOPE);
    expect(await errorOf(none(), [alice, bob])).toBe("account_selection_required: Several accounts are signed in; the user must choose one");
    expect(await errorOf(none("bob.test"), [alice, bob])).toBe("code for bob.test");
    expect(await errorOf(none("alice.test"), [alice, bob])).toBe("login_required: The user must sign in");
  });

  it("an app disconnected on the connected-apps page is never allowed again as far as prompt=none is concerned", async () => {
    await apps.remember(alice.account.did, CLIENT, SCOPE);
    expect(await errorOf(none("alice.test"), [alice])).toBe("code for alice.test");
    await apps.revoke(alice.account.did, CLIENT);
    expect(await errorOf(none("alice.test"), [alice])).toBe("login_required: The user must sign in");
  });
});
