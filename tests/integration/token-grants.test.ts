import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { postForm, signedIn } from "../helpers/account.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { ClientHost } from "../helpers/client-host.ts";
import { openConsentPage, submitConsent, CookieJar } from "../helpers/consent.ts";
import {
  ALICE,
  authorizeAndGetCode,
  CLIENT_ID,
  createAlice,
  createDpopProof,
  createPkce,
  fetchNonce,
  generateDpopKey,
  newClient,
  obtainTokens,
  parForm,
  proofedPost,
  rawPost,
  type DpopKey,
  type HttpResult,
  type OAuthErrorBody,
  type TokenSet,
} from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let server: TestServer;
let account: { did: string; handle: string };
let key: DpopKey;
let tokenUrl: string;

beforeAll(async () => {
  server = await startTestServer();
  account = await createAlice(server);
  key = await generateDpopKey();
  tokenUrl = `${server.issuer}/oauth/token`;
});
afterAll(() => server?.stop());

function expectError(result: HttpResult<unknown>, status: number, error: string) {
  expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status, error });
}

const par = (overrides: Record<string, string | undefined>) => proofedPost(server, key, "/oauth/par", parForm(overrides));

describe("PAR refusals (RFC 9126, RFC 7636, OAuth 2.1)", () => {
  it("accepts a valid request (control): 201", async () => {
    const result = await par({});
    expect(result.status).toBe(201);
  });

  it("refuses plain PKCE (code_challenge_method=plain): 400 invalid_request", async () => {
    const verifier = createPkce().verifier;
    expectError(await par({ code_challenge_method: "plain", code_challenge: verifier.slice(0, 43) }), 400, "invalid_request");
  });

  it("refuses a request without code_challenge_method: 400 invalid_request", async () => {
    expectError(await par({ code_challenge_method: undefined }), 400, "invalid_request");
  });

  it("refuses a request without code_challenge: 400 invalid_request", async () => {
    expectError(await par({ code_challenge: undefined }), 400, "invalid_request");
  });

  it("refuses a request without state: 400 invalid_request", async () => {
    expectError(await par({ state: undefined }), 400, "invalid_request");
  });

  it("refuses response_type=token: 400 unsupported_response_type", async () => {
    expectError(await par({ response_type: "token" }), 400, "unsupported_response_type");
  });

  it("refuses a redirect_uri the client did not declare: 400 invalid_request", async () => {
    expectError(await par({ redirect_uri: "https://attacker.example/callback" }), 400, "invalid_request");
    expectError(await par({ redirect_uri: "http://127.0.0.1:54321/other-path" }), 400, "invalid_request");
  });

  it("refuses a scope without atproto: 400 invalid_scope", async () => {
    expectError(await par({ scope: "transition:generic" }), 400, "invalid_scope");
  });

  it("refuses a scope the client did not declare: 400 invalid_scope", async () => {
    expectError(await par({ scope: "atproto transition:email" }), 400, "invalid_scope");
  });

  it('drops unknown scope values: "atproto foo:bar" yields a token with scope "atproto"', async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client, { scope: "atproto foo:bar" });
    expect(tokens.scope).toBe("atproto");
    expect(tokens.sub).toBe(account.did);
  });

  it("refuses a repeated parameter: 400 invalid_request", async () => {
    const form = new URLSearchParams(parForm());
    form.append("state", "second-state");
    expectError(await proofedPost(server, key, "/oauth/par", form), 400, "invalid_request");
  });
});

