import { exportJWK, generateKeyPair, type JWK } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { InvalidClientMetadataError } from "../errors/oauth-error.ts";
import {
  assertFetchableClientId,
  isLoopbackClientId,
  loopbackClient,
  redirectUriMatches,
  validateClientMetadata,
} from "./client-metadata.ts";

const CLIENT_ID = "https://app.example.com/client-metadata.json";
const strict = { allowPrivate: false };
const dev = { allowPrivate: true };

function webClient(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client_id: CLIENT_ID,
    client_name: "Example App",
    client_uri: "https://app.example.com",
    redirect_uris: ["https://app.example.com/oauth/callback"],
    scope: "atproto transition:generic",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    application_type: "web",
    dpop_bound_access_tokens: true,
    ...overrides,
  };
}

function nativeClient(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return webClient({ application_type: "native", redirect_uris: ["com.example.app:/callback"], ...overrides });
}

function refusal(fn: () => unknown): InvalidClientMetadataError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidClientMetadataError);
    return error as InvalidClientMetadataError;
  }
  throw new Error("expected a refusal");
}

let publicJwk: JWK;
beforeAll(async () => {
  const { publicKey } = await generateKeyPair("ES256", { extractable: true });
  publicJwk = { ...(await exportJWK(publicKey)), kid: "key-1", alg: "ES256", use: "sig" };
});

