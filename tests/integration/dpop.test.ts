import { createHmac, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import type { DpopClient } from "../../scripts/lib/dpop-client.ts";
import { rowOf } from "../helpers/databases.ts";
import {
  createDpopProof,
  fetchNonce,
  generateDpopKey,
  newClient,
  obtainTokens,
  parForm,
  rawGet,
  rawPost,
  authorizeAndGetCode,
  createAlice,
  type DpopKey,
  type HttpResult,
  type OAuthErrorBody,
  type TokenSet,
} from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let server: TestServer;
let parUrl: string;
let tokenUrl: string;
let userinfoUrl: string;

beforeAll(async () => {
  server = await startTestServer();
  await createAlice(server);
  parUrl = `${server.issuer}/oauth/par`;
  tokenUrl = `${server.issuer}/oauth/token`;
  userinfoUrl = `${server.issuer}/oauth/userinfo`;
});
afterAll(() => server?.stop());

function expectAsError(result: HttpResult, status: number, error: string) {
  expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status, error });
}

/** A PAR request whose proof is signed by `key` with the given claim overrides, plus a valid nonce unless given. */
async function parWith(key: DpopKey, overrides: Partial<Parameters<typeof createDpopProof>[1]> = {}) {
  const nonce = "nonce" in overrides ? overrides.nonce : await fetchNonce(server);
  const proof = await createDpopProof(key, { method: "POST", url: parUrl, ...overrides, nonce });
  return rawPost(parUrl, parForm(), proof);
}

