import { randomUUID } from "node:crypto";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { memoryClientManager, MemoryClientStore, MemoryGrantStore } from "../../../../tests/helpers/memory-stores.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import { randomToken, sha256Base64url } from "../../util/crypto.ts";
import { DAY, HOUR, MINUTE } from "../../util/time.ts";
import { CLIENT_ASSERTION_TYPE_JWT_BEARER, type ClientKeyBinding } from "../client/client-manager.ts";
import type { OAuthClient } from "../client/client-metadata.ts";
import { TokenManager, type TokenRequest } from "./token-manager.ts";
import { parseItem } from "../scopes/permission-items.ts";

/**
 * The token endpoint's logic (RFC 6749 §4.1.3 and §6, RFC 7636, RFC 7009,
 * RFC 7523, docs/decisions/0010) on in-memory stores and a clock the test
 * moves: code redemption, refresh rotation, reuse, key binding, lifetimes,
 * scope narrowing, revocation.
 */

const ISSUER = "https://pds.example.com";
const PUBLIC_CLIENT = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope: "atproto transition:generic" })}`;
const CONFIDENTIAL_CLIENT = "https://app.example.com/client-metadata.json";
const REDIRECT = "http://127.0.0.1:4000/callback";
const DPOP_JKT = "dpop-key-thumbprint";
const LIFETIMES = { accessTokenMs: HOUR, refreshTokenMs: 90 * DAY, grantPublicMs: 90 * DAY, grantConfidentialMs: 730 * DAY };

let clock: number;
const now = () => clock;
let grants: MemoryGrantStore;
let clientStore: MemoryClientStore;
let tokens: TokenManager;

type SigningKey = { kid: string; privateKey: CryptoKey; jwk: JWK; binding: ClientKeyBinding };
let k2: SigningKey;
let k3: SigningKey;

async function signingKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const exported = await exportJWK(publicKey);
  const jwk = { kty: "EC", crv: "P-256", x: exported.x, y: exported.y, kid, alg: "ES256", use: "sig" };
  return { kid, privateKey, jwk, binding: { kid, alg: "ES256", jkt: await calculateJwkThumbprint(jwk, "sha256") } };
}

beforeAll(async () => {
  [k2, k3] = [await signingKey("k2"), await signingKey("k3")];
});

beforeEach(async () => {
  clock = Date.UTC(2026, 10, 1, 12, 0, 0);
  grants = new MemoryGrantStore();
  clientStore = new MemoryClientStore();
  const client: OAuthClient = {
    clientId: CONFIDENTIAL_CLIENT,
    isLoopback: false,
    applicationType: "web",
    authMethod: "private_key_jwt",
    redirectUris: [REDIRECT],
    scopes: ["atproto", "transition:generic"],
    jwks: [k2.jwk, k3.jwk] as never,
  };
  await clientStore.save(CONFIDENTIAL_CLIENT, { client }, clock, clock + 10 * 365 * DAY);
  const clients = memoryClientManager(ISSUER, now, clientStore);
  tokens = new TokenManager(clients, grants, LIFETIMES, undefined, now);
});

/** An authorization code as the consent screen would have issued it. */
function issueCode(options: { clientId?: string; clientKey?: ClientKeyBinding | null; scope?: string } = {}) {
  const code = randomToken("cod");
  const verifier = randomToken("ver");
  // The in-memory store writes synchronously; the promise only reports it.
  void grants.insertCode({
    codeHash: sha256Base64url(code),
    clientId: options.clientId ?? PUBLIC_CLIENT,
    accountDid: "did:plc:alice",
    redirectUri: REDIRECT,
    scope: options.scope ?? "atproto transition:generic",
    codeChallenge: sha256Base64url(verifier),
    dpopJkt: DPOP_JKT,
    clientKey: options.clientKey ?? null,
    createdAt: clock,
    expiresAt: clock + 5 * MINUTE,
  });
  return { code, verifier };
}

async function assertion(key: SigningKey): Promise<Pick<TokenRequest, "client_assertion" | "client_assertion_type">> {
  const iat = Math.floor(clock / 1000);
  const jwt = await new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: "ES256", kid: key.kid })
    .setIssuer(CONFIDENTIAL_CLIENT)
    .setSubject(CONFIDENTIAL_CLIENT)
    .setAudience(ISSUER)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 60)
    .sign(key.privateKey);
  return { client_assertion_type: CLIENT_ASSERTION_TYPE_JWT_BEARER, client_assertion: jwt };
}

function exchange(code: { code: string; verifier: string }, extra: Partial<TokenRequest> = {}, dpopJkt = DPOP_JKT) {
  return tokens.exchange({ grant_type: "authorization_code", client_id: PUBLIC_CLIENT, code: code.code, code_verifier: code.verifier, redirect_uri: REDIRECT, ...extra }, dpopJkt);
}

function refresh(refreshToken: string, extra: Partial<TokenRequest> = {}, dpopJkt = DPOP_JKT) {
  return tokens.exchange({ grant_type: "refresh_token", client_id: PUBLIC_CLIENT, refresh_token: refreshToken, ...extra }, dpopJkt);
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (hasCode(error, "invalid_grant", "invalid_request", "invalid_client", "invalid_scope", "unsupported_grant_type")) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("TokenManager: authorization_code (RFC 6749 §4.1.3, RFC 7636)", () => {
  it("redeems a code once: DPoP tokens with sub and scope, expires_in of the access token", async () => {
    const response = await exchange(issueCode());
    expect(response).toMatchObject({ token_type: "DPoP", expires_in: 3600, scope: "atproto transition:generic", sub: "did:plc:alice" });
    expect(response.access_token).toMatch(/^tok-/);
    expect(response.refresh_token).toMatch(/^ref-/);
    expect(grants.grants.size).toBe(1);
  });

  it("a second redemption is invalid_grant and revokes the tokens of the first (RFC 6749 §4.1.2)", async () => {
    const code = issueCode();
    const first = await exchange(code);
    expect(await refusal(exchange(code))).toMatch(/^invalid_grant: .*already used/);
    expect(await grants.findAccessToken(sha256Base64url(first.access_token), clock)).toBeUndefined();
    expect(grants.grants.size).toBe(0);
  });

  it("refuses a wrong verifier, another redirect_uri, another DPoP key, another client, an expired code", async () => {
    expect(await refusal(exchange(issueCode(), { code_verifier: randomToken("wrong") }))).toMatch(/code_verifier does not match/);
    expect(await refusal(exchange(issueCode(), { redirect_uri: "http://127.0.0.1:4000/elsewhere" }))).toMatch(/redirect_uri does not match/);
    expect(await refusal(exchange(issueCode(), {}, "another-key"))).toMatch(/DPoP key does not match/);
    expect(await refusal(exchange(issueCode({ clientId: "http://localhost?scope=atproto" })))).toMatch(/another client/);
    const expiring = issueCode();
    clock += 5 * MINUTE;
    expect(await refusal(exchange(expiring))).toMatch(/Invalid or expired/);
  });

  it("needs code, code_verifier and redirect_uri, and knows only two grant types", async () => {
    expect(await refusal(exchange(issueCode(), { code: undefined }))).toMatch(/^invalid_request: code is required/);
    expect(await refusal(exchange(issueCode(), { code_verifier: undefined }))).toMatch(/^invalid_request: code_verifier is required/);
    expect(await refusal(exchange(issueCode(), { redirect_uri: undefined }))).toMatch(/^invalid_request: redirect_uri is required/);
    expect(await refusal(tokens.exchange({ grant_type: "password", client_id: PUBLIC_CLIENT }, DPOP_JKT))).toMatch(/^unsupported_grant_type/);
  });
});

describe("TokenManager: refresh_token (RFC 6749 §6, OAuth 2.1 §4.3.1)", () => {
  it("rotates: a new pair each time, the previous access token ends", async () => {
    const first = await exchange(issueCode());
    clock += MINUTE;
    const second = await refresh(first.refresh_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(await grants.findAccessToken(sha256Base64url(first.access_token), clock)).toBeUndefined();
    expect(await grants.findAccessToken(sha256Base64url(second.access_token), clock)).toBeDefined();
  });

  it("reuse of a spent refresh token revokes the whole grant", async () => {
    const first = await exchange(issueCode());
    const second = await refresh(first.refresh_token);
    expect(await refusal(refresh(first.refresh_token))).toMatch(/already used; the grant is revoked/);
    expect(await refusal(refresh(second.refresh_token))).toMatch(/^invalid_grant/);
  });

  it("a narrower scope applies to the new access token; a broader one, or one without atproto, is invalid_scope and spends nothing", async () => {
    const first = await exchange(issueCode());
    expect(await refusal(refresh(first.refresh_token, { scope: "atproto transition:generic transition:email" }))).toMatch(/^invalid_scope/);
    expect(await refusal(refresh(first.refresh_token, { scope: "transition:generic" }))).toMatch(/^invalid_scope/);
    const narrowed = await refresh(first.refresh_token, { scope: "atproto" });
    expect(narrowed.scope).toBe("atproto");
    expect((await grants.findAccessToken(sha256Base64url(narrowed.access_token), clock))?.scope).toBe("atproto");
    expect((await refresh(narrowed.refresh_token)).scope).toBe("atproto transition:generic");
  });

  it("a public client's grant ends 90 days after consent however often it is refreshed; nothing issued outlives it", async () => {
    let current = await exchange(issueCode());
    for (let day = 10; day <= 80; day += 10) {
      clock += 10 * DAY;
      current = await refresh(current.refresh_token);
    }
    clock += 9 * DAY;
    current = await refresh(current.refresh_token);
    // Day 91: the grant has ended, though its refresh token is two days old.
    clock += 2 * DAY;
    expect(await refusal(refresh(current.refresh_token))).toMatch(/^invalid_grant/);

    // Near the end, the access token is cut to the grant's end.
    clock = Date.UTC(2026, 10, 1, 12, 0, 0);
    const fresh = await exchange(issueCode());
    clock += 90 * DAY - 10 * MINUTE;
    const late = await refresh(fresh.refresh_token);
    expect(late.expires_in).toBe(600);
  });
});

describe("TokenManager: a confidential client's grant is bound to its key (RFC 7523, docs/decisions/0010)", () => {
  const confidential = (key: Awaited<ReturnType<typeof assertion>>) => ({ client_id: CONFIDENTIAL_CLIENT, ...key });

  it("the key that authenticated the request must redeem the code and sign every refresh; another published key is refused", async () => {
    const code = issueCode({ clientId: CONFIDENTIAL_CLIENT, clientKey: k2.binding });
    expect(await refusal(exchange(code, confidential(await assertion(k3))))).toMatch(/another client key/);
    const issued = await exchange(code, confidential(await assertion(k2)));
    expect(await refusal(refresh(issued.refresh_token, confidential(await assertion(k3))))).toMatch(/bound to the client key k2/);
    // Refused, not spent: the bound key still refreshes.
    await expect(refresh(issued.refresh_token, confidential(await assertion(k2)))).resolves.toMatchObject({ token_type: "DPoP" });
  });

  it("a confidential grant lasts two years, and a DPoP proof signed with the client key is refused", async () => {
    const issued = await exchange(issueCode({ clientId: CONFIDENTIAL_CLIENT, clientKey: k2.binding }), confidential(await assertion(k2)));
    const grant = (await grants.findGrantByTokenHash(sha256Base64url(issued.refresh_token)))!;
    expect(grant.endsAt - grant.createdAt).toBe(730 * DAY);
    const code = issueCode({ clientId: CONFIDENTIAL_CLIENT, clientKey: k2.binding });
    expect(await refusal(exchange(code, confidential(await assertion(k2)), k2.binding.jkt))).toMatch(/different key than the client assertion/);
  });
});

describe("TokenManager: revocation (RFC 7009)", () => {
  it("either token ends the whole grant; an unknown token ends nothing and looks up no client", async () => {
    const issued = await exchange(issueCode());
    await tokens.revoke({ token: "ref-unknown", client_id: "https://never-fetched.example/client.json" });
    await tokens.revoke({ token: issued.access_token, client_id: PUBLIC_CLIENT });
    expect(grants.grants.size).toBe(0);
    expect(await refusal(refresh(issued.refresh_token))).toMatch(/^invalid_grant/);
  });

  it("another client's token is refused (RFC 7009 §2.1) and stays live", async () => {
    const issued = await exchange(issueCode());
    expect(await refusal(tokens.revoke({ token: issued.refresh_token, client_id: "http://localhost?scope=atproto" }))).toMatch(/not issued to this client/);
    expect(grants.grants.size).toBe(1);
  });
});

describe("TokenManager: permissions taken back from the app (docs/decisions/0053)", () => {
  const SCOPE = "atproto repo:app.bsky.feed.post repo:app.bsky.feed.like";
  const LIKES_TAKEN = ["create", "update", "delete"].map((action) => parseItem(`repo:app.bsky.feed.like?action=${action}`)!);

  it("the next refresh's scope leaves them out; asked for at refresh, they are dropped, not an error", async () => {
    const issued = await exchange(issueCode({ scope: SCOPE }));
    grants.withdraw("did:plc:alice", PUBLIC_CLIENT, LIKES_TAKEN);
    const refreshed = await refresh(issued.refresh_token);
    expect(refreshed.scope).toBe("atproto repo:app.bsky.feed.post");
    // An app that sends the scope it was granted keeps working: what was taken back is left out of the answer.
    expect((await refresh(refreshed.refresh_token, { scope: SCOPE })).scope).toBe("atproto repo:app.bsky.feed.post");
  });

  it("a narrowing between the refresh's read of its grant and its rotation is in the answer: the rotation's own read decides", async () => {
    const issued = await exchange(issueCode({ scope: SCOPE }));
    // The narrowing lands after the token manager read the grant (findRefreshToken), before it rotates.
    const read = grants.findRefreshToken.bind(grants);
    grants.findRefreshToken = async (hash, at) => {
      const found = await read(hash, at);
      grants.withdraw("did:plc:alice", PUBLIC_CLIENT, LIKES_TAKEN);
      return found;
    };
    expect((await refresh(issued.refresh_token)).scope).toBe("atproto repo:app.bsky.feed.post");
  });
});
