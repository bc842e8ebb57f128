import { randomUUID } from "node:crypto";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { InvalidDpopProofError, UseDpopNonceError } from "../errors/oauth-error.ts";
import type { ReplayStore } from "../replay/replay-store.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import { DpopNonces } from "./dpop-nonce.ts";
import { DpopVerifier, sameHtu } from "./dpop-verifier.ts";

const SECRET = "a-test-secret-that-is-long-enough-0123456789";
const WINDOW_MS = 3 * 60_000;
const MAX_AGE_MS = 60_000;
const MAX_FUTURE_MS = 10_000;
const URL_TOKEN = "https://pds.example.com/oauth/token";

/** An in-memory ReplayStore: same contract as SqlReplayStore, same clock as the verifier. */
class MemoryReplayStore implements ReplayStore {
  readonly rows = new Map<string, number>();
  constructor(private readonly now: () => number) {}
  async recordUnique(namespace: string, key: string, expiresAt: number): Promise<boolean> {
    const id = `${namespace}\u0000${key}`;
    const existing = this.rows.get(id);
    if (existing !== undefined && existing > this.now()) return false;
    this.rows.set(id, expiresAt);
    return true;
  }
}

let clock: number;
const now = () => clock;
let nonces: DpopNonces;
let replay: MemoryReplayStore;
let verifier: DpopVerifier;

let privateKey: CryptoKey;
let publicJwk: JWK;
let expectedJkt: string;

beforeAll(async () => {
  const pair = await generateKeyPair("ES256", { extractable: true });
  privateKey = pair.privateKey;
  publicJwk = await exportJWK(pair.publicKey);
  expectedJkt = await calculateJwkThumbprint(publicJwk, "sha256");
});

beforeEach(() => {
  clock = Date.UTC(2026, 0, 15, 12, 0, 0);
  nonces = new DpopNonces(SECRET, WINDOW_MS, now);
  replay = new MemoryReplayStore(now);
  verifier = new DpopVerifier(nonces, replay, { maxAgeMs: MAX_AGE_MS, maxFutureMs: MAX_FUTURE_MS, now });
});

type ProofOptions = {
  htm?: string;
  htu?: string;
  iat?: number;
  jti?: string;
  nonce?: string | null;
  ath?: string;
  typ?: string;
  alg?: string;
  key?: CryptoKey;
  jwk?: JWK;
  extraClaims?: Record<string, unknown>;
};