describe("token endpoint: authorization_code grant", () => {
  it("refuses a wrong code_verifier: 400 invalid_grant", async () => {
    const client = await newClient(server);
    const { code, redirectUri } = await authorizeAndGetCode(server, client);
    expectError(await client.exchangeCode(code, createPkce().verifier, redirectUri), 400, "invalid_grant");
  });

  it("refuses a redirect_uri other than the request's: 400 invalid_grant", async () => {
    const client = await newClient(server);
    const { code, verifier } = await authorizeAndGetCode(server, client, { redirectUri: "http://127.0.0.1:54321/callback" });
    expectError(await client.exchangeCode(code, verifier, "http://127.0.0.1:54322/callback"), 400, "invalid_grant");
  });

  it("refuses an unknown grant_type: 400 unsupported_grant_type", async () => {
    const client = await newClient(server);
    const result = await client.postForm(tokenUrl, { grant_type: "urn:example:unknown", client_id: CLIENT_ID });
    expectError(result, 400, "unsupported_grant_type");
  });

  it("refuses the password grant: 400 unsupported_grant_type", async () => {
    const client = await newClient(server);
    const result = await client.postForm(tokenUrl, { grant_type: "password", client_id: CLIENT_ID, username: ALICE.handle, password: ALICE.password });
    expectError(result, 400, "unsupported_grant_type");
    expect(JSON.stringify(result.body)).not.toContain("access_token");
  });

  it("code replay: the second exchange is invalid_grant and the first exchange's tokens are revoked", async () => {
    const client = await newClient(server);
    const { code, verifier, redirectUri } = await authorizeAndGetCode(server, client);
    const first = await client.exchangeCode(code, verifier, redirectUri);
    expect(first.status).toBe(200);
    expect((await client.userinfo(first.body.access_token)).status).toBe(200);

    expectError(await client.exchangeCode(code, verifier, redirectUri), 400, "invalid_grant");

    const info = await client.userinfo(first.body.access_token);
    expect(info.status).toBe(401);
    expect(info.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
    expectError(await client.refresh(first.body.refresh_token), 400, "invalid_grant");
  });
});

describe("token endpoint: refresh_token grant", () => {
  it("refresh replay: reusing R1 is invalid_grant and ends R2 and the access token", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const r1 = tokens.refresh_token;
    const second = await client.refresh(r1);
    expect(second.status).toBe(200);
    const r2 = second.body.refresh_token;
    expect(r2).not.toBe(r1);
    expect((await client.userinfo(second.body.access_token)).status).toBe(200);

    expectError(await client.refresh(r1), 400, "invalid_grant");

    expectError(await client.refresh(r2), 400, "invalid_grant");
    const info = await client.userinfo(second.body.access_token);
    expect(info.status).toBe(401);
    expect(info.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
  });

  it("a refresh ends the previous access token of the grant", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
    expect((await client.userinfo(refreshed.body.access_token)).status).toBe(200);
  });
});

describe("revocation (RFC 7009) and introspection", () => {
  const revoke = (form: Record<string, string>) => rawPost(`${server.issuer}/oauth/revoke`, form);

  it("answers 200 with {} as JSON for an unknown token (the official atproto client cancels other bodies)", async () => {
    const client = await newClient(server);
    const result = await client.revoke("ref-this-token-was-never-issued");
    expect(result.status).toBe(200);
    expect(result.headers.get("content-type")).toMatch(/^application\/json/);
    expect(result.body).toEqual({});
  });

  it("revoking the access token also ends the refresh token", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    expect((await client.revoke(tokens.access_token)).status).toBe(200);
    const info = await client.userinfo(tokens.access_token);
    expect(info.status).toBe(401);
    expect((info.body as OAuthErrorBody).error).toBe("invalid_token");
    expectError(await client.refresh(tokens.refresh_token), 400, "invalid_grant");
  });

  it("revoking the refresh token also ends the access token", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    expect((await client.revoke(tokens.refresh_token)).status).toBe(200);
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
    expectError(await client.refresh(tokens.refresh_token), 400, "invalid_grant");
  });

  it("RFC 7009 §2.1: another client cannot end a grant (10 attempts at once, every kind of other client_id, or none)", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const otherLoopback = (scope: string) => `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope })}`;
    const otherClients = [otherLoopback("atproto"), otherLoopback("atproto transition:email"), `http://localhost?${new URLSearchParams({ scope: "atproto transition:generic" })}`];
    const attempts = [
      ...otherClients.flatMap((clientId) => [tokens.refresh_token, tokens.access_token].map((token) => revoke({ token, client_id: clientId }))),
      revoke({ token: tokens.refresh_token }),
      revoke({ token: tokens.access_token }),
      revoke({ token: tokens.refresh_token, client_id: "" }),
      revoke({ token: tokens.refresh_token, client_id: `${CLIENT_ID}&x=1` }),
    ];
    const results = await Promise.all(attempts);
    for (const result of results) {
      expect(result.status, JSON.stringify(result.body)).toBe(400);
      expect(["invalid_grant", "invalid_request", "invalid_client_metadata"]).toContain((result.body as OAuthErrorBody).error);
    }
    // Every attempt that names a client at all is refused as another client's (the token is looked up first).
    expect(results.filter((result) => (result.body as OAuthErrorBody).error === "invalid_grant").length).toBe(7);
    // Nothing ended: the tokens still work, and the right client can still revoke without a DPoP proof.
    expect((await client.userinfo(tokens.access_token)).status).toBe(200);
    const own = await revoke({ token: tokens.refresh_token, client_id: CLIENT_ID });
    expect(own.status).toBe(200);
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
  });

  it("unknown tokens fetch nothing: revocation is no relay for requests to a client_id's host (30 at once)", async () => {
    const host = await ClientHost.start();
    try {
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) => revoke({ token: `ref-made-up-${i}`, client_id: `${host.origin}/client-${i}.json` })),
      );
      for (const result of results) expect({ status: result.status, body: result.body }).toEqual({ status: 200, body: {} });
      expect(host.requestCount()).toBe(0);
    } finally {
      await host.stop();
    }
  });

  it("revoking an app on the account page also ends its codes not yet redeemed", async () => {
    const client = await newClient(server);
    const { code, verifier, redirectUri } = await authorizeAndGetCode(server, client);
    const browser = await signedIn(server, ALICE.handle, ALICE.password);
    const revoked = await postForm(browser, "/account/apps", { csrf_token: browser.csrfToken, intent: "revoke", client_id: CLIENT_ID });
    expect(revoked.status).toBe(303);
    expectError(await client.exchangeCode(code, verifier, redirectUri), 400, "invalid_grant");
  });

  it("GET /oauth/introspect is 404", async () => {
    const response = await fetch(`${server.issuer}/oauth/introspect`);
    expect(response.status).toBe(404);
  });
});

