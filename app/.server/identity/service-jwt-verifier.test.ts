import { describe, expect, it } from "vitest";
import { accountKeypair, generateSigningKey } from "../accounts/signing-key.ts";
import { createServiceJwt } from "../accounts/service-auth.ts";
import { ServiceJwtVerifier } from "./service-jwt-verifier.ts";

/**
 * The service-token rules that need no server (docs/decisions/0055): the refusals a started server shows are in
 * tests/integration/moving-in.test.ts. The clock is injected; the issuer's key is looked up through a stand-in that
 * counts its fresh lookups.
 */
const DID = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
const AUD = "did:web:pds.example.com";
const LXM = "com.atproto.server.createAccount";
const NOW = Date.UTC(2026, 10, 28, 12);

const segment = (json: object) => Buffer.from(JSON.stringify(json)).toString("base64url");
const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { xrpcName?: string; message: string; status: number }) => ({ status: error.status, error: error.xrpcName, message: error.message }));

async function setUp() {
  const key = await accountKeypair(await generateSigningKey());
  const keys = { cached: key.did(), fresh: key.did(), freshLookups: 0 };
  const verifier = new ServiceJwtVerifier(async (did, fresh) => {
    expect(did).toBe(DID);
    if (!fresh) return keys.cached;
    keys.freshLookups++;
    return keys.fresh;
  }, () => NOW);
  const token = (claims: { iss?: string } = {}) => createServiceJwt({ iss: claims.iss ?? DID, aud: AUD, lxm: LXM, expiresAt: NOW + 60_000, signingKey: key, now: NOW });
  return { key, keys, verifier, token };
}

describe("service tokens for createAccount with did", () => {
  it("a key rotated since the document was cached: verified against the fresh document, looked up once more only then", async () => {
    const { keys, verifier, token } = await setUp();
    expect(await verifier.verify(await token(), { audience: AUD, lxm: LXM })).toMatchObject({ iss: DID, aud: AUD, lxm: LXM });
    expect(keys.freshLookups).toBe(0);
    keys.cached = (await accountKeypair(await generateSigningKey())).did();
    expect(await verifier.verify(await token(), { audience: AUD, lxm: LXM })).toMatchObject({ iss: DID });
    expect(keys.freshLookups).toBe(1);
    keys.fresh = keys.cached;
    expect(await refusal(verifier.verify(await token(), { audience: AUD, lxm: LXM }))).toEqual({ status: 401, error: "BadJwtSignature", message: "jwt signature does not match jwt issuer" });
  });

  it("refuses what is not a service token: malformed, an OAuth, refresh or DPoP type, a bad iss, an alg the key does not have", async () => {
    const { verifier, token } = await setUp();
    const good = (await token()).split(".");
    const check = (jwt: string) => refusal(verifier.verify(jwt, { audience: AUD, lxm: LXM }));
    expect(await check("a.b")).toMatchObject({ status: 401, error: "BadJwt", message: "poorly formatted jwt" });
    expect(await check(`${good[0]}.${segment({ iss: DID, aud: AUD })}.${good[2]}`)).toMatchObject({ error: "BadJwt" });
    for (const typ of ["at+jwt", "refresh+jwt", "dpop+jwt"]) {
      expect(await check(`${segment({ alg: "ES256", typ })}.${good[1]}.${good[2]}`)).toMatchObject({ error: "BadJwtType", message: `Invalid jwt type "${typ}"` });
    }
    expect(await check(`${good[0]}.${segment({ iss: "not a did", aud: AUD, lxm: LXM, exp: NOW / 1000 + 60 })}.${good[2]}`)).toMatchObject({ error: "BadJwtIss" });
    expect(await check(`${segment({ alg: "ES256K" })}.${good[1]}.${good[2]}`)).toMatchObject({ error: "BadJwtSignature", message: "could not verify jwt signature" });
    expect(await check(`${good[0]}.${segment({ iss: DID, aud: AUD, exp: NOW / 1000 + 60 })}.${good[2]}`)).toMatchObject({ error: "BadJwtLexiconMethod", message: `missing jwt lexicon method ("lxm"). must match: ${LXM}` });
  });
});
