/**
 * pdsadmin's commands in `npm run account` (docs/decisions/0051), against a running server's database on each engine:
 * takedown and untakedown from the command's own process, which the server's firehose and sync see at once (it polls
 * the event log), reset-password, request-crawl to a relay standing in on loopback, and their refusals. `list` over
 * 10,000 accounts is operator-page.test.ts's.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyPassword } from "../../app/.server/accounts/password.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { isCommandRefusal, runAccountCommand } from "../../scripts/lib/account-commands.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { signedIn } from "../helpers/account.ts";
import { rowOf } from "../helpers/databases.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startRelayStandIn, type RelayStandIn } from "../helpers/relay-stand-in.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { callAnonymous, expectXrpcError } from "../helpers/xrpc.ts";
import type { Frame } from "../helpers/subscribe-repos-lexicon.ts";

const run = promisify(execFile);

let server: TestServer;
let relay: RelayStandIn;
let alice: { did: string; handle: string };
let firehose: FirehoseConsumer;

/** Runs a command in this process, as the tool runs it; its printed lines, parsed. */
async function command(...argv: string[]): Promise<Array<Record<string, unknown>>> {
  const lines: string[] = [];
  await runAccountCommand(argv, { env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer, ATRIUM_TEST_FAST_PASSWORD_HASHES: "1" }, print: (line) => lines.push(line) });
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function refusal(...argv: string[]): Promise<string> {
  try {
    await command(...argv);
  } catch (error) {
    if (isCommandRefusal(error)) return error.message;
    throw error;
  }
  throw new Error(`${argv.join(" ")} was not refused`);
}

beforeAll(async () => {
  relay = await startRelayStandIn();
  server = await startTestServer();
  alice = await createAlice(server);
  firehose = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`);
  await firehose.opened;
});
afterAll(async () => {
  firehose?.close();
  await server?.stop();
  await relay?.stop();
});

type Message = Extract<Frame, { kind: "message" }>;
/** Alice's #account events (her account's creation sent the first). */
const accountEvents = () => firehose.frames.filter((frame): frame is Message => frame.kind === "message" && frame.type === "#account" && frame.body.did === alice.did).map((frame) => frame.body);
let created = 0;

describe("npm run account: pdsadmin's commands", () => {
  it("takedown, from its own process: the running server's firehose and sync know at once", async () => {
    await firehose.until(() => accountEvents().length > 0);
    created = accountEvents().length;
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/account.ts", "takedown", "--handle", "ALICE.test", "--reason", "spam"], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer },
    });
    expect(JSON.parse(stdout)).toEqual({ did: alice.did, handle: ALICE.handle, takendown: true, ref: "spam" });
    await firehose.until(() => accountEvents().length > created);
    expect(accountEvents()[created]).toMatchObject({ active: false, status: "takendown" });
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } }), 400, "RepoTakendown");
  });

  it("untakedown: active again", async () => {
    expect(await command("untakedown", "--did", alice.did)).toEqual([{ did: alice.did, handle: ALICE.handle, takendown: false }]);
    await firehose.until(() => accountEvents().length > created + 1);
    expect(accountEvents()[created + 1]).toMatchObject({ active: true });
    expect((await callAnonymous(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } })).status).toBe(200);
  });

  it("reset-password: prints a new password, which signs in; the browsers signed in before are signed out", async () => {
    const before = await signedIn(server, ALICE.handle, ALICE.password);
    const [printed] = await command("reset-password", "--email", ALICE.email);
    expect(printed).toMatchObject({ did: alice.did, handle: ALICE.handle, password: expect.stringMatching(/^[A-Za-z0-9]{24}$/) });
    const row = await rowOf<{ passwordHash: string }>(server.database(), sql`SELECT "passwordHash" FROM "Account" WHERE "did" = ${alice.did}`);
    expect(await verifyPassword(printed!.password as string, row!.passwordHash)).toBe(true);
    expect(await rowOf(server.database(), sql`SELECT 1 AS "one" FROM "BrowserSession" WHERE "accountDid" = ${alice.did}`)).toBeUndefined();
    expect(before.jar.get("atrium_session")).toBeDefined();
    expect((await signedIn(server, ALICE.handle, printed!.password as string)).jar.get("atrium_session")).toBeDefined();
  });

  it("request-crawl: the relays named (or ATRIUM_CRAWLERS) are asked to crawl this server", async () => {
    expect(await command("request-crawl", "--relays", relay.url)).toEqual([{ relay: relay.url, hostname: new URL(server.issuer).host, requested: true }]);
    await relay.received(1);
    expect(relay.requests[0]).toEqual({ path: "POST /xrpc/com.atproto.sync.requestCrawl", contentType: "application/json", body: { hostname: new URL(server.issuer).host } });
    expect(await refusal("request-crawl")).toContain("ATRIUM_CRAWLERS");
    relay.answerWith(500);
    await expect(command("request-crawl", "--relays", relay.url)).rejects.toThrow(/HTTP 500/);
  });

  it("refuses an account that is not there, and a command without one", async () => {
    expect(await refusal("takedown", "--handle", "nobody.test")).toContain("no account matches nobody.test");
    expect(await refusal("reset-password")).toContain("--handle, --email or --did");
  });
});