describe("DPoP at the authorization server (RFC 9449 §4.3, §5, §8)", () => {
  it("a well-formed proof with a current nonce is accepted at PAR (control for the refusals below)", async () => {
    const result = await parWith(await generateDpopKey());
    expect(result.status).toBe(201);
    expect(result.body).toHaveProperty("request_uri");
  });

  it("refuses PAR without a DPoP header: 400 invalid_dpop_proof", async () => {
    const result = await rawPost(parUrl, parForm());
    expectAsError(result, 400, "invalid_dpop_proof");
    expect(result.headers.get("DPoP-Nonce")).toBeTruthy();
  });

  it("answers a first proof without a nonce with 400 use_dpop_nonce and a DPoP-Nonce header", async () => {
    const key = await generateDpopKey();
    const proof = await createDpopProof(key, { method: "POST", url: parUrl });
    const result = await rawPost(parUrl, parForm(), proof);
    expectAsError(result, 400, "use_dpop_nonce");
    const nonce = result.headers.get("DPoP-Nonce");
    expect(nonce).toBeTruthy();
    expect(result.headers.get("WWW-Authenticate")).toBeNull();

    // The nonce it sent works for the retry (RFC 9449 §8).
    const retry = await rawPost(parUrl, parForm(), await createDpopProof(key, { method: "POST", url: parUrl, nonce: nonce! }));
    expect(retry.status).toBe(201);
  });

  it("answers a garbage nonce with 400 use_dpop_nonce", async () => {
    const result = await parWith(await generateDpopKey(), { nonce: "this-is-not-a-nonce-the-server-issued" });
    expectAsError(result, 400, "use_dpop_nonce");
    expect(result.headers.get("DPoP-Nonce")).toBeTruthy();
  });

  it("answers a stale nonce (from a time window long past) with 400 use_dpop_nonce", async () => {
    // docs/architecture.md, "DPoP": nonces are an HMAC of a time window under a secret kept in the database.
    const { value: secret } = (await rowOf<{ value: string }>(server.database(), sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'dpop_nonce'`))!;
    const windowMs = 3 * 60_000;
    const nonceFor = (index: number) => createHmac("sha256", secret).update(`dpop-nonce:${index}`).digest("base64url");
    const current = await fetchNonce(server);
    const index = Math.floor(Date.now() / windowMs);
    // Sanity check that the derivation above is the server's: otherwise this test proves nothing.
    expect([index - 1, index, index + 1].map(nonceFor)).toContain(current);

    const result = await parWith(await generateDpopKey(), { nonce: nonceFor(index - 5) });
    expectAsError(result, 400, "use_dpop_nonce");
  });

  it("refuses a replayed proof (same jti twice): the second is 400 invalid_dpop_proof", async () => {
    const key = await generateDpopKey();
    const proof = await createDpopProof(key, { method: "POST", url: parUrl, nonce: await fetchNonce(server) });
    const first = await rawPost(parUrl, parForm(), proof);
    expect(first.status).toBe(201);
    const second = await rawPost(parUrl, parForm(), proof);
    expectAsError(second, 400, "invalid_dpop_proof");
  });

  it("refuses a reused jti in an otherwise fresh proof of the same key", async () => {
    const key = await generateDpopKey();
    const jti = randomUUID();
    const nonce = await fetchNonce(server);
    expect((await rawPost(parUrl, parForm(), await createDpopProof(key, { method: "POST", url: parUrl, nonce, jti }))).status).toBe(201);
    const again = await rawPost(parUrl, parForm(), await createDpopProof(key, { method: "POST", url: parUrl, nonce, jti, iat: Math.floor(Date.now() / 1000) - 1 }));
    expectAsError(again, 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose iat is 5 minutes old: 400 invalid_dpop_proof", async () => {
    const result = await parWith(await generateDpopKey(), { iat: Math.floor(Date.now() / 1000) - 300 });
    expectAsError(result, 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose iat is 5 minutes in the future: 400 invalid_dpop_proof", async () => {
    const result = await parWith(await generateDpopKey(), { iat: Math.floor(Date.now() / 1000) + 300 });
    expectAsError(result, 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose htu is another endpoint: 400 invalid_dpop_proof", async () => {
    const result = await parWith(await generateDpopKey(), { htu: tokenUrl });
    expectAsError(result, 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose htu is another origin: 400 invalid_dpop_proof", async () => {
    const result = await parWith(await generateDpopKey(), { htu: "https://attacker.example/oauth/par" });
    expectAsError(result, 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose htu carries userinfo (http://u:p@host/…): 400 invalid_dpop_proof", async () => {
    const withUserinfo = (credentials: string) => parUrl.replace("://", `://${credentials}@`);
    const results = await Promise.all(["u:p", "user", ":secret"].map(async (credentials) => parWith(await generateDpopKey(), { htu: withUserinfo(credentials) })));
    for (const result of results) expectAsError(result, 400, "invalid_dpop_proof");
  });

  it("ignores the query part of htu (RFC 9449 §4.3 (9))", async () => {
    const result = await parWith(await generateDpopKey(), { htu: `${parUrl}?x=1#frag` });
    expect(result.status).toBe(201);
  });

  it("refuses a proof whose htm is not the request method: 400 invalid_dpop_proof", async () => {
    const result = await parWith(await generateDpopKey(), { htm: "GET" });
    expectAsError(result, 400, "invalid_dpop_proof");
  });

  it('refuses a proof whose header typ is "JWT": 400 invalid_dpop_proof', async () => {
    const key = await generateDpopKey();
    const proof = await new SignJWT({ jti: randomUUID(), htm: "POST", htu: parUrl, nonce: await fetchNonce(server) })
      .setProtectedHeader({ typ: "JWT", alg: "ES256", jwk: key.publicJwk })
      .setIssuedAt()
      .sign(key.privateKey);
    expectAsError(await rawPost(parUrl, parForm(), proof), 400, "invalid_dpop_proof");
  });

  it("refuses a proof signed with another algorithm (ES384): 400 invalid_dpop_proof", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES384", { extractable: true });
    const jwk = await exportJWK(publicKey);
    const proof = await new SignJWT({ jti: randomUUID(), htm: "POST", htu: parUrl, nonce: await fetchNonce(server) })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "ES384", jwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } })
      .setIssuedAt()
      .sign(privateKey);
    expectAsError(await rawPost(parUrl, parForm(), proof), 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose header jwk carries the private key (d): 400 invalid_dpop_proof", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const privateJwk = await exportJWK(privateKey);
    expect(privateJwk.d).toBeTruthy();
    const proof = await new SignJWT({ jti: randomUUID(), htm: "POST", htu: parUrl, nonce: await fetchNonce(server) })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: privateJwk })
      .setIssuedAt()
      .sign(privateKey);
    expectAsError(await rawPost(parUrl, parForm(), proof), 400, "invalid_dpop_proof");
  });

  it("refuses a proof whose signature does not match the header key: 400 invalid_dpop_proof", async () => {
    const signer = await generateDpopKey();
    const other = await generateDpopKey();
    const proof = await new SignJWT({ jti: randomUUID(), htm: "POST", htu: parUrl, nonce: await fetchNonce(server) })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: other.publicJwk })
      .setIssuedAt()
      .sign(signer.privateKey);
    expectAsError(await rawPost(parUrl, parForm(), proof), 400, "invalid_dpop_proof");
  });

  it("refuses the code exchange when the proof's key is not the key used at PAR: 400 invalid_grant", async () => {
    const client = await newClient(server);
    const authorized = await authorizeAndGetCode(server, client);
    const thief = await newClient(server);
    const stolen = await thief.exchangeCode(authorized.code, authorized.verifier, authorized.redirectUri);
    expectAsError(stolen, 400, "invalid_grant");
  });

  it("refuses a refresh when the proof's key is not the key the tokens are bound to: 400 invalid_grant", async () => {
    const client = await newClient(server);
    const { tokens } = await obtainTokens(server, client);
    const thief = await newClient(server);
    expectAsError(await thief.refresh(tokens.refresh_token), 400, "invalid_grant");
  });
});

