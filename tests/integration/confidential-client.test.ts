import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import {
  assertionParams,
  CLIENT_SCOPE,
  ClientHost,
  generateClientKey,
  JWKS_PATH,
  METADATA_PATH,
  signClientAssertion,
  startConfidentialClientHost,
  type AssertionOptions,
  type ClientKey,
} from "../helpers/client-host.ts";
import { approveWithPassword, CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { execute } from "../helpers/databases.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const HANDLE = "carol.test";
const PASSWORD = "confidential client password";

let server: TestServer;
let account: { did: string; handle: string };
const hosts: ClientHost[] = [];

beforeAll(async () => {
  server = await startTestServer();
  account = await createAccount(server, { handle: HANDLE, email: "carol@example.com", password: PASSWORD });
});
afterAll(async () => {
  await Promise.all(hosts.map((host) => host.stop()));
  await server?.stop();
});

async function host(keys: ClientKey[], options: Parameters<typeof startConfidentialClientHost>[1] = {}): Promise<ClientHost> {
  const started = await startConfidentialClientHost(keys, options);
  hosts.push(started);
  return started;
}

async function bareHost(): Promise<ClientHost> {
  const started = await ClientHost.start();
  hosts.push(started);
  return started;
}

type Signer = { key: ClientKey; overrides?: Partial<AssertionOptions> };

/** A DPoP client that signs a fresh assertion with `signer` for every form post. */
async function confidentialClient(clientHost: ClientHost, signer: Signer): Promise<DpopClient> {
  return new DpopClient(server.issuer, await generateDpopKey(), clientHost.clientId, async () =>
    assertionParams(await signClientAssertion(signer.key, { clientId: clientHost.clientId, audience: server.issuer, ...signer.overrides })),
  );
}

function parParams(redirectUri: string, pkce: { challenge: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    redirect_uri: redirectUri,
    scope: CLIENT_SCOPE,
    state: "conf-state",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    ...extra,
  };
}

/** PAR → consent with password → code → tokens, for a client whose assertions are already set up. */
async function signInFully(client: DpopClient, redirectUri: string) {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest(parParams(redirectUri, pkce));
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  const location = await approveWithPassword(client.authorizeUrl(par.body.request_uri), new CookieJar(), HANDLE, PASSWORD);
  const code = location.searchParams.get("code");
  expect(code).toBeTruthy();
  const tokens = await client.exchangeCode(code!, pkce.verifier, redirectUri);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body;
}

function expectNoServerError() {
  expect(server.output()).not.toContain("Unexpected error while handling a request");
}

describe("confidential client (private_key_jwt)", () => {
  it("completes PAR → consent → token → userinfo → refresh with client assertions", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key], { clientName: "Confidential Test App" });
    const client = await confidentialClient(clientHost, { key });
    const pkce = createPkce();

    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, pkce));
    expect(par.status, JSON.stringify(par.body)).toBe(201);
    expect(par.body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/);

    // The screen names the app and the host its client_id lives on.
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.status).toBe(200);
    expect(page.html).toContain("Confidential Test App");
    expect(page.html).toContain(new URL(clientHost.clientId).host);
    expect(page.html).toContain(clientHost.redirectUri);
    const response = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: page.csrfToken });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(clientHost.redirectUri);
    expect(location.searchParams.get("state")).toBe("conf-state");
    expect(location.searchParams.get("iss")).toBe(server.issuer);
    const code = location.searchParams.get("code")!;
    expect(code).toBeTruthy();

    const tokens = await client.exchangeCode(code, pkce.verifier, clientHost.redirectUri);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.headers.get("www-authenticate")).toBeNull();
    expect(tokens.body).toMatchObject({ token_type: "DPoP", expires_in: 3600, scope: CLIENT_SCOPE, sub: account.did });

    const me = await client.userinfo(tokens.body.access_token);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ sub: account.did, preferred_username: HANDLE });

    const refreshed = await client.refresh(tokens.body.refresh_token);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.body.refresh_token);
    expect(refreshed.body.sub).toBe(account.did);
    expect((await client.userinfo(refreshed.body.access_token)).status).toBe(200);

    // docs/architecture.md, "Client metadata": the document is cached, not fetched on every step.
    expect(clientHost.requestCount(METADATA_PATH)).toBe(1);
  });

  it("refuses PAR without a client assertion (400 invalid_client, as the reference provider answers)", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    const client = new DpopClient(server.issuer, await generateDpopKey(), clientHost.clientId);
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/client_assertion/) });
  });

  it("refuses an assertion signed by another key than the one its kid names", async () => {
    const published = await generateClientKey("published-key");
    const attacker = await generateClientKey("published-key");
    const clientHost = await host([published]);
    const client = await confidentialClient(clientHost, { key: attacker });
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/signature/i) });
  });

  it("refuses a replayed assertion", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    const assertion = await signClientAssertion(key, { clientId: clientHost.clientId, audience: server.issuer });
    const fixed = new DpopClient(server.issuer, await generateDpopKey(), clientHost.clientId, () => assertionParams(assertion));
    const pkce = createPkce();

    // The first use is accepted (a nonce retry resends the same assertion: that is not a replay).
    const first = await fixed.pushAuthorizationRequest(parParams(clientHost.redirectUri, pkce));
    expect(first.status, JSON.stringify(first.body)).toBe(201);

    const second = await fixed.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(second.status).toBe(400);
    expect(second.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/replay|jti/i) });

    // Reusing it at the token endpoint fails too.
    const location = await approveWithPassword(fixed.authorizeUrl(first.body.request_uri), new CookieJar(), HANDLE, PASSWORD);
    const code = location.searchParams.get("code")!;
    const replayed = await fixed.exchangeCode(code, pkce.verifier, clientHost.redirectUri);
    expect(replayed.status).toBe(400);
    expect(replayed.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/replay|jti/i) });
  });

  it("refuses an assertion for another audience", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    const client = await confidentialClient(clientHost, { key, overrides: { audience: "https://other-server.example" } });
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/aud/i) });
  });

  it("refuses an assertion with a stale iat", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    // Still within its exp: only the iat is too old.
    const now = Math.floor(Date.now() / 1000);
    const client = await confidentialClient(clientHost, { key, overrides: { iat: now - 600, exp: now + 60 } });
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/iat|old/i) });
  });

  it("refuses a client assertion from a public client (token_endpoint_auth_method none)", async () => {
    const key = await generateClientKey();
    const clientHost = await bareHost();
    clientHost.serveMetadata(clientHost.metadata({ authMethod: "none" }));
    const client = await confidentialClient(clientHost, { key });
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/public/i) });

    // The same public client without an assertion is fine.
    const plain = new DpopClient(server.issuer, await generateDpopKey(), clientHost.clientId);
    const ok = await plain.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });

  it("binds the grant to the client key: once the key is withdrawn, refresh fails with invalid_grant", async () => {
    const oldKey = await generateClientKey("old-key");
    const newKey = await generateClientKey("new-key");
    const clientHost = await host([oldKey]);
    const signer: Signer = { key: oldKey };
    const client = await confidentialClient(clientHost, signer);
    const tokens = await signInFully(client, clientHost.redirectUri);

    // The client rotates: only the new key is published, and the server's cache is emptied.
    clientHost.serveMetadata(clientHost.metadata({ keys: [newKey] }));
    await execute(server.database(), sql`DELETE FROM "Client"`);
    signer.key = newKey;

    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body).toMatchObject({ error: "invalid_grant", error_description: expect.stringMatching(/key/i) });
    // The grant has ended: its access token no longer works either.
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
    expect(clientHost.requestCount(METADATA_PATH)).toBeGreaterThanOrEqual(2);

    // The new key itself is fine: a new sign-in works.
    const again = await signInFully(client, clientHost.redirectUri);
    expect(again.sub).toBe(account.did);
  });

  it("a grant made with one published key does not refresh with another published key; its own key still works", async () => {
    const [k2, k3] = [await generateClientKey("k2"), await generateClientKey("k3")];
    const clientHost = await host([k2, k3]);
    const signer: Signer = { key: k2 };
    const client = await confidentialClient(clientHost, signer);
    const tokens = await signInFully(client, clientHost.redirectUri);

    signer.key = k3;
    const refused = await client.refresh(tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "invalid_grant", error_description: expect.stringMatching(/bound to the client key k2/) });
    // Refused, not spent: the bound key refreshes as before.
    signer.key = k2;
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
  });

  it("new key material published under the grant's kid ends the grant instead of keeping it alive", async () => {
    const original = await generateClientKey("rotating");
    const impostor = await generateClientKey("rotating");
    const clientHost = await host([original]);
    const signer: Signer = { key: original };
    const client = await confidentialClient(clientHost, signer);
    const tokens = await signInFully(client, clientHost.redirectUri);

    clientHost.serveMetadata(clientHost.metadata({ keys: [impostor] }));
    await execute(server.database(), sql`DELETE FROM "Client"`);
    signer.key = impostor;
    const refused = await client.refresh(tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "invalid_grant", error_description: expect.stringMatching(/no longer published/) });
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
  });

  it("the code exchange must be signed by the key that signed the pushed request", async () => {
    const [k2, k3] = [await generateClientKey("k2"), await generateClientKey("k3")];
    const clientHost = await host([k2, k3]);
    const signer: Signer = { key: k2 };
    const client = await confidentialClient(clientHost, signer);
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, pkce));
    expect(par.status, JSON.stringify(par.body)).toBe(201);
    const location = await approveWithPassword(client.authorizeUrl(par.body.request_uri), new CookieJar(), HANDLE, PASSWORD);
    const code = location.searchParams.get("code")!;

    signer.key = k3;
    const refused = await client.exchangeCode(code, pkce.verifier, clientHost.redirectUri);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "invalid_grant", error_description: expect.stringMatching(/another client key/) });
    signer.key = k2;
    expect((await client.exchangeCode(code, pkce.verifier, clientHost.redirectUri)).status).toBe(200);
  });

  it("a DPoP proof signed with the client-authentication key is refused at PAR and at the token endpoint", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    const sameKey = { privateKey: key.privateKey, publicJwk: { kty: "EC", crv: "P-256", x: key.publicJwk.x, y: key.publicJwk.y } };
    const client = new DpopClient(server.issuer, sameKey, clientHost.clientId, async () =>
      assertionParams(await signClientAssertion(key, { clientId: clientHost.clientId, audience: server.issuer })),
    );
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status).toBe(400);
    expect(par.body).toMatchObject({ error: "invalid_request", error_description: expect.stringMatching(/different key than the client assertion/) });
    const token = await client.refresh("ref-anything");
    expect(token.body).toMatchObject({ error: "invalid_request", error_description: expect.stringMatching(/different key/) });
  });

  it("RFC 7523 §3: an assertion without exp, or addressed to other audiences too, is refused; [issuer] alone is fine", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key]);
    const noExp = await confidentialClient(clientHost, { key, overrides: { exp: null } });
    const refusedNoExp = await noExp.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(refusedNoExp.status).toBe(400);
    expect(refusedNoExp.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/exp/) });

    const manyAudiences = await confidentialClient(clientHost, { key, overrides: { audience: [server.issuer, "https://other-server.example"] } });
    const refusedAud = await manyAudiences.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(refusedAud.status).toBe(400);
    expect(refusedAud.body).toMatchObject({ error: "invalid_client", error_description: expect.stringMatching(/aud/) });
    expect(refusedAud.headers.get("www-authenticate")).toBeNull();

    const listOfOne = await confidentialClient(clientHost, { key, overrides: { audience: [server.issuer] } });
    expect((await listOfOne.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()))).status).toBe(201);
  });

  it("revocation authenticates a confidential client: no assertion or another client's key is refused, the bound key revokes", async () => {
    const [k2, k3] = [await generateClientKey("k2"), await generateClientKey("k3")];
    const clientHost = await host([k2, k3]);
    const signer: Signer = { key: k2 };
    const client = await confidentialClient(clientHost, signer);
    const tokens = await signInFully(client, clientHost.redirectUri);
    const revokeUrl = `${server.issuer}/oauth/revoke`;

    const withoutAssertion = await fetch(revokeUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.refresh_token, client_id: clientHost.clientId }),
    });
    expect(withoutAssertion.status).toBe(400);
    expect(await withoutAssertion.json()).toMatchObject({ error: "invalid_client" });
    const forged = await fetch(revokeUrl, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.refresh_token, client_id: clientHost.clientId, ...assertionParams("e30.e30.e30") }),
    });
    expect(forged.status).toBe(400);
    signer.key = k3;
    expect((await client.revoke(tokens.refresh_token)).body).toMatchObject({ error: "invalid_grant" });
    expect((await client.userinfo(tokens.access_token)).status).toBe(200);

    signer.key = k2;
    const revoked = await client.revoke(tokens.refresh_token);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({});
    expect((await client.userinfo(tokens.access_token)).status).toBe(401);
  });

  it("a client_name with bidi or control characters (right-to-left override) is shown without them, in its own isolate", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key], { clientName: "Good\u202eppA\u202c Bank\u0007\u2066 Login\u2069" });
    const client = await confidentialClient(clientHost, { key });
    const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
    expect(par.status, JSON.stringify(par.body)).toBe(201);
    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri), new CookieJar());
    expect(page.status).toBe(200);
    for (const hidden of ["\u202e", "\u202c", "\u2066", "\u2069", "\u0007"]) expect(page.html).not.toContain(hidden);
    expect(page.html).toMatch(/<bdi[^>]*>GoodppA Bank Login<\/bdi>/);
    // The removal is no secret: the screen cautions that the name carried hidden characters (docs/decisions/0018).
    expect(page.html).toContain("Its name contained invisible characters that can change how text reads.");
  });

  it("works with keys published behind jwks_uri", async () => {
    const key = await generateClientKey();
    const clientHost = await host([key], { keysVia: "jwks_uri" });
    const document = clientHost.metadata({ keys: [key], keysVia: "jwks_uri" });
    expect(document.jwks_uri).toBe(clientHost.jwksUri);
    expect(document.jwks).toBeUndefined();

    const client = await confidentialClient(clientHost, { key });
    const tokens = await signInFully(client, clientHost.redirectUri);
    expect(tokens).toMatchObject({ token_type: "DPoP", sub: account.did, scope: CLIENT_SCOPE });
    expect((await client.userinfo(tokens.access_token)).status).toBe(200);
    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(clientHost.requestCount(JWKS_PATH)).toBeGreaterThanOrEqual(1);
  });

  describe("refuses unusable metadata documents at PAR (400 invalid_client_metadata, never 500)", () => {
    async function parAgainst(setup: (clientHost: ClientHost, key: ClientKey) => void) {
      const key = await generateClientKey();
      const clientHost = await bareHost();
      setup(clientHost, key);
      const client = await confidentialClient(clientHost, { key });
      const par = await client.pushAuthorizationRequest(parParams(clientHost.redirectUri, createPkce()));
      expect(clientHost.requestCount(METADATA_PATH)).toBeGreaterThanOrEqual(1);
      return par;
    }

    function expectMetadataError(par: { status: number; body: unknown; headers: Headers }, reason: RegExp) {
      expect(par.status).toBe(400);
      expect(par.headers.get("content-type")).toMatch(/application\/json/);
      expect(par.body).toMatchObject({ error: "invalid_client_metadata", error_description: expect.stringMatching(reason) });
      expectNoServerError();
    }

    it("client_id in the document differs from its URL", async () => {
      const par = await parAgainst((clientHost, key) =>
        clientHost.serveMetadata(clientHost.metadata({ keys: [key], overrides: { client_id: `${clientHost.origin}/other-metadata.json` } })),
      );
      expectMetadataError(par, /client_id/);
    });

    it("dpop_bound_access_tokens missing", async () => {
      const par = await parAgainst((clientHost, key) =>
        clientHost.serveMetadata(clientHost.metadata({ keys: [key], overrides: { dpop_bound_access_tokens: undefined } })),
      );
      expectMetadataError(par, /dpop_bound_access_tokens/);
    });

    it("document served as text/plain", async () => {
      const par = await parAgainst((clientHost, key) => clientHost.serveMetadata(clientHost.metadata({ keys: [key] }), { contentType: "text/plain" }));
      expectMetadataError(par, /application\/json/);
    });

    it("document not found (404)", async () => {
      const par = await parAgainst(() => {});
      expectMetadataError(par, /404/);
    });
  });
});
