/**
 * `npm run demo`: the whole OAuth flow against a running Atrium server, as an
 * atproto loopback client (a native app on this machine, no registration):
 *
 *   discover metadata → PAR (PKCE S256 + DPoP) → you sign in in a browser →
 *   redirect to a local callback → code exchange → userinfo → refresh.
 *
 * Start the server first (`npm start`), create an account (`npm run account -- create …`),
 * then: npm run demo -- [--server http://localhost:3000] [--handle alice.test]
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createPkce, DpopClient, generateDpopKey, type ServerMetadata, type TokenSet } from "./lib/dpop-client.ts";

const USAGE = `Usage: npm run demo -- [options]
  --server <url>      Atrium server (default: $ATRIUM_URL or http://localhost:3000)
  --handle <handle>   login_hint: pre-fills the sign-in form
  --scope <scope>     requested scope (default: "atproto transition:generic")
  --timeout <seconds> how long to wait for the browser (default: 300)
  --show-tokens       print tokens in full instead of masked
  --help              show this help`;

class DemoError extends Error {}

const mask = (token: string, show: boolean) => (show ? token : `${token.slice(0, 12)}…`);
const json = (value: unknown) => JSON.stringify(value, null, 2).replace(/^/gm, "   ");
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      server: { type: "string" },
      handle: { type: "string" },
      scope: { type: "string", default: "atproto transition:generic" },
      timeout: { type: "string", default: "300" },
      "show-tokens": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return console.log(USAGE);
  const showTokens = values["show-tokens"];
  const timeoutSeconds = Number(values.timeout);
  if (!(timeoutSeconds > 0)) throw new DemoError(`--timeout must be a positive number of seconds\n\n${USAGE}`);
  let server: string;
  try {
    server = new URL(values.server ?? process.env.ATRIUM_URL ?? "http://localhost:3000").origin;
  } catch {
    throw new DemoError(`Not a URL: ${values.server ?? process.env.ATRIUM_URL}`);
  }

  console.log(`Atrium OAuth demo: an atproto loopback client talking to ${server}\n`);

  // 1. Discovery (RFC 8414).
  let metadata: ServerMetadata;
  try {
    const response = await fetch(`${server}/.well-known/oauth-authorization-server`);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    metadata = (await response.json()) as ServerMetadata;
  } catch (error) {
    throw new DemoError(`Could not reach an Atrium server at ${server} (${(error as Error).message}).\nStart the server first: npm start`);
  }
  console.log(`1. Discovered the authorization server. issuer: ${metadata.issuer}`);

  // 2. A local HTTP server receives the redirect; its port is chosen now (RFC 8252 §7.3).
  let onCallback: (params: URLSearchParams) => void = () => {};
  const callback = new Promise<URLSearchParams>((resolve) => (onCallback = resolve));
  let pageFor: (params: URLSearchParams) => string = () => "";
  const http = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/callback") return void res.writeHead(404).end();
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" }).end(pageFor(url.searchParams));
    onCallback(url.searchParams);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const redirectUri = `http://127.0.0.1:${(http.address() as AddressInfo).port}/callback`;
  // The client_id declares the redirect without a port; the server ignores the port for loopback.
  const clientId = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope: values.scope })}`;
  console.log(`2. Listening for the redirect on ${redirectUri}\n   client_id: ${clientId}`);

  try {
    // 3. Pushed authorization request with PKCE and a fresh DPoP key.
    const client = new DpopClient(metadata.issuer, await generateDpopKey(), clientId);
    const pkce = createPkce();
    const state = randomBytes(16).toString("base64url");
    const par = await client.pushAuthorizationRequest({
      redirect_uri: redirectUri,
      scope: values.scope,
      state,
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
      ...(values.handle ? { login_hint: values.handle } : {}),
    });
    if (par.status !== 201) throw new DemoError(`PAR failed (HTTP ${par.status}):\n${json(par.body)}`);
    console.log(`3. Pushed the authorization request (PKCE S256, DPoP-bound). request_uri expires in ${par.body.expires_in} s`);
    console.log(`\nOpen this URL in your browser and sign in:\n\n   ${client.authorizeUrl(par.body.request_uri)}\n`);
    console.log(`Waiting for the redirect (timeout ${timeoutSeconds} s)…`);

    // 4. The redirect: check state and iss (RFC 9207) before trusting anything else in it.
    const problem = (p: URLSearchParams): string | undefined => {
      if (p.get("state") !== state) return "state does not match the one we sent";
      if (p.get("iss") !== metadata.issuer) return `iss is ${p.get("iss")}, expected ${metadata.issuer}`;
      if (p.get("error") === "access_denied") return `Access denied: ${p.get("error_description") ?? "the sign-in was declined"}`;
      if (p.get("error")) return `${p.get("error")}: ${p.get("error_description") ?? "(no description)"}`;
      if (!p.get("code")) return "the redirect carries no code";
    };
    pageFor = (p) => `<!doctype html><title>Atrium demo</title><h1>${escapeHtml(problem(p) ?? "Signed in")}</h1><p>You can close this tab.</p>`;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DemoError(`No redirect within ${timeoutSeconds} s; giving up.`)), timeoutSeconds * 1000);
    });
    const params = await Promise.race([callback, timeout]).finally(() => clearTimeout(timer));
    const issue = problem(params);
    if (issue) throw new DemoError(issue.startsWith("Access denied") ? issue : `Bad redirect: ${issue}`);
    const code = params.get("code")!;
    console.log(`4. Got the redirect; state and iss match. code: ${mask(code, showTokens)}`);

    // 5. Code → DPoP-bound tokens.
    const tokens = await client.exchangeCode(code, pkce.verifier, redirectUri);
    if (tokens.status !== 200) throw new DemoError(`Token exchange failed (HTTP ${tokens.status}):\n${json(tokens.body)}`);
    const shown = (t: TokenSet) => ({ ...t, access_token: mask(t.access_token, showTokens), refresh_token: mask(t.refresh_token, showTokens) });
    console.log(`5. Exchanged the code for tokens:\n${json(shown(tokens.body))}`);

    // 6. A protected resource, with the DPoP-bound access token.
    const me = await client.userinfo(tokens.body.access_token);
    if (me.status !== 200) throw new DemoError(`userinfo failed (HTTP ${me.status}):\n${json(me.body)}`);
    console.log(`6. userinfo:\n${json(me.body)}`);

    // 7. Refresh once: the refresh token rotates on every use.
    const refreshed = await client.refresh(tokens.body.refresh_token);
    if (refreshed.status !== 200) throw new DemoError(`Refresh failed (HTTP ${refreshed.status}):\n${json(refreshed.body)}`);
    const rotated = refreshed.body.refresh_token !== tokens.body.refresh_token;
    console.log(`7. Refreshed: the refresh token ${rotated ? "rotated" : "did NOT rotate"}.`);
    console.log(`   old: ${mask(tokens.body.refresh_token, showTokens)}\n   new: ${mask(refreshed.body.refresh_token, showTokens)}`);
    console.log(`   new access token: ${mask(refreshed.body.access_token, showTokens)} (expires in ${refreshed.body.expires_in} s)`);
    console.log("\nDone.");
  } finally {
    http.closeAllConnections();
    http.close();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    if (error instanceof DemoError) console.error(`\n${error.message}`);
    else if ((error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) console.error(`${(error as Error).message}\n\n${USAGE}`);
    else console.error(error);
    process.exit(1);
  },
);