describe("DPoP at the resource server: /oauth/userinfo (RFC 9449 §7)", () => {
  let client: DpopClient;
  let tokens: TokenSet;

  beforeAll(async () => {
    client = await newClient(server);
    ({ tokens } = await obtainTokens(server, client));
  });

  async function userinfoWith(key: DpopKey, options: { accessToken?: string; nonce?: string | null; scheme?: string; token?: string } = {}) {
    const nonce = options.nonce === null ? undefined : (options.nonce ?? (await fetchNonce(server)));
    const proof = await createDpopProof(key, { method: "GET", url: userinfoUrl, nonce, accessToken: options.accessToken });
    return rawGet(userinfoUrl, { Authorization: `${options.scheme ?? "DPoP"} ${options.token ?? tokens.access_token}`, DPoP: proof });
  }

  it("accepts the token with a correct proof (control)", async () => {
    const result = await userinfoWith(client.key, { accessToken: tokens.access_token });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ preferred_username: "alice.test" });
    expect(result.headers.get("WWW-Authenticate")).toBeNull();
  });

  it('refuses the Bearer scheme: 401, WWW-Authenticate DPoP error="invalid_token"', async () => {
    const result = await rawGet(userinfoUrl, { Authorization: `Bearer ${tokens.access_token}` });
    expect(result.status).toBe(401);
    expect((result.body as OAuthErrorBody).error).toBe("invalid_token");
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
  });

  it("refuses the Bearer scheme even with a valid proof attached", async () => {
    const result = await userinfoWith(client.key, { accessToken: tokens.access_token, scheme: "Bearer" });
    expect(result.status).toBe(401);
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
  });

  it('refuses a proof without ath: 401, WWW-Authenticate DPoP error="invalid_dpop_proof"', async () => {
    const result = await userinfoWith(client.key, {});
    expect(result.status).toBe(401);
    expect((result.body as OAuthErrorBody).error).toBe("invalid_dpop_proof");
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_dpop_proof"/);
  });

  it('refuses a proof whose ath is for another token: 401, WWW-Authenticate DPoP error="invalid_dpop_proof"', async () => {
    const result = await userinfoWith(client.key, { accessToken: `${tokens.access_token}x` });
    expect(result.status).toBe(401);
    expect((result.body as OAuthErrorBody).error).toBe("invalid_dpop_proof");
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_dpop_proof"/);
  });

  it('refuses a proof from a key other than the token\'s: 401 invalid_token', async () => {
    const result = await userinfoWith(await generateDpopKey(), { accessToken: tokens.access_token });
    expect(result.status).toBe(401);
    expect((result.body as OAuthErrorBody).error).toBe("invalid_token");
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_token"/);
  });

  it('challenges a proof without nonce: 401, WWW-Authenticate error="use_dpop_nonce", DPoP-Nonce header', async () => {
    const result = await userinfoWith(client.key, { accessToken: tokens.access_token, nonce: null });
    expect(result.status).toBe(401);
    expect((result.body as OAuthErrorBody).error).toBe("use_dpop_nonce");
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="use_dpop_nonce"/);
    const nonce = result.headers.get("DPoP-Nonce");
    expect(nonce).toBeTruthy();
    const retry = await userinfoWith(client.key, { accessToken: tokens.access_token, nonce: nonce! });
    expect(retry.status).toBe(200);
  });

  it("refuses a replayed proof at userinfo: 401 invalid_dpop_proof", async () => {
    const proof = await createDpopProof(client.key, { method: "GET", url: userinfoUrl, nonce: await fetchNonce(server), accessToken: tokens.access_token });
    const headers = { Authorization: `DPoP ${tokens.access_token}`, DPoP: proof };
    expect((await rawGet(userinfoUrl, headers)).status).toBe(200);
    const replay = await rawGet(userinfoUrl, headers);
    expect(replay.status).toBe(401);
    expect(replay.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_dpop_proof"/);
  });

  it("refuses the token without any DPoP proof: 401 with a DPoP challenge", async () => {
    const result = await rawGet(userinfoUrl, { Authorization: `DPoP ${tokens.access_token}` });
    expect(result.status).toBe(401);
    expect(result.headers.get("WWW-Authenticate")).toMatch(/^DPoP error="invalid_dpop_proof"/);
  });
});

