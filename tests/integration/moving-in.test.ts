/**
 * Moving an account here from another PDS (docs/decisions/0055), through the official client (`@atproto/api`'s
 * AtpAgent) as the reference's documented migration drives it. The account exists here deactivated, with its DID
 * registered at the run's PLC directory (what createAccount with `did` leaves: that method belongs to account
 * creation); the repository comes from @atproto/repo's Repo.create, as the old PDS makes it, signed with the key the
 * DID document names. After the import, @atproto/repo's own verification checks what this server serves.
 */
import { AtpAgent } from "@atproto/api";
import { Secp256k1Keypair, type Keypair } from "@atproto/crypto";
import { createServiceJwt } from "../../app/.server/accounts/service-auth.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { encryptionKey, KeyRing } from "../../app/.server/accounts/key-encryption.ts";
import { accountKeypair, SigningKeys } from "../../app/.server/accounts/signing-key.ts";
import { SqlSecretStore } from "../../app/.server/stores/secrets.ts";
import { at, sql } from "../../app/.server/db/sql.ts";
import { SqlRepoStore } from "../../app/.server/stores/sql-repo-store.ts";
import { PlcDirectory } from "../../app/.server/identity/plc-directory.ts";
import { atprotoOperation, didOfGenesis, operationCid, signOperation, type UnsignedPlcOperation } from "../../app/.server/identity/plc-operation.ts";
import { loadRotationKey } from "../../app/.server/identity/rotation-key.ts";
import { generateSigningKey } from "../../app/.server/accounts/signing-key.ts";
import { readCarWithRoot, verifyRepo } from "@atproto/repo";
import { cidForRawBytes } from "@atproto/lex-data";
import { execute, rowOf, rowsOf } from "../helpers/databases.ts";
import { exportRepository, foreignRepositoryCar, verifiedRepository, type ForeignRecord } from "../helpers/repositories.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { ALICE } from "../helpers/flow.ts";
import { openPage, pageText, signedIn as signedInBrowser } from "../helpers/account.ts";
import { LANGUAGES } from "../../app/i18n/languages.ts";
import { readFileSync } from "node:fs";
import { agentRefusal, callRaw, tokenWithScope } from "../helpers/xrpc.ts";
import { ADMIN_PASSWORD, adminInviteCode } from "../helpers/invites.ts";

const MAX_IMPORT_BYTES = 1024 * 1024;
const CAROL = { handle: "carol.test", email: "carol@example.com", password: "carol's long password" };
const DAVE = { handle: "dave.test", email: "dave@example.com", password: "dave's long password" };
const POST = "app.bsky.feed.post";

let server: TestServer;
let carol: { did: string; handle: string };
let carolsKey: Awaited<ReturnType<typeof accountKeypair>>;
/** The server's key-encryption key, which the test holds as the operator does: it opens the accounts' signing keys. */
const KEY_ENCRYPTION = randomBytes(32);
const keyEnv = { ATRIUM_KEY_ENCRYPTION_KEY: KEY_ENCRYPTION.toString("hex") };
const signingKeys = new SigningKeys(new KeyRing(encryptionKey(KEY_ENCRYPTION)));

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_IMPORT_MAX_BYTES: String(MAX_IMPORT_BYTES), ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ...keyEnv });
  carol = await createAccount(server, CAROL, { env: keyEnv });
  await createAccount(server, ALICE, { env: keyEnv });
  const row = await rowOf<{ signingKey: string }>(server.database(), sql`SELECT "signingKey" FROM "Account" WHERE "did" = ${carol.did}`);
  carolsKey = await signingKeys.keypair(carol.did, row!.signingKey);
  await execute(server.database(), sql`UPDATE "Account" SET "deactivatedAt" = ${at(Date.now())} WHERE "did" = ${carol.did}`);
});
afterAll(async () => {
  await server?.stop();
});

const post = (rkey: string, text: string): ForeignRecord => ({ collection: POST, rkey, value: { $type: POST, text, createdAt: "2026-11-01T00:00:00.000Z" } });

