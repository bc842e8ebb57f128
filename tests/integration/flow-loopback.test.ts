import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { approveWithPassword, CookieJar } from "../helpers/consent.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const REDIRECT = "http://127.0.0.1/callback";
const CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: REDIRECT, scope: "atproto transition:generic" })}`;

let server: TestServer;
let account: { did: string; handle: string };

beforeAll(async () => {
  server = await startTestServer();
  account = await createAccount(server, { handle: "alice.test", email: "alice@example.com", password: "correct horse battery" });
});
afterAll(() => server?.stop());

describe("full flow for an atproto loopback client", () => {
  it("PAR → consent → code → tokens → userinfo → refresh → revoke", async () => {
    const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
    const pkce = createPkce();
    // The redirect port is chosen at request time (RFC 8252 §7.3).
    const redirectUri = "http://127.0.0.1:54321/callback";
    const par = await client.pushAuthorizationRequest({
      redirect_uri: redirectUri,
      scope: "atproto transition:generic",
      state: "state-123",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
    expect(par.status).toBe(201);
    expect(par.body.request_uri).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    expect(par.body.expires_in).toBeGreaterThan(0);
    expect(par.body.expires_in).toBeLessThanOrEqual(300);

    const location = await approveWithPassword(client.authorizeUrl(par.body.request_uri), new CookieJar(), "alice.test", "correct horse battery");
    expect(`${location.origin}${location.pathname}`).toBe("http://127.0.0.1:54321/callback");
    expect(location.searchParams.get("state")).toBe("state-123");
    expect(location.searchParams.get("iss")).toBe(server.issuer);
    const code = location.searchParams.get("code")!;
    expect(code).toBeTruthy();

    const tokens = await client.exchangeCode(code, pkce.verifier, redirectUri);
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get("www-authenticate")).toBeNull();
    expect(tokens.body).toMatchObject({ token_type: "DPoP", expires_in: 3600, scope: "atproto transition:generic", sub: account.did });
    expect(tokens.body.access_token.split(".")).toHaveLength(1);

    const me = await client.userinfo(tokens.body.access_token);
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ sub: account.did, preferred_username: "alice.test" });

    const refreshed = await client.refresh(tokens.body.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(tokens.body.refresh_token);
    expect((await client.userinfo(refreshed.body.access_token)).status).toBe(200);

    const revoked = await client.revoke(refreshed.body.refresh_token);
    expect(revoked.status).toBe(200);
    const after = await client.userinfo(refreshed.body.access_token);
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toMatch(/^DPoP error="invalid_token"/);
  });
});