describe("headers on every /oauth/* answer (docs/architecture.md, 'The contract' and 'DPoP')", () => {
  function expectCorsAndNonce(label: string, headers: Headers) {
    expect({ label, nonce: Boolean(headers.get("DPoP-Nonce")) }).toEqual({ label, nonce: true });
    expect({ label, origin: headers.get("Access-Control-Allow-Origin") }).toEqual({ label, origin: "*" });
    const exposed = (headers.get("Access-Control-Expose-Headers") ?? "").split(",").map((name) => name.trim().toLowerCase());
    expect({ label, exposed }).toEqual({ label, exposed: expect.arrayContaining(["dpop-nonce", "www-authenticate"]) });
  }

  it("PAR, token, revoke and userinfo answers (success and error) carry DPoP-Nonce and CORS headers", async () => {
    const key = await generateDpopKey();
    const client = await newClient(server, key);
    const origin = { Origin: "https://app.example" };
    const seen: [string, Headers][] = [];

    seen.push(["PAR without proof", (await rawPost(parUrl, parForm(), undefined, origin)).headers]);
    const parNoNonce = await rawPost(parUrl, parForm(), await createDpopProof(key, { method: "POST", url: parUrl }), origin);
    expect(parNoNonce.status).toBe(400);
    seen.push(["PAR use_dpop_nonce", parNoNonce.headers]);
    const parOk = await rawPost(parUrl, parForm(), await createDpopProof(key, { method: "POST", url: parUrl, nonce: parNoNonce.headers.get("DPoP-Nonce")! }), origin);
    expect(parOk.status).toBe(201);
    seen.push(["PAR 201", parOk.headers]);

    const { tokens, code, verifier, redirectUri } = await obtainTokens(server, client);
    const tokenError = await rawPost(
      tokenUrl,
      { grant_type: "authorization_code", client_id: client.clientId, code, code_verifier: verifier, redirect_uri: redirectUri },
      await createDpopProof(key, { method: "POST", url: tokenUrl, nonce: await fetchNonce(server) }),
      origin,
    );
    expect(tokenError.status).toBe(400);
    seen.push(["token 400", tokenError.headers]);

    const other = await newClient(server);
    const { tokens: fresh } = await obtainTokens(server, other);
    const tokenOk = await rawPost(
      tokenUrl,
      { grant_type: "refresh_token", client_id: other.clientId, refresh_token: fresh.refresh_token },
      await createDpopProof(other.key, { method: "POST", url: tokenUrl, nonce: await fetchNonce(server) }),
      origin,
    );
    expect(tokenOk.status).toBe(200);
    seen.push(["token 200", tokenOk.headers]);

    const infoOk = await rawGet(userinfoUrl, {
      ...origin,
      Authorization: `DPoP ${(tokenOk.body as unknown as TokenSet).access_token}`,
      DPoP: await createDpopProof(other.key, { method: "GET", url: userinfoUrl, nonce: await fetchNonce(server), accessToken: (tokenOk.body as unknown as TokenSet).access_token }),
    });
    expect(infoOk.status).toBe(200);
    seen.push(["userinfo 200", infoOk.headers]);
    const infoError = await rawGet(userinfoUrl, { ...origin, Authorization: `Bearer ${tokens.access_token}` });
    expect(infoError.status).toBe(401);
    seen.push(["userinfo 401", infoError.headers]);

    const revoked = await rawPost(`${server.issuer}/oauth/revoke`, { token: "unknown-token", client_id: other.clientId }, undefined, origin);
    expect(revoked.status).toBe(200);
    seen.push(["revoke 200", revoked.headers]);
    const revokeError = await rawPost(`${server.issuer}/oauth/revoke`, {}, undefined, origin);
    expect(revokeError.status).toBe(400);
    seen.push(["revoke 400", revokeError.headers]);

    for (const [label, headers] of seen) expectCorsAndNonce(label, headers);
    // A successful answer never carries a challenge.
    for (const [label, headers] of seen.filter(([label]) => /20\d/.test(label))) {
      expect({ label, challenge: headers.get("WWW-Authenticate") }).toEqual({ label, challenge: null });
    }
  });

  it("the JWKS document (GET /oauth/jwks) carries DPoP-Nonce and CORS headers", async () => {
    const jwks = await fetch(`${server.issuer}/oauth/jwks`);
    expect(jwks.status).toBe(200);
    expect(await jwks.json()).toEqual({ keys: [] });
    expectCorsAndNonce("GET /oauth/jwks", jwks.headers);
  });

  it("a 405 JSON answer of /oauth/token and /oauth/par (GET) carries DPoP-Nonce and CORS headers", async () => {
    for (const url of [tokenUrl, parUrl]) {
      const response = await fetch(url);
      expect(response.status).toBe(405);
      expect((await response.json()).error).toBe("invalid_request");
      expectCorsAndNonce(`GET ${url} (405)`, response.headers);
    }
  });

  it("answers an OPTIONS preflight to /oauth/token with 204 allowing DPoP, Authorization and Content-Type", async () => {
    const response = await fetch(tokenUrl, {
      method: "OPTIONS",
      headers: {
        Origin: "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, dpop, authorization",
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const allowed = (response.headers.get("Access-Control-Allow-Headers") ?? "").split(",").map((name) => name.trim().toLowerCase());
    expect(allowed).toEqual(expect.arrayContaining(["dpop", "authorization", "content-type"]));
    const methods = (response.headers.get("Access-Control-Allow-Methods") ?? "").split(",").map((name) => name.trim().toUpperCase());
    expect(methods).toContain("POST");
    const exposed = (response.headers.get("Access-Control-Expose-Headers") ?? "").toLowerCase();
    expect(exposed).toContain("dpop-nonce");
  });
});