async function signedIn(): Promise<AtpAgent> {
  const agent = new AtpAgent({ service: server.issuer });
  await agent.login({ identifier: CAROL.handle, password: CAROL.password });
  return agent;
}

/** Carol's repository as stored, checked by @atproto/repo with her key here: its records' paths. */
async function storedPaths(): Promise<string[]> {
  const car = await exportRepository(new SqlRepoStore(server.database(), { blobGraceMs: 3600_000, eventRetentionMs: 3600_000 }), carol.did);
  return (await verifiedRepository(car, carol.did, carolsKey.did())).creates.map((op) => `${op.collection}/${op.rkey}`).sort();
}

const refusal = agentRefusal;
const importRepo = (agent: AtpAgent, car: Uint8Array, encoding = "application/vnd.ipld.car") => agent.com.atproto.repo.importRepo(car, { encoding: encoding as "application/vnd.ipld.car" });

describe("com.atproto.repo.importRepo", () => {
  it("takes in the old server's repository from a deactivated account's password session, whole, and re-signed here", async () => {
    const agent = await signedIn();
    expect(agent.session?.active).toBe(false);
    const made = await foreignRepositoryCar(carol.did, carolsKey, [post("3k2aaaaaaaa22", "first"), post("3k2aaaaaaab22", "second")]);
    await importRepo(agent, made.car);

    expect(await storedPaths()).toEqual([`${POST}/3k2aaaaaaaa22`, `${POST}/3k2aaaaaaab22`]);
    const head = await rowOf<{ rev: string }>(server.database(), sql`SELECT "rev" FROM "RepoRoot" WHERE "did" = ${carol.did}`);
    expect(head!.rev > made.rev).toBe(true);
    // The reference sequences nothing on import: the relays hear of the repository at activateAccount.
    expect(await rowsOf(server.database(), sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${carol.did} AND "type" = 'sync'`)).toEqual([]);
  });

  it("refuses, changing nothing: a CAR another key signed, a body past ATRIUM_IMPORT_MAX_BYTES, another media type, an OAuth token", async () => {
    const agent = await signedIn();
    const before = await storedPaths();

    const forged = await foreignRepositoryCar(carol.did, await Secp256k1Keypair.create(), [post("3k2aaaaaaac22", "forged")]);
    expect(await refusal(importRepo(agent, forged.car))).toMatchObject({ status: 400, error: "InvalidRequest", message: expect.stringMatching(/not signed by the key/) });

    const large = await foreignRepositoryCar(carol.did, carolsKey, Array.from({ length: 300 }, (_, i) => post(`3k2${String(i).padStart(6, "0")}a22`, `${"y".repeat(4000)}${i}`)));
    expect(large.car.byteLength).toBeGreaterThan(MAX_IMPORT_BYTES);
    expect(await refusal(importRepo(agent, large.car))).toMatchObject({ status: 413 });

    expect(await refusal(importRepo(agent, forged.car, "application/octet-stream"))).toMatchObject({ status: 400, message: expect.stringMatching(/Content-Type must be application\/vnd.ipld.car/) });

    expect(await storedPaths()).toEqual(before);
    expect(await rowsOf(server.database(), sql`SELECT "id" FROM "RepoImport"`)).toEqual([]);
  });

  it("an OAuth app, whatever its scope, may not replace a repository", async () => {
    const token = await tokenWithScope(server, "atproto transition:generic");
    const made = await foreignRepositoryCar(carol.did, carolsKey, [post("3k2aaaaaaad22", "oauth")]);
    const answer = await callRaw<{ error?: string }>(token, "POST", "com.atproto.repo.importRepo", { body: Buffer.from(made.car), headers: { "Content-Type": "application/vnd.ipld.car" } });
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 403, error: "Forbidden" });
  });
});

/**
 * Dave moves here: his account exists here deactivated with a signing key of its own, while his DID document still
 * names the old server's key (what createAccount with `did` leaves). The CAR is signed with that old key.
 */
describe("after the import: listMissingBlobs, uploadBlob, checkAccountStatus, activateAccount", () => {
  const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
  let dave: { did: string; handle: string };
  let oldKey: Awaited<ReturnType<typeof accountKeypair>>;
  let newKey: Awaited<ReturnType<typeof accountKeypair>>;
  let agent: AtpAgent;

  /** The PLC operation the old server signs after the emailed code (identity: signPlcOperation): the key here, this server's rotation key and endpoint. */
  async function pointDidHere(): Promise<void> {
    const directory = new PlcDirectory(process.env.ATRIUM_PLC_DIRECTORY_URL!);
    const rotationKey = await loadRotationKey(undefined, new SqlSecretStore(server.database()), Date.now());
    const last = await directory.lastOperation(dave.did);
    const operation = atprotoOperation({ handle: dave.handle, signingKey: newKey.did(), pdsEndpoint: server.issuer, rotationKeys: [rotationKey.did()] }, await operationCid(last!));
    await directory.submit(dave.did, await signOperation(operation, rotationKey));
  }

  beforeAll(async () => {
    dave = await createAccount(server, DAVE, { env: keyEnv });
    const row = await rowOf<{ signingKey: string }>(server.database(), sql`SELECT "signingKey" FROM "Account" WHERE "did" = ${dave.did}`);
    oldKey = await signingKeys.keypair(dave.did, row!.signingKey);
    const fresh = await generateSigningKey();
    newKey = await accountKeypair(fresh);
    await execute(server.database(), sql`UPDATE "Account" SET "signingKey" = ${signingKeys.seal(dave.did, fresh)}, "deactivatedAt" = ${at(Date.now())} WHERE "did" = ${dave.did}`);
    agent = new AtpAgent({ service: server.issuer });
    await agent.login({ identifier: DAVE.handle, password: DAVE.password });
  });

  it("the repository signed with the key the DID document names is taken in; its blob is listed missing until uploaded", async () => {
    const blobCid = (await cidForRawBytes(PNG)).toString();
    const image = { $type: "blob", ref: { $link: blobCid }, mimeType: "image/png", size: PNG.byteLength };
    const records: ForeignRecord[] = [post("3k2aaaaaaaa22", "one"), { collection: POST, rkey: "3k2aaaaaaab22", value: { $type: POST, text: "two", createdAt: "2026-11-01T00:00:00.000Z", embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image }] } } }];
    const made = await foreignRepositoryCar(dave.did, oldKey, records);
    await importRepo(agent, made.car);

    expect((await agent.com.atproto.repo.listMissingBlobs({})).data).toEqual({ blobs: [{ cid: blobCid, recordUri: `at://${dave.did}/${POST}/3k2aaaaaaab22` }], cursor: blobCid });
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ activated: false, validDid: false, indexedRecords: 2, expectedBlobs: 1, importedBlobs: 0, privateStateValues: 0 });

    await agent.com.atproto.repo.uploadBlob(PNG, { encoding: "image/png" });
    expect((await agent.com.atproto.repo.listMissingBlobs({})).data).toEqual({ blobs: [] });
    const head = await rowOf<{ cid: string; rev: string }>(server.database(), sql`SELECT "cid", "rev" FROM "RepoRoot" WHERE "did" = ${dave.did}`);
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ repoCommit: head!.cid, repoRev: head!.rev, expectedBlobs: 1, importedBlobs: 1 });
  });

  it("activateAccount is refused while the DID document names the old server's key, and announces the account once it names this one", async () => {
    expect(await refusal(agent.com.atproto.server.activateAccount())).toMatchObject({ status: 400, error: "InvalidRequest", message: expect.stringMatching(/does not match expected signing key/) });
    expect((await agent.com.atproto.server.getSession()).data.active).toBe(false);

    await pointDidHere();
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ validDid: true, activated: false });
    await agent.com.atproto.server.activateAccount();
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ validDid: true, activated: true });

    // The reference's order: #account active, #identity, then #sync with the imported repository's commit.
    const events = await rowsOf<{ type: string }>(server.database(), sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${dave.did} ORDER BY "seq"`);
    expect(events.map((event) => event.type).slice(-3)).toEqual(["account", "identity", "sync"]);
    // What getRepo serves now, verified by @atproto/repo against the key the DID document names.
    const served = await new AtpAgent({ service: server.issuer }).com.atproto.sync.getRepo({ did: dave.did });
    const { root, blocks } = await readCarWithRoot(served.data);
    const verified = await verifyRepo(blocks, root, dave.did, newKey.did(), { ensureLeaves: true });
    expect(verified.creates.map((op) => op.rkey).sort()).toEqual(["3k2aaaaaaaa22", "3k2aaaaaaab22"]);
  });

  it("an OAuth app may not activate an account, and a deactivated account's other calls still answer AccountDeactivated", async () => {
    const token = await tokenWithScope(server, "atproto transition:generic");
    const answer = await callRaw<{ error?: string }>(token, "POST", "com.atproto.server.activateAccount");
    expect({ status: answer.status, error: answer.body.error }).toEqual({ status: 403, error: "Forbidden" });
    const carols = await signedIn();
    expect(await refusal(carols.com.atproto.repo.createRecord({ repo: carol.did, collection: POST, record: { $type: POST, text: "no", createdAt: new Date().toISOString() } }))).toMatchObject({ status: 401, error: "AccountDeactivated" });
  });
});

/**
 * Erin moves here from a PDS elsewhere, as the reference's documented migration does it, every step through AtpAgent:
 * her DID is registered at the run's PLC directory by the test, which holds its rotation key, naming the old PDS and
 * its signing key; the old PDS's service token for createAccount is minted with that key, as its getServiceAuth
 * would. createAccount with `did` gives a deactivated account and a password session, which does the rest.
 */
describe("createAccount with did: the whole documented migration", () => {
  const OLD_PDS = "https://old-pds.example.com";
  const CREATE_ACCOUNT = "com.atproto.server.createAccount";
  const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000", "hex");
  const directory = () => new PlcDirectory(process.env.ATRIUM_PLC_DIRECTORY_URL!);
  let serverDid: string;

  /** A DID of the old PDS: genesis signed with a rotation key the test holds; `signingKey` absent: its document names none. */
  async function didElsewhere(handle: string, signingKey: Keypair | undefined) {
    const rotationKey = await Secp256k1Keypair.create();
    const genesis = atprotoOperation({ handle, signingKey: signingKey?.did() ?? "", pdsEndpoint: OLD_PDS, rotationKeys: [rotationKey.did()] }, null);
    if (!signingKey) genesis.verificationMethods = {};
    const signed = await signOperation(genesis, rotationKey);
    const did = await didOfGenesis(signed);
    await directory().submit(did, signed);
    return { did, rotationKey };
  }

  /** A service token as the old PDS's getServiceAuth mints it, each claim changeable to forge it. */
  function serviceToken(claims: { iss: string; key: Keypair; aud?: string; lxm?: string; expiresAt?: number }) {
    const now = Date.now();
    return createServiceJwt({ iss: claims.iss, aud: claims.aud ?? serverDid, lxm: claims.lxm ?? CREATE_ACCOUNT, expiresAt: claims.expiresAt ?? now + 60_000, signingKey: claims.key, now });
  }

  function createAccountWithDid(fields: { handle: string; email: string; password: string; did: string; inviteCode: string }, token: string | undefined) {
    return new AtpAgent({ service: server.issuer }).com.atproto.server.createAccount(fields, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  }

  const accountRows = (did: string) => rowsOf<{ did: string }>(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${did}`);

  beforeAll(async () => {
    serverDid = (await new AtpAgent({ service: server.issuer }).com.atproto.server.describeServer()).data.did;
  });

  it("creates the account deactivated under a key of its own, whose session imports, uploads, and activates once the DID points here", async () => {
    const ERIN = { handle: "erin.test", email: "erin@example.com", password: "erin's long password" };
    const oldKey = await accountKeypair(await generateSigningKey());
    const { did, rotationKey } = await didElsewhere("erin.old-pds.example.com", oldKey);
    const genesisCid = await operationCid((await directory().lastOperation(did))!);

    const created = await createAccountWithDid({ ...ERIN, did, inviteCode: await adminInviteCode(server) }, await serviceToken({ iss: did, key: oldKey }));
    expect(created.data).toMatchObject({ did, handle: ERIN.handle, accessJwt: expect.any(String), refreshJwt: expect.any(String) });
    // Its didDoc is the DID's document as the directory has it: still naming the old server.
    expect(created.data.didDoc).toMatchObject({ id: did, service: [{ id: "#atproto_pds", serviceEndpoint: OLD_PDS }] });
    const agent = new AtpAgent({ service: server.issuer });
    await agent.resumeSession({ ...created.data, active: false });
    expect(agent.session?.active).toBe(false);

    // Deactivated, under a sealed key of its own, which getRecommendedDidCredentials names; the DID untouched, the
    // firehose told nothing, and an empty repository until the import (checkAccountStatus answers its commit).
    const row = await rowOf<{ signingKey: string; deactivatedAt: unknown }>(server.database(), sql`SELECT "signingKey", "deactivatedAt" FROM "Account" WHERE "did" = ${did}`);
    expect(row!.deactivatedAt).not.toBeNull();
    const newKey = await signingKeys.keypair(did, row!.signingKey);
    expect(newKey.did()).not.toBe(oldKey.did());
    const recommended = (await agent.com.atproto.identity.getRecommendedDidCredentials()).data;
    expect(recommended.verificationMethods).toEqual({ atproto: newKey.did() });
    expect(await operationCid((await directory().lastOperation(did))!)).toBe(genesisCid);
    expect(await rowsOf(server.database(), sql`SELECT "seq" FROM "RepoEvent" WHERE "did" = ${did}`)).toEqual([]);
    const empty = await rowOf<{ cid: string; rev: string }>(server.database(), sql`SELECT "cid", "rev" FROM "RepoRoot" WHERE "did" = ${did}`);
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ activated: false, validDid: false, indexedRecords: 0, repoCommit: empty!.cid, repoRev: empty!.rev });

    const blobCid = (await cidForRawBytes(PNG)).toString();
    const image = { $type: "blob", ref: { $link: blobCid }, mimeType: "image/png", size: PNG.byteLength };
    const withImage = { $type: POST, text: "moved", createdAt: "2026-11-01T00:00:00.000Z", embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image }] } };
    const made = await foreignRepositoryCar(did, oldKey, [post("3k2aaaaaaaa22", "before the move"), { collection: POST, rkey: "3k2aaaaaaab22", value: withImage }]);
    await importRepo(agent, made.car);
    expect((await agent.com.atproto.repo.listMissingBlobs({})).data.blobs).toEqual([{ cid: blobCid, recordUri: `at://${did}/${POST}/3k2aaaaaaab22` }]);
    await agent.com.atproto.repo.uploadBlob(PNG, { encoding: "image/png" });
    expect((await agent.com.atproto.repo.listMissingBlobs({})).data).toEqual({ blobs: [] });
    // The guide's preferences step, while the account is still deactivated.
    const preferences = [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: false }];
    await agent.app.bsky.actor.putPreferences({ preferences });
    expect(await refusal(agent.com.atproto.server.activateAccount())).toMatchObject({ status: 400, error: "InvalidRequest" });

    // The identity step: the recommended credentials, signed with the rotation key the person holds, submitted here.
    const operation = await signOperation({ type: "plc_operation", ...recommended, rotationKeys: [rotationKey.did(), ...recommended.rotationKeys!], prev: genesisCid } as UnsignedPlcOperation, rotationKey);
    await agent.com.atproto.identity.submitPlcOperation({ operation });
    expect((await agent.com.atproto.server.checkAccountStatus()).data).toMatchObject({ activated: false, validDid: true, indexedRecords: 2, expectedBlobs: 1, importedBlobs: 1 });
    await agent.com.atproto.server.activateAccount();
    expect((await agent.com.atproto.server.getSession()).data.active).toBe(true);
    expect((await agent.app.bsky.actor.getPreferences()).data.preferences).toEqual(preferences);

    const served = await new AtpAgent({ service: server.issuer }).com.atproto.sync.getRepo({ did });
    const { root, blocks } = await readCarWithRoot(served.data);
    const verified = await verifyRepo(blocks, root, did, newKey.did(), { ensureLeaves: true });
    expect(verified.creates.map((op) => op.rkey).sort()).toEqual(["3k2aaaaaaaa22", "3k2aaaaaaab22"]);
  });

  it("refuses, leaving no account: another key's signature, another audience or method, an expired token, a DID naming no key, no token, an existing account", async () => {
    const FRANK = { handle: "frank.test", email: "frank@example.com", password: "frank's long password", inviteCode: await adminInviteCode(server, 10) };
    const oldKey = await accountKeypair(await generateSigningKey());
    const { did } = await didElsewhere("frank.old-pds.example.com", oldKey);
    const { did: keyless } = await didElsewhere("keyless.old-pds.example.com", undefined);
    const otherKey = await accountKeypair(await generateSigningKey());
    const attempts: Array<[string, string, Promise<string> | undefined, object]> = [
      ["another key", did, serviceToken({ iss: did, key: otherKey }), { status: 401, error: "BadJwtSignature", message: "jwt signature does not match jwt issuer" }],
      ["another audience", did, serviceToken({ iss: did, key: oldKey, aud: "did:web:elsewhere.example.com" }), { status: 401, error: "BadJwtAudience", message: "jwt audience does not match service did" }],
      ["another method", did, serviceToken({ iss: did, key: oldKey, lxm: "com.atproto.repo.createRecord" }), { status: 401, error: "BadJwtLexiconMethod", message: `bad jwt lexicon method ("lxm"). must match: ${CREATE_ACCOUNT}` }],
      ["expired", did, serviceToken({ iss: did, key: oldKey, expiresAt: Date.now() - 1000 }), { status: 401, error: "JwtExpired", message: "jwt expired" }],
      ["another DID's token", did, serviceToken({ iss: carol.did, key: carolsKey }), { status: 401, error: "AuthenticationRequired", message: `Missing auth to create account with did: ${did}` }],
      ["no token", did, undefined, { status: 401, error: "AuthenticationRequired", message: `Missing auth to create account with did: ${did}` }],
      ["a DID naming no key", keyless, serviceToken({ iss: keyless, key: oldKey }), { status: 401, error: "AuthenticationRequired", message: "missing or bad key in did doc" }],
    ];
    for (const [what, forDid, token, expected] of attempts) {
      expect(await refusal(createAccountWithDid({ ...FRANK, did: forDid }, token && (await token))), what).toMatchObject(expected);
      expect(await accountRows(forDid), what).toEqual([]);
    }
    expect(await rowsOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = ${FRANK.handle} OR "email" = ${FRANK.email}`)).toEqual([]);

    // Carol has an account here: her own key's token for her DID does not make another.
    const again = createAccountWithDid({ ...FRANK, did: carol.did }, await serviceToken({ iss: carol.did, key: carolsKey }));
    expect(await refusal(again)).toMatchObject({ status: 400, error: "AlreadyExists", message: "Repo already exists" });
    expect(await accountRows(carol.did)).toHaveLength(1);
    expect(await rowsOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = ${FRANK.handle} OR "email" = ${FRANK.email}`)).toEqual([]);
  });
});

describe("moving out, on the account page", () => {
  it("the overview explains the steps in every language, without JavaScript, and links to the reference's guide", async () => {
    const browser = await signedInBrowser(server, ALICE.handle, ALICE.password);
    for (const language of LANGUAGES) {
      const moving = (JSON.parse(readFileSync(`app/i18n/locales/${language}/account.json`, "utf8")) as { overview: { moving: Record<string, string> } }).overview.moving;
      const page = await openPage(browser, `/account?lng=${language}`);
      // No NUL anywhere: React 18.3 padded a chunk of the Japanese page with one at byte 6142 (screens/stream-page.ts).
      expect(page.html.indexOf("\u0000"), language).toBe(-1);
      const text = pageText(page.html);
      for (const key of ["heading", "intro", "step1", "step2", "step3", "step4", "guide"]) expect(text, `${language} ${key}`).toContain(moving[key]);
      expect(page.html).toContain('href="https://github.com/bluesky-social/pds/blob/main/ACCOUNT_MIGRATION.md"');
    }
  });
});
