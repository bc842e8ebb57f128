import { Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_PASSWORD, basicAuthorization } from "../helpers/admin.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";

/**
 * The admin password attacked as attackers do (docs/decisions/0051): guesses at once through a real nginx in front of
 * two server processes on one database, each guess forging X-Forwarded-For and spelling the user name its own way,
 * first from one address, then spread over a hundred real addresses (connections from 127.0.x.y: nginx sees each as
 * its own peer and names it, the only hop Atrium believes with ATRIUM_TRUST_PROXY=1). Every guess is counted before
 * it is checked, on the address's counter and the server's: exactly as many are checked as the counters allow,
 * whatever the spread, and the right password waits with the rest. pdsadmin's own refusal is pdsadmin.test.ts's.
 * The servers' clock stands still: a wait of a second must not run out while a slow machine answers the burst.
 */

const PER_ADDRESS = 10;
const GLOBAL = 100;
const USER_SPELLINGS = ["admin", "ADMIN", "Admin", "admin ", " admin"];

let proxied: ProxiedServers;
let clock: TestClock;
const agents = new Map<string, Agent>();

/** A connection from `address` (a loopback address of this machine), as a client there would open it. */
function from(address: string): Agent {
  let agent = agents.get(address);
  if (!agent) agents.set(address, (agent = new Agent({ localAddress: address })));
  return agent;
}

/** One admin call through nginx from `address`, claiming in X-Forwarded-For to come from `forged`. */
async function attempt(address: string, authorization: string, forged: string): Promise<{ status: number; retryAfter: string | null; challenge: string | null }> {
  const response = await fetch(`${proxied.issuer}/xrpc/com.atproto.admin.getAccountInfo?did=did:plc:nobodyhere2345678901234`, {
    headers: { Authorization: authorization, "X-Forwarded-For": forged },
    dispatcher: from(address),
  });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: response.headers.get("retry-after"), challenge: response.headers.get("www-authenticate") };
}

const guess = (i: number) => basicAuthorization(`guess number ${i}`, USER_SPELLINGS[i % USER_SPELLINGS.length]);
const count = (answers: Array<{ status: number }>, status: number) => answers.filter((answer) => answer.status === status).length;

beforeAll(async () => {
  clock = testClock();
  clock.freeze();
  proxied = await startBehindNginx(2, { ...clock.env, ATRIUM_TRUST_PROXY: "1", ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "1000000" });
});
afterAll(async () => {
  for (const agent of agents.values()) await agent.close();
  await proxied?.stop();
  clock?.remove();
});

describe("guessing the admin password through nginx, over two processes", () => {
  it(`${4 * PER_ADDRESS} guesses at once from one address, each forging another: ${PER_ADDRESS} checked, the rest wait; the right password waits there, not elsewhere`, async () => {
    const answers = await Promise.all(Array.from({ length: 4 * PER_ADDRESS }, (_, i) => attempt("127.0.1.1", guess(i), `203.0.113.${i}`)));
    expect(count(answers, 401)).toBe(PER_ADDRESS);
    expect(count(answers, 429)).toBe(3 * PER_ADDRESS);
    for (const answer of answers.filter((one) => one.status === 401)) expect(answer.challenge).toBe('Basic realm="admin", charset="UTF-8"');
    for (const answer of answers.filter((one) => one.status === 429)) expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    expect((await attempt("127.0.1.1", basicAuthorization(), "198.51.100.1")).status).toBe(429);
    // The right password from elsewhere: through (the DID names nobody: 400 NotFound, past the credential).
    expect((await attempt("127.0.1.2", basicAuthorization(), "198.51.100.2")).status).toBe(400);
  });

  it(`guesses spread over ${GLOBAL} addresses at once: the server's counter stops them at ${GLOBAL} in all, and then the right password waits too`, async () => {
    const answers = await Promise.all(Array.from({ length: GLOBAL }, (_, i) => attempt(`127.0.2.${i + 1}`, guess(i), `192.0.2.${i}`)));
    // The first test's ten wrong guesses count here too.
    expect(count(answers, 401)).toBe(GLOBAL - PER_ADDRESS);
    expect(count(answers, 429)).toBe(PER_ADDRESS);
    for (const address of ["127.0.3.1", "127.0.3.2"]) expect((await attempt(address, basicAuthorization(), "198.51.100.3")).status).toBe(429);
  });
});