describe("validateClientMetadata", () => {
  it("refuses a redirect_uri on this server's own origin, in any spelling of it (its answer would pass as a same-origin navigation)", () => {
    const onIssuer = { allowPrivate: false, issuer: "https://pds.example.com" };
    for (const uri of ["https://pds.example.com/account?lng=ja", "https://PDS.example.com:443/oauth/authorize", "https://pds.example.com/"]) {
      const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: [uri] }), onIssuer));
      expect(error.message, uri).toMatch(/must not be on this authorization server/);
    }
    expect(validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["https://pds.example.com.evil.example/cb"] }), onIssuer).redirectUris).toHaveLength(1);
  });

  it("accepts a valid web client and normalises it", () => {
    const client = validateClientMetadata(CLIENT_ID, webClient(), strict);
    expect(client).toMatchObject({
      clientId: CLIENT_ID,
      isLoopback: false,
      applicationType: "web",
      authMethod: "none",
      redirectUris: ["https://app.example.com/oauth/callback"],
      scopes: ["atproto", "transition:generic"],
      clientName: "Example App",
      clientUri: "https://app.example.com",
    });
    expect(client.jwks).toBeUndefined();
  });

  it("removes bidi controls from the name and records that it held some (the screens warn about it)", () => {
    const client = validateClientMetadata(CLIENT_ID, webClient({ client_name: "Photos\u202e\u2066 App" }), strict);
    expect(client.clientName).toBe("Photos App");
    expect(client.clientNameHadHiddenCharacters).toBe(true);
    expect(validateClientMetadata(CLIENT_ID, webClient(), strict).clientNameHadHiddenCharacters).toBeUndefined();
  });

  it("refuses a document whose client_id differs from the URL", () => {
    const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ client_id: "https://evil.example.com/client-metadata.json" }), strict));
    expect(error.message).toMatch(/client_id/);
    expect(error.code).toBe("invalid_client_metadata");
  });

  it("refuses a document without client_id", () => {
    const doc = webClient();
    delete doc.client_id;
    refusal(() => validateClientMetadata(CLIENT_ID, doc, strict));
  });

  it.each([false, undefined])("refuses dpop_bound_access_tokens %s", (value) => {
    const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ dpop_bound_access_tokens: value }), strict));
    expect(error.message).toMatch(/dpop_bound_access_tokens/);
  });

  it.each(["transition:generic", "openid profile", undefined])("refuses scope without atproto: %s", (scope) => {
    const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ scope }), strict));
    expect(error.message).toMatch(/atproto/);
  });

  it("refuses a client without the code response type or authorization_code grant", () => {
    refusal(() => validateClientMetadata(CLIENT_ID, webClient({ grant_types: ["refresh_token"] }), strict));
    refusal(() => validateClientMetadata(CLIENT_ID, webClient({ response_types: ["token"] }), strict));
  });

  it("refuses a document that is not client metadata at all", () => {
    refusal(() => validateClientMetadata(CLIENT_ID, "hello", strict));
    refusal(() => validateClientMetadata(CLIENT_ID, null, strict));
    refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: [] }), strict));
  });

  describe("private_key_jwt", () => {
    it("accepts inline jwks", () => {
      const client = validateClientMetadata(
        CLIENT_ID,
        webClient({ token_endpoint_auth_method: "private_key_jwt", token_endpoint_auth_signing_alg: "ES256", jwks: { keys: [publicJwk] } }),
        strict,
      );
      expect(client.authMethod).toBe("private_key_jwt");
      expect(client.jwks).toHaveLength(1);
      expect(client.jwks?.[0]).toMatchObject({ kid: "key-1", x: publicJwk.x });
      expect(client.jwksUri).toBeUndefined();
    });

    it("accepts jwks_uri", () => {
      const client = validateClientMetadata(
        CLIENT_ID,
        webClient({ token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://app.example.com/jwks.json" }),
        strict,
      );
      expect(client.jwksUri).toBe("https://app.example.com/jwks.json");
      expect(client.jwks).toBeUndefined();
    });

    it("refuses both jwks and jwks_uri", () => {
      const error = refusal(() =>
        validateClientMetadata(
          CLIENT_ID,
          webClient({ token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [publicJwk] }, jwks_uri: "https://app.example.com/jwks.json" }),
          strict,
        ),
      );
      expect(error.message).toMatch(/jwks/);
    });

    it("refuses neither jwks nor jwks_uri", () => {
      const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ token_endpoint_auth_method: "private_key_jwt" }), strict));
      expect(error.message).toMatch(/jwks/);
    });

    it("refuses a signing alg other than ES256", () => {
      refusal(() =>
        validateClientMetadata(
          CLIENT_ID,
          webClient({ token_endpoint_auth_method: "private_key_jwt", token_endpoint_auth_signing_alg: "RS256", jwks: { keys: [publicJwk] } }),
          strict,
        ),
      );
    });

    it("refuses an http jwks_uri unless allowPrivate", () => {
      const doc = webClient({ token_endpoint_auth_method: "private_key_jwt", jwks_uri: "http://127.0.0.1:1234/jwks.json" });
      expect(refusal(() => validateClientMetadata(CLIENT_ID, doc, strict)).message).toMatch(/jwks_uri/);
      expect(validateClientMetadata(CLIENT_ID, doc, dev).jwksUri).toBe("http://127.0.0.1:1234/jwks.json");
    });
  });

  it.each(["client_secret_post", "client_secret_basic", "tls_client_auth"])("refuses token_endpoint_auth_method %s", (method) => {
    const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ token_endpoint_auth_method: method }), strict));
    expect(error.message).toMatch(/not supported|token_endpoint_auth_method/);
  });

  it("refuses an omitted token_endpoint_auth_method (defaults to client_secret_basic)", () => {
    const doc = webClient();
    delete doc.token_endpoint_auth_method;
    refusal(() => validateClientMetadata(CLIENT_ID, doc, strict));
  });

  describe("web redirect URIs", () => {
    it("refuses an http loopback redirect without allowPrivate", () => {
      const error = refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["http://127.0.0.1:8080/callback"] }), strict));
      expect(error.message).toMatch(/https/);
    });

    it("allows an http loopback IP redirect with allowPrivate", () => {
      const client = validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["http://127.0.0.1:8080/callback"] }), dev);
      expect(client.redirectUris).toEqual(["http://127.0.0.1:8080/callback"]);
    });

    it("refuses http to a non-loopback host even with allowPrivate", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["http://app.example.com/callback"] }), dev));
      refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["http://10.0.0.5/callback"] }), dev));
    });

    it("refuses a custom scheme for a web client", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["com.example.app:/callback"] }), strict));
    });

    it("refuses a redirect URI with a fragment", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["https://app.example.com/cb#frag"] }), strict));
    });

    it("refuses the whole document when any redirect URI is bad", () => {
      refusal(() =>
        validateClientMetadata(CLIENT_ID, webClient({ redirect_uris: ["https://app.example.com/cb", "javascript:alert(1)"] }), strict),
      );
    });
  });

  describe("native redirect URIs", () => {
    it("accepts the reversed client_id host as scheme with a single slash", () => {
      const client = validateClientMetadata(CLIENT_ID, nativeClient(), strict);
      expect(client.applicationType).toBe("native");
      expect(client.redirectUris).toEqual(["com.example.app:/callback"]);
    });

    it("refuses a scheme that is not the reversed client_id host", () => {
      const error = refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["com.example.other:/callback"] }), strict));
      expect(error.message).toMatch(/com\.example\.app/);
      refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["app.example.com:/callback"] }), strict));
    });

    it("refuses a double slash after the scheme", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["com.example.app://callback"] }), strict));
      refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["Com.Example.App://callback"] }), strict));
    });

    it("refuses a custom scheme with no slash at all (atproto: scheme, ':', a single '/', then the path)", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["com.example.app:callback"] }), strict));
    });

    it("accepts http loopback IP redirects without allowPrivate", () => {
      const client = validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["http://127.0.0.1/cb", "http://[::1]:8080/cb"] }), strict);
      expect(client.redirectUris).toEqual(["http://127.0.0.1/cb", "http://[::1]:8080/cb"]);
    });

    it("refuses http://localhost for a native client", () => {
      refusal(() => validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["http://localhost/cb"] }), strict));
    });

    it("accepts https redirect URIs for a native client", () => {
      expect(validateClientMetadata(CLIENT_ID, nativeClient({ redirect_uris: ["https://app.example.com/cb"] }), strict).redirectUris).toEqual([
        "https://app.example.com/cb",
      ]);
    });
  });

  it("drops non-https display URIs", () => {
    const client = validateClientMetadata(CLIENT_ID, webClient({ client_uri: "http://127.0.0.1/", logo_uri: "https://app.example.com/logo.png" }), dev);
    expect(client.clientUri).toBeUndefined();
    expect(client.logoUri).toBe("https://app.example.com/logo.png");
  });
});