describe("refresh with scope (RFC 6749 §6): narrower is allowed, broader is invalid_scope", () => {
  it("a narrower scope applies to the new access token only; the refresh token keeps the grant's scope", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    expect(tokens.scope).toBe("atproto transition:generic");

    const narrowed = await client.postForm<TokenSet>(tokenUrl, { grant_type: "refresh_token", client_id: CLIENT_ID, refresh_token: tokens.refresh_token, scope: "atproto" });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.body.scope).toBe("atproto");
    const write = await client.xrpc(narrowed.body.access_token, "com.atproto.repo.createRecord", {
      json: { repo: account.did, collection: "app.bsky.feed.post", record: { text: "narrowed", createdAt: new Date().toISOString() } },
    });
    expect(write.status).toBe(403);
    expect((await client.xrpc(narrowed.body.access_token, "com.atproto.server.getSession")).status).toBe(200);

    const full = await client.refresh(narrowed.body.refresh_token);
    expect(full.status).toBe(200);
    expect(full.body.scope).toBe("atproto transition:generic");
  });

  it("a scope value not granted, or one without atproto, is invalid_scope and spends nothing", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    for (const scope of ["atproto transition:generic transition:email", "atproto repo:app.bsky.feed.post", "transition:generic"]) {
      const refused = await client.postForm(tokenUrl, { grant_type: "refresh_token", client_id: CLIENT_ID, refresh_token: tokens.refresh_token, scope });
      expectError(refused, 400, "invalid_scope");
    }
    expect((await client.refresh(tokens.refresh_token)).status).toBe(200);
  });
});

describe("a grant's absolute lifetime (docs/decisions/0010)", () => {
  const DAY = 24 * 60 * 60 * 1000;
  const grantOf = async (refreshToken: string) => {
    const tokenHash = createHash("sha256").update(refreshToken).digest("base64url");
    const grant = await rowOf<{ id: string; createdAt: number; expiresAt: number; endsAt: number }>(
      server.database(),
      sql`SELECT g."id" AS "id", g."createdAt" AS "createdAt", g."expiresAt" AS "expiresAt", g."endsAt" AS "endsAt"
        FROM "Grant" g JOIN "RefreshToken" r ON r."grantId" = g."id" WHERE r."tokenHash" = ${tokenHash}`,
    );
    if (!grant) throw new Error("no grant for this refresh token");
    return grant;
  };

  it("a public client's grant ends 90 days after consent, however often it is refreshed", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const grant = await grantOf(tokens.refresh_token);
    expect(grant.endsAt - grant.createdAt).toBe(90 * DAY);

    // The grant was made 89 days and 23 hours ago: a refresh still works, but nothing it issues outlives the grant.
    const shift = 90 * DAY - 60 * 60 * 1000;
    await execute(server.database(), sql`UPDATE "Grant" SET "createdAt" = ${at(grant.createdAt - shift)}, "endsAt" = ${at(grant.endsAt - shift)} WHERE "id" = ${grant.id}`);
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.expires_in).toBeLessThanOrEqual(60 * 60);
    const after = await grantOf(refreshed.body.refresh_token);
    expect(after.expiresAt).toBeLessThanOrEqual(after.endsAt);
    const refreshExpiry = await rowOf<{ expiresAt: number }>(server.database(), sql`SELECT "expiresAt" FROM "RefreshToken" WHERE "grantId" = ${grant.id} AND "usedAt" IS NULL`);
    expect(refreshExpiry!.expiresAt).toBeLessThanOrEqual(after.endsAt);

    // Past its end: refused, and the app must send the person through the authorization flow again.
    await execute(server.database(), sql`UPDATE "Grant" SET "endsAt" = ${at(Date.now() - 1000)} WHERE "id" = ${grant.id}`);
    expectError(await client.refresh(refreshed.body.refresh_token), 400, "invalid_grant");
    expect((await client.userinfo(refreshed.body.access_token)).status).toBe(401);
  });
});

