/**
 * Credible exit and entry (issue 30, items 1, 2 and 5; docs/decisions/0050), against a started server, a real SMTP
 * server and the test run's real PLC directory, the operations checked with the reference's own @did-plc/lib:
 * the PLC operations a person makes on their own DID through this server (getRecommendedDidCredentials, the emailed
 * code, signPlcOperation, submitPlcOperation), a recovery key of their own above this server's (at creation and on
 * /account/identity), with which they rewrite their DID document alone once this server's key is gone from it, and the
 * deletion of an account whose DID has moved, which succeeds and leaves the DID as it is.
 */
import { cidForCbor } from "@atproto/common";
import { P256Keypair, Secp256k1Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { MINUTE } from "../../app/.server/util/time.ts";
import { openPage, pageText, postForm, signedIn, type Browser } from "../helpers/account.ts";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startSmtpServer, typedCodeIn, type TestSmtp } from "../helpers/smtp.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callRaw, expectInsufficientScope, tokensForScopes, type ScopedToken, type XrpcErrorBody } from "../helpers/xrpc.ts";
import { accountDidKey } from "../helpers/xrpc-extra.ts";

const directoryUrl = inject("plcDirectoryUrl");

let smtp: TestSmtp;
let clock: TestClock;
let server: TestServer;
let alice: { did: string; handle: string };
let tokens: Record<"generic" | "handleOnly" | "atproto", ScopedToken>;
let serverKey: string;
let counter = 0;
const newAddress = () => `198.51.100.${++counter}`;

type Operation = plc.Operation;

async function lastOperation(did: string): Promise<Operation> {
  const response = await fetch(`${directoryUrl}/${did}/log/last`);
  expect(response.status).toBe(200);
  return (await response.json()) as Operation;
}

async function operationLog(did: string): Promise<string> {
  return (await fetch(`${directoryUrl}/${did}/log`)).text();
}

