import { describe, expect, it } from "vitest";
import { REDACTED_PATHS, scrubSecrets, serializeError } from "./redaction.ts";

const TOKEN = "tok-8f3kQ2xW9zLmN4pR7tV1yB6cD0eF5gH2jK8lM3nP9qS";
const REFRESH = "ref-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8Cb7Az6Yx5W";
const CODE = "cod-Qa1Ws2Ed3Rf4Tg5Yh6Uj7Ik8Ol9Pz0Xc1Vb2Nm3As4D";
const REQUEST_URI = "urn:ietf:params:oauth:request_uri:req-Mn8Bv7Cx6Za5Sd4Fg3Hj2Kl1Qw0Er9Ty8Ui7Op6";
const PROOF = "eyJhbGciOiJFUzI1NiIsInR5cCI6ImRwb3Arand0In0.eyJqdGkiOiJhYmMiLCJodG0iOiJQT1NUIn0.c2lnbmF0dXJlLWJ5dGVz";

describe("scrubSecrets", () => {
  it.each([
    ["an access token", `token ${TOKEN} not found`, TOKEN],
    ["a refresh token", `refresh_token ${REFRESH}`, REFRESH],
    ["an authorization code", `code ${CODE} expired`, CODE],
    ["a request_uri", `no request ${REQUEST_URI}&client_id=x`, "req-Mn8Bv7Cx6Za5Sd4Fg3Hj2Kl1Qw0Er9Ty8Ui7Op6"],
    ["a DPoP proof or client assertion (JWS)", `bad proof ${PROOF}.`, PROOF],
    ["an Authorization header value", `Authorization: DPoP some-opaque-value`, "some-opaque-value"],
    ["a Bearer value", "bearer abc.def.ghi", "abc.def.ghi"],
    ["a form-encoded password", "body was identifier=alice&password=correct%20horse&x=1", "correct%20horse"],
    ["a form-encoded code_verifier", "code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"],
    ["a JSON password", 'input {"identifier":"alice","password":"correct \\"horse\\" battery"}', "battery"],
    ["a JSON client_assertion", '{"client_assertion": "anything-at-all"}', "anything-at-all"],
    ["createSession's emailed code (docs/decisions/0047)", '{"identifier":"alice.test","authFactorToken":"7KQ2M-XR4PD"}', "7KQ2M-XR4PD"],
    ["a cookie header", "cookie: atrium_session=s3cr3t; atrium_csrf=c5rf", "s3cr3t"],
  ])("masks %s", (_name, text, secret) => {
    const scrubbed = scrubSecrets(text);
    expect(scrubbed).not.toContain(secret);
    expect(scrubbed).toContain("[redacted]");
  });

  it("leaves ordinary text alone: paths, NSIDs, grant ids, SQLite codes", () => {
    const text = "SqliteError: file is not a database at /app/build/server/assets/request-limiter-Bzzk7oKc.js:12 (com.atproto.repo.createRecord, grt-abc)";
    expect(scrubSecrets(text)).toBe(text);
  });
});

describe("serializeError", () => {
  it("keeps type, message, stack, code and cause, scrubbed, and nothing else the error carries", () => {
    const cause = Object.assign(new Error(`upstream refused ${TOKEN}`), { code: "ECONNREFUSED" });
    const error = Object.assign(new TypeError(`could not use ${REFRESH}`, { cause }), {
      code: "E_TEST",
      request: { headers: { authorization: `DPoP ${TOKEN}` }, body: "password=hunter2" },
      meta: { password: "hunter2" },
    });
    const serialized = serializeError(error);
    expect(serialized.type).toBe("TypeError");
    expect(serialized.code).toBe("E_TEST");
    expect(serialized.message).toBe("could not use ref-[redacted]");
    expect(serialized.stack).toMatch(/^TypeError: could not use ref-\[redacted\]\n\s+at /);
    expect(serialized.cause).toMatchObject({ type: "Error", code: "ECONNREFUSED", message: "upstream refused tok-[redacted]" });
    const text = JSON.stringify(serialized);
    for (const secret of [TOKEN, REFRESH, "hunter2"]) expect(text).not.toContain(secret);
    expect(Object.keys(serialized).sort()).toEqual(["cause", "code", "message", "stack", "type"]);
  });

  it("serializes thrown non-errors as text, scrubbed", () => {
    expect(serializeError(`failed with ${CODE}`)).toEqual({ type: "string", message: "failed with cod-[redacted]" });
    expect(serializeError({ password: "hunter2" }).message).not.toContain("hunter2");
  });

  it("stops after a few causes (a cycle cannot loop)", () => {
    const error = new Error("loop");
    (error as { cause?: unknown }).cause = error;
    const depth = (value: { cause?: unknown } | undefined): number => (value ? 1 + depth(value.cause as { cause?: unknown } | undefined) : 0);
    expect(depth(serializeError(error))).toBe(4);
  });
});

describe("REDACTED_PATHS", () => {
  it("names every secret at the top level and under headers, bodies and forms, with exact paths only (no wildcard)", () => {
    for (const path of ["password", "access_token", "refresh_token", "code", "code_verifier", "client_assertion", "request_uri", "dpop", "authorization", "cookie", '["set-cookie"]']) {
      expect(REDACTED_PATHS).toContain(path);
    }
    for (const path of ["req.headers.authorization", "req.headers.cookie", "req.headers.dpop", 'res.headers["set-cookie"]', "body.password", "form.code_verifier", "query.request_uri", 'body["authFactorToken"]', 'body["refreshJwt"]']) {
      expect(REDACTED_PATHS).toContain(path);
    }
    expect(REDACTED_PATHS.some((path) => path.includes("*"))).toBe(false);
  });
});
