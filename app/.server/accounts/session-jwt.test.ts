import { createHmac, createSecretKey } from "node:crypto";
import { jwtVerify, SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { newJti, sessionJwtKeys, type SessionJwtRefused, signSessionJwt, successorJti, verifySessionJwt, looksLikeJwt } from "./session-jwt.ts";

const NOW = 1_800_000_000_000;
const AUD = "did:web:pds.example";
const keys = sessionJwtKeys("a cookie secret of at least thirty-two characters");
const claims = { sub: "did:plc:alice", aud: AUD, scope: "com.atproto.access", jti: "jti-1", issuedAt: NOW, expiresAt: NOW + 7_200_000 };

async function refusalOf(token: string, kind: "access" | "refresh" = "access", now = NOW) {
  try {
    await verifySessionJwt(keys, kind, token, { aud: AUD, now });
  } catch (error) {
    return (error as SessionJwtRefused).reason;
  }
  return "accepted";
}

/** The tokens of password sessions (docs/decisions/0047): what is accepted, and why anything else is refused. */
describe("session JWTs", () => {
  it("an access token verifies to its claims, in seconds as JWTs count", async () => {
    const token = await signSessionJwt(keys, "access", claims);
    expect(looksLikeJwt(token)).toBe(true);
    expect(await verifySessionJwt(keys, "access", token, { aud: AUD, now: NOW })).toEqual({
      sub: "did:plc:alice",
      aud: AUD,
      scope: "com.atproto.access",
      jti: "jti-1",
      iat: NOW / 1000,
      exp: (NOW + 7_200_000) / 1000,
    });
  });

  it("are standard JWTs: jose verifies ours, and ours verifies jose's", async () => {
    const ours = await signSessionJwt(keys, "access", claims);
    const { payload, protectedHeader } = await jwtVerify(ours, keys.signing, { audience: AUD, typ: "at+jwt", currentDate: new Date(NOW) });
    expect(protectedHeader).toEqual({ typ: "at+jwt", alg: "HS256" });
    expect(payload).toMatchObject({ sub: claims.sub, scope: claims.scope, jti: claims.jti });
    const theirs = await new SignJWT({ scope: "com.atproto.refresh" })
      .setProtectedHeader({ alg: "HS256", typ: "refresh+jwt" })
      .setSubject(claims.sub)
      .setAudience([AUD, "did:web:other"])
      .setJti("jti-2")
      .setIssuedAt(NOW / 1000)
      .setExpirationTime(NOW / 1000 + 60)
      .sign(keys.signing);
    expect((await verifySessionJwt(keys, "refresh", theirs, { aud: AUD, now: NOW })).jti).toBe("jti-2");
  });

  it("refuses a critical header extension, a token not yet valid, a payload that is no object, a token with a fourth part", async () => {
    const signed = (header: object, payload: object) => {
      const head = Buffer.from(JSON.stringify(header)).toString("base64url");
      const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
      return `${head}.${body}.${createHmac("sha256", keys.signing).update(`${head}.${body}`).digest("base64url")}`;
    };
    const payload = { scope: "com.atproto.access", sub: claims.sub, aud: AUD, jti: "x", iat: NOW / 1000, exp: NOW / 1000 + 60 };
    expect(await refusalOf(signed({ alg: "HS256", typ: "at+jwt" }, payload))).toBe("accepted");
    expect(await refusalOf(signed({ alg: "HS256", typ: "at+jwt", crit: ["exp"] }, payload))).toBe("invalid");
    expect(await refusalOf(signed({ alg: "HS256", typ: "at+jwt" }, { ...payload, nbf: NOW / 1000 + 30 }))).toBe("invalid");
    expect(await refusalOf(signed({ alg: "HS256", typ: "at+jwt" }, [payload]))).toBe("invalid");
    expect(await refusalOf(signed({ alg: "HS256", typ: "at+jwt" }, { ...payload, exp: "later" }))).toBe("invalid");
    expect(await refusalOf(`${signed({ alg: "HS256", typ: "at+jwt" }, payload)}.x`)).toBe("invalid");
    expect(await refusalOf(signed({ alg: "HS256" }, payload))).toBe("invalid");
  });

  it("expired is told apart from invalid (the client refreshes only then); deleteSession may ignore the expiry", async () => {
    const token = await signSessionJwt(keys, "refresh", { ...claims, scope: "com.atproto.refresh" });
    expect(await refusalOf(token, "refresh", NOW + 7_200_000)).toBe("expired");
    expect((await verifySessionJwt(keys, "refresh", token, { aud: AUD, now: NOW + 365 * 86_400_000, ignoreExpiry: true })).jti).toBe("jti-1");
  });

  it("refuses a token of the other kind, another audience, another key, another algorithm, or an unsigned one", async () => {
    const access = await signSessionJwt(keys, "access", claims);
    expect(await refusalOf(access, "refresh")).toBe("invalid");
    const refresh = await signSessionJwt(keys, "refresh", { ...claims, scope: "com.atproto.refresh" });
    expect(await refusalOf(refresh, "access")).toBe("invalid");
    expect(await refusalOf(await signSessionJwt(keys, "access", { ...claims, aud: "did:web:elsewhere" }))).toBe("invalid");
    expect(await refusalOf(await signSessionJwt(sessionJwtKeys("another secret of at least thirty-two characters"), "access", claims))).toBe("invalid");
    const hs512 = await new SignJWT({ scope: "com.atproto.access" }).setProtectedHeader({ alg: "HS512", typ: "at+jwt" }).setSubject(claims.sub).setAudience(AUD).setJti("x").setIssuedAt(NOW / 1000).setExpirationTime(NOW / 1000 + 60).sign(createSecretKey(Buffer.alloc(64, 1)));
    expect(await refusalOf(hs512)).toBe("invalid");
    const unsigned = new UnsecuredJWT({ scope: "com.atproto.access", sub: claims.sub, aud: AUD, jti: "x", iat: NOW / 1000, exp: NOW / 1000 + 60 }).encode();
    expect(await refusalOf(unsigned)).toBe("invalid");
    expect(await refusalOf("not.a.jwt")).toBe("invalid");
  });

  it("refuses claims the reference refuses: an unknown scope, a sub that is no DID, a service token's lxm, a proof-of-possession cnf", async () => {
    for (const extra of [{ scope: "com.atproto.refresh" }, { scope: "atproto" }, { sub: "alice" }]) {
      expect(await refusalOf(await signSessionJwt(keys, "access", { ...claims, ...extra })), JSON.stringify(extra)).toBe("invalid");
    }
    for (const payload of [{ lxm: "app.bsky.feed.getTimeline" }, { cnf: { jkt: "x" } }]) {
      const token = await new SignJWT({ scope: "com.atproto.access", ...payload })
        .setProtectedHeader({ alg: "HS256", typ: "at+jwt" })
        .setSubject(claims.sub)
        .setAudience(AUD)
        .setJti("x")
        .setIssuedAt(NOW / 1000)
        .setExpirationTime(NOW / 1000 + 60)
        .sign(keys.signing);
      expect(await refusalOf(token), JSON.stringify(payload)).toBe("invalid");
    }
  });

  it("a refresh token's successor is named by its own id under the server's key: the same every time, unguessable without both", () => {
    const jti = newJti();
    expect(successorJti(keys, jti)).toBe(successorJti(keys, jti));
    expect(successorJti(keys, jti)).not.toBe(successorJti(keys, newJti()));
    expect(successorJti(sessionJwtKeys("another secret of at least thirty-two characters"), jti)).not.toBe(successorJti(keys, jti));
    expect(Buffer.from(jti, "base64url")).toHaveLength(32);
  });
});
