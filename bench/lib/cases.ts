import { createPkce, type HttpResult, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { REDIRECT_URI, send, type Code, type Driver } from "./driver.ts";

/**
 * A benchmark case: `prepare` does everything that is not measured (signing
 * DPoP proofs with the current nonce, getting authorization codes) ahead of
 * time; `send` is the one request that is timed; `accept` checks the answer
 * and carries state forward (the next refresh token) outside the timer.
 * A lane is one sequence of requests: refresh needs its own token chain per
 * concurrent worker.
 */
export type Prepared = { proof: string; body?: string; code?: Code };

export type BenchCase = {
  name: string;
  /** Requests sent before anything is measured (steady state: the server's hot path compiled). */
  warmup: number;
  /** Measured sequential requests, split into batches (see measure.ts). */
  iterations: number;
  /** Upper bound on prepared requests for the throughput run (codes are costly to make). */
  maxThroughputCount: number;
  /** Called once before the throughput run with the number of concurrent lanes. */
  setupLanes(lanes: number): Promise<void>;
  prepare(count: number): Promise<Prepared[]>;
  send(item: Prepared, lane: number): Promise<HttpResult>;
  accept(result: HttpResult, lane: number): void;
};

function expectStatus(name: string, result: HttpResult, status: number): void {
  if (result.status !== status) throw new Error(`${name}: expected ${status}, got ${result.status}: ${JSON.stringify(result.body).slice(0, 300)}`);
}

async function proofs(driver: Driver, count: number, method: string, url: string, accessToken?: string): Promise<Prepared[]> {
  const items: Prepared[] = [];
  for (let i = 0; i < count; i++) items.push({ proof: await driver.proof(method, url, accessToken) });
  return items;
}

const FORM = "application/x-www-form-urlencoded";

export function parCase(driver: Driver): BenchCase {
  const url = driver.url("/oauth/par");
  return {
    name: "par",
    warmup: 2000,
    iterations: 1500,
    maxThroughputCount: 6000,
    setupLanes: async () => {},
    async prepare(count) {
      const items = await proofs(driver, count, "POST", url);
      for (const item of items) item.body = new URLSearchParams(driver.parForm(createPkce().challenge)).toString();
      return items;
    },
    send: (item) => send(url, { method: "POST", headers: { "Content-Type": FORM, DPoP: item.proof }, body: item.body }),
    accept: (result) => expectStatus("par", result, 201),
  };
}

export function codeExchangeCase(driver: Driver): BenchCase {
  const url = driver.url("/oauth/token");
  return {
    name: "code-exchange",
    // Each code costs a PAR and an approval to make, so fewer of them.
    warmup: 150,
    iterations: 300,
    maxThroughputCount: 200,
    setupLanes: async () => {},
    async prepare(count) {
      // Made 8 at a time: each is a PAR and an approval, which on PostgreSQL wait for durable commits.
      const codes: Code[] = [];
      for (let made = 0; made < count; made += 8) {
        codes.push(...(await Promise.all(Array.from({ length: Math.min(8, count - made) }, () => driver.obtainCode()))));
      }
      // Proofs last, so they are as fresh as possible when sent.
      const items = await proofs(driver, count, "POST", url);
      items.forEach((item, index) => {
        const { code, verifier } = codes[index]!;
        item.body = new URLSearchParams({
          grant_type: "authorization_code",
          client_id: driver.client.clientId,
          code,
          code_verifier: verifier,
          redirect_uri: REDIRECT_URI,
        }).toString();
      });
      return items;
    },
    send: (item) => send(url, { method: "POST", headers: { "Content-Type": FORM, DPoP: item.proof }, body: item.body }),
    accept: (result) => expectStatus("code-exchange", result, 200),
  };
}

export async function refreshCase(driver: Driver): Promise<BenchCase> {
  const url = driver.url("/oauth/token");
  // One refresh-token chain per lane, each from its own grant.
  const chains: string[] = [(await driver.obtainTokens()).refresh_token];
  return {
    name: "refresh",
    warmup: 2000,
    iterations: 1500,
    maxThroughputCount: 6000,
    async setupLanes(lanes) {
      while (chains.length < lanes) chains.push((await driver.obtainTokens()).refresh_token);
    },
    prepare: (count) => proofs(driver, count, "POST", url),
    send(item, lane) {
      const body = new URLSearchParams({ grant_type: "refresh_token", client_id: driver.client.clientId, refresh_token: chains[lane]! }).toString();
      return send(url, { method: "POST", headers: { "Content-Type": FORM, DPoP: item.proof }, body });
    },
    accept(result, lane) {
      expectStatus("refresh", result, 200);
      chains[lane] = (result.body as TokenSet).refresh_token;
    },
  };
}

/** A GET (or JSON POST) to a protected resource with `Authorization: DPoP <token>` and a proof carrying ath. */
function resourceCase(
  driver: Driver,
  name: string,
  accessToken: string,
  path: string,
  options: { method?: "GET" | "POST"; json?: (index: number) => unknown } = {},
): BenchCase {
  const url = driver.url(path);
  const method = options.method ?? "GET";
  let made = 0;
  return {
    name,
    warmup: 2000,
    iterations: 1500,
    maxThroughputCount: 6000,
    setupLanes: async () => {},
    async prepare(count) {
      const items = await proofs(driver, count, method, url, accessToken);
      if (options.json) for (const item of items) item.body = JSON.stringify(options.json(made++));
      return items;
    },
    send(item) {
      const headers: Record<string, string> = { Authorization: `DPoP ${accessToken}`, DPoP: item.proof };
      if (item.body !== undefined) headers["Content-Type"] = "application/json";
      return send(url, { method, headers, body: item.body });
    },
    accept: (result) => expectStatus(name, result, 200),
  };
}

export function userinfoCase(driver: Driver, accessToken: string): BenchCase {
  return resourceCase(driver, "userinfo", accessToken, "/oauth/userinfo");
}

export function getSessionCase(driver: Driver, accessToken: string): BenchCase {
  return resourceCase(driver, "getSession", accessToken, "/xrpc/com.atproto.server.getSession");
}

/**
 * A call Atrium proxies to the app view (docs/decisions/0048), ATRIUM_APPVIEW set to the benchmark's own app view
 * (bench/lib/appview.ts): its DID document is resolved once and cached; each call is signed and sent. Not a method
 * whose answer takes in the caller's newest records (read-after-write), so that the figure is the proxy's own cost.
 */
export function proxyCase(driver: Driver, accessToken: string): BenchCase {
  return resourceCase(driver, "proxy", accessToken, `/xrpc/app.bsky.graph.getFollows?actor=${encodeURIComponent(driver.did)}`);
}

export function createRecordCase(driver: Driver, accessToken: string): BenchCase {
  return resourceCase(driver, "createRecord", accessToken, "/xrpc/com.atproto.repo.createRecord", {
    method: "POST",
    json: (index) => ({
      repo: driver.did,
      collection: "app.bsky.feed.post",
      record: { $type: "app.bsky.feed.post", text: `benchmark post ${index}`, createdAt: new Date().toISOString() },
    }),
  });
}

/**
 * Password sessions (docs/decisions/0047): no DPoP proof to prepare. createSession checks the account's password at
 * the production scrypt cost (a hundred milliseconds of CPU or so), so it runs fewer requests: its batches stop at
 * BATCH_SECONDS anyway (bench/lib/measure.ts).
 */
const NO_PROOF = async (count: number): Promise<Prepared[]> => Array.from({ length: count }, () => ({ proof: "" }));

export function createSessionCase(driver: Driver): BenchCase {
  const url = driver.url("/xrpc/com.atproto.server.createSession");
  return {
    name: "createSession",
    warmup: 40,
    iterations: 100,
    maxThroughputCount: 200,
    setupLanes: async () => {},
    prepare: NO_PROOF,
    send: () => send(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: driver.passwordSignIn }),
    accept: (result) => expectStatus("createSession", result, 200),
  };
}

