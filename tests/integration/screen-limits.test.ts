import { readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { visibleText } from "../helpers/consent.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { fetchFrom, type SourceFetch } from "../helpers/raw-http.ts";

/**
 * The screens have a per-address limit too (ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE):
 * anonymous screen requests write (GET /account/passkey-auth stores a
 * WebAuthn challenge per request), and without a limit one address could
 * make a server store thousands a second. Attacked in parallel with forged
 * X-Forwarded-For, through nginx over two processes on one database.
 */

/** 3: every hit is decided by the shared database (below half the limit nothing is kept in memory), so the count is exact across processes. */
const SCREEN_LIMIT = 3;
const ATTACKS = 20;

describe("the screens' per-address request limit, behind nginx over two processes", () => {
  let proxied: ProxiedServers;
  beforeAll(async () => {
    proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "1", ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: String(SCREEN_LIMIT) });
  });
  afterAll(() => proxied?.stop());

  const get = (client: SourceFetch, pathname: string, forwardedFor = "203.0.113.1") =>
    client(`${proxied.issuer}${pathname}`, { headers: { Accept: "application/json", "X-Forwarded-For": forwardedFor }, redirect: "manual" });

  it(`${ATTACKS} parallel GETs of /account/passkey-auth: the limit is served, the rest get 429 JSON the passkey screens can show`, async () => {
    const attacker = fetchFrom("127.0.0.2");
    const responses = await Promise.all(Array.from({ length: ATTACKS }, (_, i) => get(attacker, "/account/passkey-auth", `198.51.100.${i + 1}`)));
    const answers = await Promise.all(responses.map(async (response) => ({ response, body: (await response.json()) as Record<string, unknown> })));
    const served = answers.filter(({ response }) => response.status === 200);
    const refused = answers.filter(({ response }) => response.status === 429);
    expect(served).toHaveLength(SCREEN_LIMIT);
    expect(refused).toHaveLength(ATTACKS - SCREEN_LIMIT);
    for (const { body } of served) expect(body.challenge).toEqual(expect.any(String));
    for (const { response, body } of refused) {
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      // The shape app/components/passkey/* read: error_description is shown as it is.
      expect(body).toEqual({ error: "temporarily_unavailable", error_description: expect.stringMatching(/^Too many requests from this address\. Wait \d+ seconds? and try again\.$/) });
    }
  });

  it("over the limit, the other passkey endpoints answer JSON and pages answer a readable page", async () => {
    const attacker = fetchFrom("127.0.0.2");
    for (const pathname of ["/oauth/passkey-auth?client_id=x&request_uri=y", "/account/passkey-register"]) {
      const response = await get(attacker, pathname, "203.0.113.50");
      expect(response.status, pathname).toBe(429);
      expect(await response.json(), pathname).toMatchObject({ error: "temporarily_unavailable" });
    }
    const page = await get(attacker, "/account", "203.0.113.51");
    expect(page.status).toBe(429);
    expect(Number(page.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(visibleText(await page.text())).toMatch(/Too many requests .* Wait \d+ seconds? and try again\./);
  });

  it("static files do not count: a browser loading every asset still gets its pages", async () => {
    const visitor = fetchFrom("127.0.0.3");
    const assets = ["/favicon.svg", ...readdirSync(path.join(PROJECT_ROOT, "build", "client", "assets")).map((name) => `/assets/${name}`)];
    const load = async (asset: string) => {
      const response = await get(visitor, asset);
      await response.arrayBuffer();
      return response.status;
    };
    const loaded = await Promise.all([...assets, ...assets].map(load));
    expect(loaded.every((status) => status === 200)).toBe(true);
    const pages = [];
    for (let i = 0; i < SCREEN_LIMIT; i++) pages.push((await get(visitor, "/account")).status);
    expect(pages).toEqual(Array(SCREEN_LIMIT).fill(200));
    expect((await get(visitor, "/account")).status).toBe(429);
  });
});