describe("assertFetchableClientId", () => {
  it("accepts a normalized https URL", () => {
    expect(assertFetchableClientId(CLIENT_ID, strict).href).toBe(CLIENT_ID);
  });

  it.each([
    "http://app.example.com/client-metadata.json",
    "not a url",
    "https://app.example.com/client-metadata.json#x",
    "https://user:pw@app.example.com/client-metadata.json",
    "https://APP.example.com/client-metadata.json",
  ])("refuses %s", (clientId) => {
    refusal(() => assertFetchableClientId(clientId, strict));
  });

  it("allows http with allowPrivate", () => {
    expect(assertFetchableClientId("http://127.0.0.1:8080/client.json", dev).port).toBe("8080");
  });
});

describe("redirectUriMatches", () => {
  it("matches exactly", () => {
    expect(redirectUriMatches("https://app.example.com/cb", "https://app.example.com/cb")).toBe(true);
    expect(redirectUriMatches("com.example.app:/callback", "com.example.app:/callback")).toBe(true);
  });

  it("does not match anything else for non-loopback URIs", () => {
    expect(redirectUriMatches("https://app.example.com/cb", "https://app.example.com/cb/")).toBe(false);
    expect(redirectUriMatches("https://app.example.com/cb", "https://app.example.com:8443/cb")).toBe(false);
    expect(redirectUriMatches("https://app.example.com/cb", "https://app.example.com/cb?x=1")).toBe(false);
    expect(redirectUriMatches("https://app.example.com/cb", "https://APP.example.com/cb")).toBe(false);
  });

  it("ignores the port for loopback IP literals (RFC 8252 §7.3)", () => {
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:8080/cb")).toBe(true);
    expect(redirectUriMatches("http://127.0.0.1:1234/cb", "http://127.0.0.1:5678/cb")).toBe(true);
    expect(redirectUriMatches("http://[::1]/cb", "http://[::1]:51000/cb")).toBe(true);
  });

  it("does not mix loopback addresses", () => {
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://[::1]:8080/cb")).toBe(false);
  });

  it("does not treat localhost as a loopback IP", () => {
    expect(redirectUriMatches("http://localhost/cb", "http://localhost:8080/cb")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://localhost:8080/cb")).toBe(false);
  });

  it("requires the path (and query) to match", () => {
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:8080/other")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:8080/cb/")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb?a=1", "http://127.0.0.1:8080/cb?a=2")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb?a=1", "http://127.0.0.1:8080/cb?a=1")).toBe(true);
  });

  it("refuses scheme changes, fragments and credentials", () => {
    expect(redirectUriMatches("http://127.0.0.1/cb", "https://127.0.0.1:8080/cb")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://127.0.0.1:8080/cb#x")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb", "http://user@127.0.0.1:8080/cb")).toBe(false);
    expect(redirectUriMatches("http://127.0.0.1/cb", "not a url")).toBe(false);
  });
});

describe("loopbackClient", () => {
  it("derives the default metadata from http://localhost", () => {
    expect(isLoopbackClientId("http://localhost")).toBe(true);
    expect(loopbackClient("http://localhost")).toEqual({
      clientId: "http://localhost",
      isLoopback: true,
      applicationType: "native",
      authMethod: "none",
      redirectUris: ["http://127.0.0.1/", "http://[::1]/"],
      scopes: ["atproto"],
    });
  });

  it("takes redirect_uri and scope from the query", () => {
    const clientId = `http://localhost?redirect_uri=${encodeURIComponent("http://127.0.0.1:8080/callback")}&scope=${encodeURIComponent(
      "atproto transition:generic",
    )}`;
    expect(isLoopbackClientId(clientId)).toBe(true);
    const client = loopbackClient(clientId);
    expect(client.clientId).toBe(clientId);
    expect(client.redirectUris).toEqual(["http://127.0.0.1:8080/callback"]);
    expect(client.scopes).toEqual(["atproto", "transition:generic"]);
  });

  it("accepts several redirect_uri parameters", () => {
    const clientId = `http://localhost/?redirect_uri=${encodeURIComponent("http://127.0.0.1/a")}&redirect_uri=${encodeURIComponent("http://[::1]/b")}`;
    expect(loopbackClient(clientId).redirectUris).toEqual(["http://127.0.0.1/a", "http://[::1]/b"]);
  });

  it("refuses a loopback client_id whose scope lacks atproto", () => {
    // Still recognised as a loopback client_id (so it is never fetched), but refused.
    const clientId = `http://localhost?scope=${encodeURIComponent("transition:generic")}`;
    expect(isLoopbackClientId(clientId)).toBe(true);
    expect(refusal(() => loopbackClient(clientId)).message).toMatch(/atproto/);
  });

  it.each([
    `http://localhost?redirect_uri=${encodeURIComponent("https://app.example.com/cb")}`,
    `http://localhost?redirect_uri=${encodeURIComponent("http://localhost/cb")}`,
    "http://localhost/path",
    "http://localhost?foo=bar",
    "http://127.0.0.1",
  ])("refuses %s", (clientId) => {
    expect(isLoopbackClientId(clientId)).toBe(false);
    refusal(() => loopbackClient(clientId));
  });
});