export async function refreshSessionCase(driver: Driver): Promise<BenchCase> {
  const url = driver.url("/xrpc/com.atproto.server.refreshSession");
  // One refresh-token chain per lane, each from its own sign-in.
  const chains: string[] = [(await driver.passwordSession()).refreshJwt];
  return {
    name: "refreshSession",
    warmup: 2000,
    iterations: 1500,
    maxThroughputCount: 6000,
    async setupLanes(lanes) {
      while (chains.length < lanes) chains.push((await driver.passwordSession()).refreshJwt);
    },
    prepare: NO_PROOF,
    send: (_item, lane) => send(url, { method: "POST", headers: { Authorization: `Bearer ${chains[lane]!}` } }),
    accept(result, lane) {
      expectStatus("refreshSession", result, 200);
      chains[lane] = (result.body as { refreshJwt: string }).refreshJwt;
    },
  };
}

export async function passwordGetSessionCase(driver: Driver): Promise<BenchCase> {
  const url = driver.url("/xrpc/com.atproto.server.getSession");
  const { accessJwt } = await driver.passwordSession();
  return {
    name: "getSession-password",
    warmup: 2000,
    iterations: 1500,
    maxThroughputCount: 6000,
    setupLanes: async () => {},
    prepare: NO_PROOF,
    send: () => send(url, { method: "GET", headers: { Authorization: `Bearer ${accessJwt}` } }),
    accept: (result) => expectStatus("getSession-password", result, 200),
  };
}