async function proof(options: ProofOptions = {}): Promise<string> {
  const payload: Record<string, unknown> = {
    htm: options.htm ?? "POST",
    htu: options.htu ?? URL_TOKEN,
    iat: options.iat ?? Math.floor(clock / 1000),
    jti: options.jti ?? randomUUID(),
    ...options.extraClaims,
  };
  const nonce = options.nonce === undefined ? nonces.current() : options.nonce;
  if (nonce !== null) payload.nonce = nonce;
  if (options.ath !== undefined) payload.ath = options.ath;
  return new SignJWT(payload)
    .setProtectedHeader({ typ: options.typ ?? "dpop+jwt", alg: options.alg ?? "ES256", jwk: options.jwk ?? publicJwk })
    .sign(options.key ?? privateKey);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

describe("DpopVerifier", () => {
  it("accepts a valid proof and returns the RFC 7638 thumbprint of its key", async () => {
    const jti = randomUUID();
    const result = await verifier.verify({ proof: await proof({ jti }), method: "POST", url: URL_TOKEN });
    expect(result).toEqual({ jkt: expectedJkt, jti });
  });

  it("accepts a lowercase request method (compared upper-cased)", async () => {
    await expect(verifier.verify({ proof: await proof(), method: "post", url: URL_TOKEN })).resolves.toMatchObject({ jkt: expectedJkt });
  });

  it.each([undefined, null, ""])("refuses a missing proof (%s)", async (missing) => {
    const error = await rejection(verifier.verify({ proof: missing, method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as InvalidDpopProofError).code).toBe("invalid_dpop_proof");
  });

  it.each(["not-a-jws", "a.b", "a.b.c.d", "....", "eyJhbGciOiJFUzI1NiJ9.e30.sig"])("refuses a value that is not a compact JWS: %s", async (value) => {
    await expect(verifier.verify({ proof: value, method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses a proof with a tampered payload (signature check)", async () => {
    const [h, , s] = (await proof()).split(".");
    const forged = Buffer.from(JSON.stringify({ htm: "POST", htu: URL_TOKEN, iat: Math.floor(clock / 1000), jti: "x", nonce: nonces.current() })).toString("base64url");
    await expect(verifier.verify({ proof: `${h}.${forged}.${s}`, method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses a proof signed by a key other than the header jwk", async () => {
    const other = await generateKeyPair("ES256");
    await expect(verifier.verify({ proof: await proof({ key: other.privateKey }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(
      InvalidDpopProofError,
    );
  });

  it.each(["JWT", "at+jwt", "DPOP+JWT"])("refuses typ %s", async (typ) => {
    await expect(verifier.verify({ proof: await proof({ typ }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses a proof without typ", async () => {
    const jwt = await new SignJWT({ htm: "POST", htu: URL_TOKEN, iat: Math.floor(clock / 1000), jti: randomUUID(), nonce: nonces.current() })
      .setProtectedHeader({ alg: "ES256", jwk: publicJwk })
      .sign(privateKey);
    await expect(verifier.verify({ proof: jwt, method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses an alg other than ES256 (ES384 with a P-384 key)", async () => {
    const p384 = await generateKeyPair("ES384", { extractable: true });
    const jwk = await exportJWK(p384.publicKey);
    const error = await rejection(verifier.verify({ proof: await proof({ alg: "ES384", key: p384.privateKey, jwk }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as Error).message).toMatch(/ES256/);
  });

  it("refuses a P-384 jwk even when the header claims ES256", async () => {
    const p384 = await generateKeyPair("ES384", { extractable: true });
    const jwk = await exportJWK(p384.publicKey);
    // Signed with the P-256 key but claiming a P-384 jwk.
    await expect(verifier.verify({ proof: await proof({ jwk }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses a header jwk that carries the private key (d)", async () => {
    const privateJwk = await exportJWK(privateKey);
    expect(privateJwk.d).toBeTypeOf("string");
    const error = await rejection(verifier.verify({ proof: await proof({ jwk: privateJwk }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as Error).message).toMatch(/private/);
  });

  it("refuses a proof without jti", async () => {
    const jwt = await new SignJWT({ htm: "POST", htu: URL_TOKEN, iat: Math.floor(clock / 1000), nonce: nonces.current() })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: publicJwk })
      .sign(privateKey);
    await expect(verifier.verify({ proof: jwt, method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("refuses an htm mismatch", async () => {
    const error = await rejection(verifier.verify({ proof: await proof({ htm: "GET" }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as Error).message).toMatch(/htm/);
  });

  it.each([
    "https://pds.example.com/oauth/par",
    "http://pds.example.com/oauth/token",
    "https://other.example.com/oauth/token",
    "https://pds.example.com:8443/oauth/token",
    "https://pds.example.com/oauth/token/",
    "not a url",
  ])("refuses an htu mismatch: %s", async (htu) => {
    const error = await rejection(verifier.verify({ proof: await proof({ htu }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as Error).message).toMatch(/htu/);
  });

  it("ignores the query and fragment of htu", async () => {
    await expect(
      verifier.verify({ proof: await proof({ htu: `${URL_TOKEN}?x=1` }), method: "POST", url: URL_TOKEN }),
    ).resolves.toMatchObject({ jkt: expectedJkt });
    await expect(
      verifier.verify({ proof: await proof({ htu: `${URL_TOKEN}#frag` }), method: "POST", url: `${URL_TOKEN}?y=2` }),
    ).resolves.toMatchObject({ jkt: expectedJkt });
  });

  it("accepts iat at the edges of the window and refuses it just outside", async () => {
    const nowSeconds = Math.floor(clock / 1000);
    await expect(verifier.verify({ proof: await proof({ iat: nowSeconds - MAX_AGE_MS / 1000 }), method: "POST", url: URL_TOKEN })).resolves.toBeDefined();
    await expect(verifier.verify({ proof: await proof({ iat: nowSeconds + MAX_FUTURE_MS / 1000 }), method: "POST", url: URL_TOKEN })).resolves.toBeDefined();

    const old = await rejection(verifier.verify({ proof: await proof({ iat: nowSeconds - MAX_AGE_MS / 1000 - 1 }), method: "POST", url: URL_TOKEN }));
    expect(old).toBeInstanceOf(InvalidDpopProofError);
    expect((old as Error).message).toMatch(/too old/);

    const future = await rejection(verifier.verify({ proof: await proof({ iat: nowSeconds + MAX_FUTURE_MS / 1000 + 1 }), method: "POST", url: URL_TOKEN }));
    expect(future).toBeInstanceOf(InvalidDpopProofError);
    expect((future as Error).message).toMatch(/future/);
  });

  it("uses the now option, not the wall clock, for iat", async () => {
    // A proof issued "now" by the fake clock is far in the past for the real one: still accepted.
    clock = Date.UTC(2020, 0, 1);
    const p = await proof();
    await expect(verifier.verify({ proof: p, method: "POST", url: URL_TOKEN })).resolves.toBeDefined();
    // Move the fake clock two minutes on: the same proof is now too old (fresh jti so replay does not interfere).
    const jti = randomUUID();
    const p2 = await proof({ jti });
    clock += 2 * 60_000;
    // The nonce is still in an accepted window (previous window at most), so the only failure is iat.
    await expect(verifier.verify({ proof: p2, method: "POST", url: URL_TOKEN })).rejects.toThrow(/too old/);
  });

  it("refuses a non-numeric iat", async () => {
    // jose types iat as a number; the proof is forged with a string on purpose.
    const jwt = await new SignJWT({ htm: "POST", htu: URL_TOKEN, iat: "now" as unknown as number, jti: randomUUID(), nonce: nonces.current() })
      .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: publicJwk })
      .sign(privateKey);
    await expect(verifier.verify({ proof: jwt, method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(InvalidDpopProofError);
  });

  it("answers use_dpop_nonce when the nonce is missing", async () => {
    const error = await rejection(verifier.verify({ proof: await proof({ nonce: null }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(UseDpopNonceError);
    expect((error as UseDpopNonceError).code).toBe("use_dpop_nonce");
  });

  it("answers use_dpop_nonce for a stale nonce", async () => {
    const staleNonces = new DpopNonces(SECRET, WINDOW_MS, () => clock - 2 * WINDOW_MS);
    const error = await rejection(verifier.verify({ proof: await proof({ nonce: staleNonces.current() }), method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(UseDpopNonceError);
    expect((error as Error).message).toMatch(/stale|invalid/);
  });

  it("answers use_dpop_nonce for a nonce under another secret, and for a non-string nonce", async () => {
    const foreign = new DpopNonces("another-secret-that-is-long-enough-xxxxxxxx", WINDOW_MS, now);
    await expect(verifier.verify({ proof: await proof({ nonce: foreign.current() }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(
      UseDpopNonceError,
    );
    await expect(
      verifier.verify({ proof: await proof({ nonce: null, extraClaims: { nonce: 42 } }), method: "POST", url: URL_TOKEN }),
    ).rejects.toBeInstanceOf(UseDpopNonceError);
  });

  it("accepts a nonce from the previous window", async () => {
    const p = await proof();
    clock += WINDOW_MS;
    await expect(verifier.verify({ proof: p, method: "POST", url: URL_TOKEN })).rejects.toThrow(/too old/);
    // Same nonce, fresh iat: accepted.
    const previousNonce = new DpopNonces(SECRET, WINDOW_MS, () => clock - WINDOW_MS).current();
    await expect(verifier.verify({ proof: await proof({ nonce: previousNonce }), method: "POST", url: URL_TOKEN })).resolves.toBeDefined();
  });

  it("refuses a replayed jti with invalid_dpop_proof", async () => {
    const p = await proof();
    await verifier.verify({ proof: p, method: "POST", url: URL_TOKEN });
    const error = await rejection(verifier.verify({ proof: p, method: "POST", url: URL_TOKEN }));
    expect(error).toBeInstanceOf(InvalidDpopProofError);
    expect((error as Error).message).toMatch(/replay/);
  });

  it("refuses the same jti in a different proof from the same key", async () => {
    const jti = randomUUID();
    await verifier.verify({ proof: await proof({ jti }), method: "POST", url: URL_TOKEN });
    await expect(
      verifier.verify({ proof: await proof({ jti, htu: "https://pds.example.com/oauth/par" }), method: "POST", url: "https://pds.example.com/oauth/par" }),
    ).rejects.toThrow(/replay/);
  });

  it("does not let one key's jti block another key", async () => {
    const jti = randomUUID();
    await verifier.verify({ proof: await proof({ jti }), method: "POST", url: URL_TOKEN });
    const other = await generateKeyPair("ES256", { extractable: true });
    const otherJwk = await exportJWK(other.publicKey);
    await expect(verifier.verify({ proof: await proof({ jti, key: other.privateKey, jwk: otherJwk }), method: "POST", url: URL_TOKEN })).resolves.toEqual({
      jkt: await calculateJwkThumbprint(otherJwk, "sha256"),
      jti,
    });
  });

  it("keeps the jti recorded for as long as the proof could still be accepted", async () => {
    // Proof issued at the latest accepted iat: it stays acceptable for maxFuture + maxAge.
    const p = await proof({ iat: Math.floor(clock / 1000) + MAX_FUTURE_MS / 1000 });
    await verifier.verify({ proof: p, method: "POST", url: URL_TOKEN });
    clock += MAX_FUTURE_MS + MAX_AGE_MS - 1000;
    await expect(verifier.verify({ proof: p, method: "POST", url: URL_TOKEN })).rejects.toThrow(/replay/);
  });

  it("checks the nonce before recording the jti: a bad-nonce proof does not burn its jti", async () => {
    const jti = randomUUID();
    await expect(verifier.verify({ proof: await proof({ jti, nonce: null }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(UseDpopNonceError);
    await expect(verifier.verify({ proof: await proof({ jti, nonce: "bogus" }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(UseDpopNonceError);
    expect(replay.rows.size).toBe(0);
    await expect(verifier.verify({ proof: await proof({ jti }), method: "POST", url: URL_TOKEN })).resolves.toEqual({ jkt: expectedJkt, jti });
    expect(replay.rows.size).toBe(1);
  });

  it("does not record the jti of a proof refused for another reason", async () => {
    const jti = randomUUID();
    await expect(verifier.verify({ proof: await proof({ jti, htm: "GET" }), method: "POST", url: URL_TOKEN })).rejects.toBeInstanceOf(
      InvalidDpopProofError,
    );
    expect(replay.rows.size).toBe(0);
  });

  describe("ath", () => {
    const accessToken = "at-abcdefghijklmnopqrstuvwxyz";
    const url = "https://pds.example.com/xrpc/com.atproto.repo.createRecord";

    it("is required when an access token is presented", async () => {
      const error = await rejection(verifier.verify({ proof: await proof({ htu: url }), method: "POST", url, accessToken }));
      expect(error).toBeInstanceOf(InvalidDpopProofError);
      expect((error as Error).message).toMatch(/ath/);
    });

    it("must equal the base64url SHA-256 of the access token", async () => {
      await expect(
        verifier.verify({ proof: await proof({ htu: url, ath: sha256Base64url("another-token") }), method: "POST", url, accessToken }),
      ).rejects.toThrow(/ath/);
      await expect(
        verifier.verify({ proof: await proof({ htu: url, ath: sha256Base64url(accessToken) }), method: "POST", url, accessToken }),
      ).resolves.toMatchObject({ jkt: expectedJkt });
    });

    it("is ignored when no access token is presented", async () => {
      await expect(verifier.verify({ proof: await proof({ ath: "whatever" }), method: "POST", url: URL_TOKEN })).resolves.toBeDefined();
    });
  });
});

describe("sameHtu", () => {
  it("compares scheme, host with port and path", () => {
    expect(sameHtu("https://a.example/x", "https://a.example/x")).toBe(true);
    expect(sameHtu("https://a.example/x?q=1#f", "https://a.example/x")).toBe(true);
    expect(sameHtu("https://a.example/x", "https://a.example/x?q=2")).toBe(true);
    expect(sameHtu("https://A.EXAMPLE:443/x", "https://a.example/x")).toBe(true);
    expect(sameHtu("http://a.example/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("https://a.example:8443/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("https://b.example/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("https://a.example/y", "https://a.example/x")).toBe(false);
    // RFC 9110 §4.2.4: a target URI carries no userinfo.
    expect(sameHtu("https://u:p@a.example/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("https://u@a.example/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("https://a.example/X", "https://a.example/x")).toBe(false);
    expect(sameHtu("/x", "https://a.example/x")).toBe(false);
    expect(sameHtu("", "https://a.example/x")).toBe(false);
  });
});