async function submitToDirectory(did: string, operation: unknown): Promise<number> {
  const response = await fetch(`${directoryUrl}/${did}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(operation) });
  await response.body?.cancel();
  return response.status;
}

async function identityEvents(did: string): Promise<number> {
  return (await rowsOf(server.database(), sql`SELECT "seq" FROM "RepoEvent" WHERE "did" = ${did} AND "type" = 'identity'`)).length;
}

/** A code for Alice's PLC operations, as requestPlcOperationSignature emails it. */
async function plcCode(token: ScopedToken = tokens.generic): Promise<string> {
  // No input, as @atproto/api sends it: a POST without a body or Content-Type; the email in the caller's language.
  const asked = await callRaw(token, "POST", "com.atproto.identity.requestPlcOperationSignature", { headers: { "accept-language": "fr" } });
  expect(asked.status, JSON.stringify(asked.body)).toBe(200);
  const mail = await smtp.next();
  expect(mail.subject).toContain("Code pour modifier votre identité");
  return typedCodeIn(mail);
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  clock = testClock();
  server = await startTestServer({ ...clock.env, ATRIUM_TRUST_PROXY: "1", ATRIUM_SMTP_URL: smtp.url, ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>", ATRIUM_SERVICE_NAME: "Atrium Test" });
  alice = await createAlice(server);
  tokens = await tokensForScopes(server, { generic: "atproto transition:generic", handleOnly: "atproto identity:handle", atproto: "atproto" });
  serverKey = (await lastOperation(alice.did)).rotationKeys[0]!;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await smtp?.stop();
  clock?.remove();
});

describe("the PLC operations, through XRPC (item 1)", () => {
  it("getRecommendedDidCredentials answers what the DID document should say for the account to live here, to any token of the account", async () => {
    const answer = await call<Record<string, unknown>>(tokens.atproto, "com.atproto.identity.getRecommendedDidCredentials");
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      rotationKeys: [serverKey],
      alsoKnownAs: [`at://${ALICE.handle}`],
      verificationMethods: { atproto: await accountDidKey(alice.did) },
      services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: server.issuer } },
    });
  });

  it("the code, the signature and the submission need identity:* (transition:generic has it); identity:handle or atproto alone are refused", async () => {
    for (const token of [tokens.handleOnly, tokens.atproto]) {
      expectInsufficientScope(await callRaw(token, "POST", "com.atproto.identity.requestPlcOperationSignature"), "identity:*");
      expectInsufficientScope(await call(token, "com.atproto.identity.signPlcOperation", { json: { token: "AAAAA-AAAAA" } }), "identity:*");
      expectInsufficientScope(await call(token, "com.atproto.identity.submitPlcOperation", { json: { operation: {} } }), "identity:*");
    }
  });

  it("signPlcOperation spends the emailed code once, even asked eight times at once, and signs the next operation with this server's key; nothing is submitted", async () => {
    const code = await plcCode();
    const before = await lastOperation(alice.did);
    const newPds = "https://newpds.example.com";
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        call<{ operation: Operation } & XrpcErrorBody>(tokens.generic, "com.atproto.identity.signPlcOperation", {
          json: { token: code.toLowerCase(), services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: newPds } } },
        }),
      ),
    );
    const signed = answers.filter((answer) => answer.status === 200);
    expect(signed).toHaveLength(1);
    for (const refused of answers.filter((answer) => answer.status !== 200)) expect(refused.body.error).toBe("InvalidToken");
    const operation = signed[0]!.body.operation;
    // The reference's checks: signed by one of the last operation's rotation keys (this server's), chained to it.
    expect(await plc.assureValidSig(before.rotationKeys, operation)).toBe(serverKey);
    expect(operation.prev).toBe((await cidForCbor(before)).toString());
    expect(operation).toMatchObject({ rotationKeys: before.rotationKeys, alsoKnownAs: before.alsoKnownAs, verificationMethods: before.verificationMethods, services: { atproto_pds: { endpoint: newPds } } });
    expect(await lastOperation(alice.did)).toEqual(before);
  });

  it("refuses a missing, wrong or spent code and malformed changes, in the reference's words, without spending a right code on bad input", async () => {
    const missing = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.signPlcOperation", { json: {} });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: "InvalidRequest", message: "email confirmation token required to sign PLC operations" });
    const code = await plcCode();
    for (const json of [
      { token: code, rotationKeys: ["did:key:zNotAKey"] },
      { token: code, rotationKeys: [] },
      { token: code, rotationKeys: Array.from({ length: 6 }, (_, i) => `did:key:z${i}`) },
      { token: code, rotationKeys: [serverKey, serverKey] },
      { token: code, verificationMethods: { atproto: "not a key" } },
      { token: code, services: { atproto_pds: { type: "AtprotoPersonalDataServer" } } },
      { token: code, alsoKnownAs: ["x".repeat(600)] },
      { token: 12 },
    ]) {
      const answer = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.signPlcOperation", { json });
      expect(answer.status, JSON.stringify(json).slice(0, 80)).toBe(400);
      expect(answer.body.error).toBe("InvalidRequest");
    }
    const wrong = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.signPlcOperation", { json: { token: "AAAAA-AAAAA" } });
    expect(wrong.body.error).toBe("InvalidToken");
    // The right code still works after the refusals of bad input and one wrong guess.
    const signed = await call<{ operation: Operation }>(tokens.generic, "com.atproto.identity.signPlcOperation", { json: { token: code } });
    expect(signed.status).toBe(200);
  });

  it("submitPlcOperation sends an operation that keeps this server's key, endpoint, signing key and handle, and announces #identity", async () => {
    const code = await plcCode();
    // An alias beside the handle: everything this server checks stays as it is.
    const signed = await call<{ operation: Operation }>(tokens.generic, "com.atproto.identity.signPlcOperation", {
      json: { token: code, alsoKnownAs: [`at://${ALICE.handle}`, "https://alice.example.com"] },
    });
    expect(signed.status).toBe(200);
    const events = await identityEvents(alice.did);
    const submitted = await call(tokens.generic, "com.atproto.identity.submitPlcOperation", { json: { operation: signed.body.operation } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    expect((await lastOperation(alice.did)).alsoKnownAs).toEqual([`at://${ALICE.handle}`, "https://alice.example.com"]);
    expect(await identityEvents(alice.did)).toBe(events + 1);
  });

  it("submitPlcOperation refuses an operation that would point the account away, or that the directory refuses, and sends nothing", async () => {
    const last = await lastOperation(alice.did);
    const other = await Secp256k1Keypair.create();
    const base = { rotationKeys: last.rotationKeys, verificationMethods: last.verificationMethods, alsoKnownAs: last.alsoKnownAs, services: last.services };
    const cases: Array<[string, Record<string, unknown>]> = [
      ["Rotation keys do not include server's rotation key", { ...base, rotationKeys: [other.did()] }],
      ["Incorrect type on atproto_pds service", { ...base, services: { atproto_pds: { type: "Something", endpoint: server.issuer } } }],
      ["Incorrect endpoint on atproto_pds service", { ...base, services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://elsewhere.example" } } }],
      ["Incorrect signing key", { ...base, verificationMethods: { atproto: other.did() } }],
      ["Incorrect handle in alsoKnownAs", { ...base, alsoKnownAs: ["at://someone-else.test"] }],
    ];
    const before = await operationLog(alice.did);
    for (const [message, fields] of cases) {
      const operation = await plc.addSignature({ type: "plc_operation", ...fields, prev: (await cidForCbor(last)).toString() } as plc.UnsignedOperation, other);
      const answer = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.submitPlcOperation", { json: { operation } });
      expect(answer.status, message).toBe(400);
      expect(answer.body).toMatchObject({ error: "InvalidRequest", message });
    }
    // Everything this server checks is right, but it is signed by a key that is not a rotation key: the directory
    // refuses it, which is the operation's fault (400), not the directory failing (502).
    const forged = await plc.addSignature({ type: "plc_operation", ...base, prev: (await cidForCbor(last)).toString() } as plc.UnsignedOperation, other);
    const refused = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.submitPlcOperation", { json: { operation: forged } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("InvalidRequest");
    for (const operation of [{ type: "plc_tombstone", prev: "x", sig: "y" }, { ...forged, extra: 1 }, "nothing", null]) {
      const answer = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.submitPlcOperation", { json: { operation } });
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(/^Invalid operation/);
    }
    expect(await operationLog(alice.did)).toBe(before);
  });

  it("a deactivated account may still make them (moving happens while one end is deactivated), and nothing else", async () => {
    // Deactivated as the page does it, in the row (docs/decisions/0031: the token stays, its calls are refused).
    await execute(server.database(), sql`UPDATE "Account" SET "deactivatedAt" = ${at(Date.now())} WHERE "did" = ${alice.did}`);
    try {
      expect((await call(tokens.generic, "com.atproto.identity.getRecommendedDidCredentials")).status).toBe(200);
      // Past the deactivation gate to their own answers: the input's refusals, not AccountDeactivated.
      const unsigned = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.signPlcOperation", { json: {} });
      expect(unsigned.body.message).toBe("email confirmation token required to sign PLC operations");
      const submitted = await call<XrpcErrorBody>(tokens.generic, "com.atproto.identity.submitPlcOperation", { json: { operation: {} } });
      expect(submitted.body.message).toMatch(/^Invalid operation/);
      const write = await call<XrpcErrorBody>(tokens.generic, "com.atproto.repo.createRecord", { json: { repo: alice.did, collection: "app.bsky.feed.post", record: { text: "x", createdAt: new Date().toISOString() } } });
      expect(write.status).toBe(401);
      expect(write.body.error).toBe("AccountDeactivated");
    } finally {
      await execute(server.database(), sql`UPDATE "Account" SET "deactivatedAt" = NULL WHERE "did" = ${alice.did}`);
    }
  });

  it("requests for a code are capped per account: after three, the next waits, and says so", async () => {
    const capped = await callRaw<XrpcErrorBody>(tokens.generic, "POST", "com.atproto.identity.requestPlcOperationSignature");
    expect(capped.status).toBe(429);
    expect(capped.body.message).toMatch(/^Too many requests for an identity operation code\. Wait \d+ (seconds?|minutes?) and try again\.$/);
    expect(Number(capped.headers.get("Retry-After"))).toBeGreaterThan(0);
  });
});

describe("a recovery key of the person's own (item 2)", () => {
  it("given at creation, it is placed above this server's key in the genesis operation; a malformed one is refused before anything is registered", async () => {
    const own = await Secp256k1Keypair.create();
    const grace = await createAccount(server, { handle: "grace.test", email: "grace@example.com", password: "grace's long password" }, { recoveryKey: own.did() });
    const genesis = (JSON.parse(await operationLog(grace.did)) as Operation[])[0]!;
    const data = await plc.assureValidCreationOp(grace.did, genesis);
    expect(data.rotationKeys).toEqual([own.did(), serverKey]);
    const exported = await (await fetch(`${directoryUrl}/export`)).text();
    await expect(createAccount(server, { handle: "heidi.test", email: "heidi@example.com", password: "heidi's long password" }, { recoveryKey: "did:key:zNope" })).rejects.toThrow(/recoveryKey/);
    expect(await (await fetch(`${directoryUrl}/export`)).text()).toBe(exported);
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = 'heidi.test'`)).toBeUndefined();
  });
});

describe("/account/identity, then moving away with the key alone, then deleting the account here (items 2 and 5)", () => {
  const CAROL = { handle: "carol.test", email: "carol@example.com", password: "carol's long password" };
  let carol: { did: string; handle: string };
  let browser: Browser & { csrfToken: string };
  let own: P256Keypair;

  beforeAll(async () => {
    carol = await createAccount(server, CAROL);
    browser = await signedIn(server, CAROL.handle, CAROL.password, newAddress());
    own = await P256Keypair.create({ exportable: true });
  });

  const add = (didKey: string, options: { origin?: string | null; csrf?: string } = {}) =>
    postForm(browser, "/account/identity", { csrf_token: options.csrf ?? browser.csrfToken, account: carol.did, intent: "add", didKey }, { origin: options.origin });

  it("shows what the DID document says now, in plain words, and the form that adds a key (signing in just now counts as a recent confirmation)", async () => {
    const page = await openPage(browser, "/account/identity");
    expect(page.status).toBe(200);
    const text = pageText(page.html);
    expect(text).toContain("Keep a key of your own");
    expect(text).toContain("Only this server's key can change it.");
    expect(text).toContain(serverKey);
    expect(text).toContain(`@${CAROL.handle}`);
    expect(text).toContain(server.issuer);
    expect(text).toContain("Your account's key on this server");
    expect(page.html).toMatch(/<input[^>]*name="didKey"/);
  });

  it("refuses what is not a key it may add, beside the field, and forged or foreign posts; nothing reaches the directory", async () => {
    const before = await operationLog(carol.did);
    for (const [didKey, words] of [
      ["", "Paste your public key"],
      ["did:key:zNope", "This is not a key the directory accepts"],
      ["did:web:example.com", "This is not a key the directory accepts"],
      [serverKey, "That is this server's own key"],
    ] as const) {
      const answer = await add(didKey);
      expect(answer.status, didKey).toBe(400);
      expect(pageText(answer.html)).toContain(words);
      expect(answer.html).toMatch(/<input[^>]*aria-invalid="true"[^>]*name="didKey"|<input[^>]*name="didKey"[^>]*aria-invalid="true"/);
    }
    expect((await add(own.did(), { csrf: "forged" })).status).toBe(403);
    expect((await add(own.did(), { origin: "https://evil.example" })).status).toBe(403);
    expect(await operationLog(carol.did)).toBe(before);
  });

  it("after the recent confirmation has passed, adding a key asks to confirm it's you first", async () => {
    clock.advance(6 * MINUTE);
    const page = await openPage(browser, "/account/identity");
    expect(pageText(page.html)).toContain("Confirm it's you");
    expect(page.html).not.toMatch(/<input[^>]*name="didKey"/);
    const refused = await add(own.did());
    expect(refused.status).toBe(403);
    expect(pageText(refused.html)).toContain("confirm it's you first");
    const confirmed = await postForm(browser, "/account/identity", { csrf_token: browser.csrfToken, account: carol.did, intent: "confirm", password: CAROL.password });
    expect(confirmed.status).toBe(303);
  });

  it("adds the person's key above this server's in one signed operation, and tells the account's address", async () => {
    const before = await lastOperation(carol.did);
    const added = await add(` ${own.did()} `);
    expect(added.status).toBe(303);
    expect(added.location).toBe("/account/identity?notice=own-key-added");
    const after = await lastOperation(carol.did);
    expect(after.rotationKeys).toEqual([own.did(), serverKey]);
    expect(await plc.assureValidSig(before.rotationKeys, after)).toBe(serverKey);
    expect(after.prev).toBe((await cidForCbor(before)).toString());
    const mail = await smtp.next();
    expect(mail.subject).toBe("A key was added to your identity on Atrium Test");
    expect(mail.text).toContain(own.did());
    const page = pageText((await openPage(browser, "/account/identity?notice=own-key-added")).html);
    expect(page).toContain("Your key is added");
    expect(page).toContain("Besides this server's key, the other keys listed can change it.");
    expect((await add(own.did())).status).toBe(400);
  });

  it("with that key alone the person removes this server's key and rewrites the document: the directory accepts both, and this server can change nothing any more", async () => {
    const withBoth = await lastOperation(carol.did);
    // Moving away: only the person's key, and a new PDS, signed by the person's key alone.
    const moved = await plc.createUpdateOp(withBoth, own, (normalized) => ({
      ...normalized,
      rotationKeys: [own.did()],
      services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://newpds.example.com" } },
    }));
    expect(await submitToDirectory(carol.did, moved)).toBe(200);
    // Once this server's key is gone, the person's key alone rewrites it again: a new handle.
    const renamed = await plc.updateHandleOp(await lastOperation(carol.did), own, "carol.newpds.example.com");
    expect(await submitToDirectory(carol.did, renamed)).toBe(200);
    const document = (await (await fetch(`${directoryUrl}/${carol.did}/data`)).json()) as { rotationKeys: string[]; alsoKnownAs: string[]; services: Record<string, { endpoint: string }> };
    expect(document).toMatchObject({ rotationKeys: [own.did()], alsoKnownAs: ["at://carol.newpds.example.com"], services: { atproto_pds: { endpoint: "https://newpds.example.com" } } });
    // This server's key no longer signs anything the directory takes, and the page says so and offers nothing.
    const forged = await plc.updateHandleOp(await lastOperation(carol.did), await Secp256k1Keypair.create(), "hijack.test");
    expect(await submitToDirectory(carol.did, forged)).toBe(400);
    const page = await openPage(browser, "/account/identity");
    expect(pageText(page.html)).toContain("This server's key is no longer in your record");
    expect(page.html).not.toMatch(/<input[^>]*name="didKey"/);
    const refused = await add((await Secp256k1Keypair.create()).did());
    expect(refused.status).toBe(400);
    expect(pageText(refused.html)).toContain("managed elsewhere now");
  });

  it("deleting the account whose DID has moved succeeds, and leaves the DID as it is", async () => {
    const log = await operationLog(carol.did);
    const page = await openPage(browser, "/account/delete");
    // This server does not hold the DID's only key: ending it is not offered.
    expect(page.html).not.toMatch(/name="endIdentity"/);
    const asked = await postForm(browser, "/account/delete", { csrf_token: browser.csrfToken, account: carol.did, intent: "request" });
    expect(asked.status).toBe(303);
    const code = typedCodeIn(await smtp.next());
    const deleted = await postForm(browser, "/account/delete", { csrf_token: browser.csrfToken, account: carol.did, intent: "delete", code, password: CAROL.password });
    expect(deleted.status).toBe(303);
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${carol.did}`)).toBeUndefined();
    expect(await operationLog(carol.did)).toBe(log);
    expect((await fetch(`${directoryUrl}/${carol.did}`)).status).toBe(200);
  });
});

describe("removing a key of one's own", () => {
  it("takes it out of the rotation keys in a signed operation; this server's key cannot be removed", async () => {
    const dave = await createAccount(server, { handle: "dave.test", email: "dave@example.com", password: "dave's long password" }, { recoveryKey: (await Secp256k1Keypair.create()).did() });
    const browser = await signedIn(server, "dave.test", "dave's long password", newAddress());
    const [ownKey] = (await lastOperation(dave.did)).rotationKeys;
    const remove = (didKey: string) => postForm(browser, "/account/identity", { csrf_token: browser.csrfToken, account: dave.did, intent: "remove", didKey });
    const refused = await remove(serverKey);
    expect(refused.status).toBe(400);
    expect(pageText(refused.html)).toContain("That is this server's own key");
    const removed = await remove(ownKey!);
    expect(removed.status).toBe(303);
    expect(removed.location).toBe("/account/identity?notice=own-key-removed");
    expect((await lastOperation(dave.did)).rotationKeys).toEqual([serverKey]);
    expect((await remove(ownKey!)).status).toBe(400);
  });
});
