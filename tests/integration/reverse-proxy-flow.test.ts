import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice, newClient, obtainTokens } from "../helpers/flow.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";

/**
 * A deployment's shape, end to end (docs/configuration.md "Running on PostgreSQL behind a
 * reverse proxy"): a real nginx balancing round-robin over two Atrium
 * processes that share one database (in the postgresql project, a
 * PostgreSQL database; in the sqlite project, one SQLite file), with
 * ATRIUM_TRUST_PROXY on. The whole OAuth flow runs through the proxy, so
 * consecutive steps land on different processes: the pushed request on one,
 * the consent screen on the other, the code exchange, refresh and data calls
 * wherever nginx sends them. Nonces, CSRF tokens, sessions and single-use
 * items must hold across them.
 */

/** The paths a process answered, from its request log (on in production: one JSON line per request). */
function pathsServedBy(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => (JSON.parse(line) as { path: string }).path);
}

describe("the whole OAuth flow through nginx, round-robin over two processes on one database", () => {
  let proxied: ProxiedServers;

  beforeAll(async () => {
    proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "1" });
    await createAlice(proxied.servers[0]!);
  });
  afterAll(() => proxied?.stop());

  it("PAR → sign-in and consent → code → token → userinfo → data → refresh → revoke all succeed", async () => {
    const [first] = proxied.servers;
    expect(first!.issuer).toBe(proxied.issuer);
    const client = await newClient(first!);
    const { tokens } = await obtainTokens(first!, client);
    expect(tokens.token_type).toBe("DPoP");

    const userinfo = await client.userinfo(tokens.access_token);
    expect(userinfo.status).toBe(200);
    expect(userinfo.body.preferred_username).toBe("alice.test");

    const created = await client.xrpc<{ uri: string; cid: string }>(tokens.access_token, "com.atproto.repo.createRecord", {
      json: { repo: userinfo.body.sub, collection: "app.bsky.feed.post", record: { text: "through the proxy", createdAt: new Date().toISOString() } },
    });
    expect(created.status).toBe(200);
    const rkey = created.body.uri.split("/").pop()!;
    // Several reads: round-robin sends them to both processes, and each finds the record.
    for (let i = 0; i < 4; i++) {
      const read = await client.xrpc<{ cid: string }>(tokens.access_token, "com.atproto.repo.getRecord", {
        params: { repo: userinfo.body.sub, collection: "app.bsky.feed.post", rkey },
      });
      expect(read.status).toBe(200);
      expect(read.body.cid).toBe(created.body.cid);
    }

    const refreshed = await client.refresh(tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    // The spent refresh token is refused whichever process gets it.
    for (let i = 0; i < 2; i++) expect((await client.refresh(tokens.refresh_token)).status).toBe(400);

    // The replay revoked the grant: the new access token no longer works anywhere.
    expect((await client.userinfo(refreshed.body.access_token)).status).toBe(401);
  });

  it("a fresh grant is revoked through one process and refused by both", async () => {
    const [first] = proxied.servers;
    const client = await newClient(first!);
    const { tokens } = await obtainTokens(first!, client);
    expect((await client.revoke(tokens.refresh_token)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await client.userinfo(tokens.access_token)).status).toBe(401);
  });

  it("both processes served the flow: nginx really spread it", () => {
    const served = proxied.servers.map((server) => pathsServedBy(server.output()));
    for (const paths of served) {
      expect(paths.some((path) => path.startsWith("/oauth/"))).toBe(true);
      expect(paths.some((path) => path.startsWith("/xrpc/"))).toBe(true);
    }
    // The screen and the token endpoint were each answered by both at some point in the two flows.
    const both = (prefix: string) => served.every((paths) => paths.some((path) => path.startsWith(prefix)));
    expect(both("/oauth/authorize") || both("/oauth/token")).toBe(true);
  });
});