describe("single use of the request_uri", () => {
  it("after approval, opening the same authorize URL again sends the browser back to the app with access_denied, never a code", async () => {
    const client = await newClient(server);
    const pkce = createPkce();
    const parResult = await client.pushAuthorizationRequest({
      redirect_uri: "http://127.0.0.1:54321/callback",
      scope: "atproto",
      state: "single-use",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
    expect(parResult.status).toBe(201);
    const authorizeUrl = client.authorizeUrl(parResult.body.request_uri);
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.status).toBe(200);
    const allowed = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken });
    expect(allowed.status).toBe(303);
    expect(new URL(allowed.headers.get("location")!).searchParams.get("code")).toBeTruthy();

    /** An answered request's only way out: back to the app, with access_denied and its state (docs/decisions/0020). */
    const expectBackToAppWithoutCode = (response: Response) => {
      expect(response.status).toBe(303);
      const location = new URL(response.headers.get("location")!);
      expect(`${location.origin}${location.pathname}`).toBe("http://127.0.0.1:54321/callback");
      expect(location.searchParams.get("error")).toBe("access_denied");
      expect(location.searchParams.get("state")).toBe("single-use");
      expect(location.searchParams.has("code")).toBe(false);
    };
    // The same browser (now signed in) opens the link again; a fresh one is not sent anywhere on its own, and gets no
    // code either (docs/decisions/0022).
    expectBackToAppWithoutCode(await fetch(authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" }));
    const fresh = await fetch(authorizeUrl, { redirect: "manual" });
    expect(fresh.status).toBe(400);
    expect(fresh.headers.get("location")).toBeNull();
    expect(await fresh.text()).not.toMatch(/[?&#]code=/);

    // Posting the form a second time does not issue another code.
    const repost = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken });
    expectBackToAppWithoutCode(repost);
  });
});

describe("concurrency: single-use items are consumed atomically (docs/architecture.md, 'Tokens and codes')", () => {
  async function parallelTokenRequests(dpopKey: DpopKey, form: Record<string, string>, count: number) {
    const nonce = await fetchNonce(server);
    const proofs = await Promise.all(Array.from({ length: count }, () => createDpopProof(dpopKey, { method: "POST", url: tokenUrl, nonce })));
    return Promise.all(proofs.map((proof) => rawPost<TokenSet & OAuthErrorBody>(tokenUrl, form, proof)));
  }

  it("20 parallel exchanges of one code: exactly one 200, the rest invalid_grant", async () => {
    const client = await newClient(server);
    const { code, verifier, redirectUri } = await authorizeAndGetCode(server, client);
    const results = await parallelTokenRequests(
      client.key,
      { grant_type: "authorization_code", client_id: CLIENT_ID, code, code_verifier: verifier, redirect_uri: redirectUri },
      20,
    );
    const statuses = results.map((result) => result.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(results.filter((result) => result.status !== 200).map((result) => `${result.status} ${result.body.error}`)).toEqual(
      Array.from({ length: 19 }, () => "400 invalid_grant"),
    );
  });

  it("20 parallel refreshes of one refresh token: exactly one 200, the rest invalid_grant", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const results = await parallelTokenRequests(client.key, { grant_type: "refresh_token", client_id: CLIENT_ID, refresh_token: tokens.refresh_token }, 20);
    expect(results.map((result) => result.status).filter((status) => status === 200)).toHaveLength(1);
    expect(results.filter((result) => result.status !== 200).map((result) => `${result.status} ${result.body.error}`)).toEqual(
      Array.from({ length: 19 }, () => "400 invalid_grant"),
    );
  });
});
