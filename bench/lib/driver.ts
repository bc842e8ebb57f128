import { createDpopProof, createPkce, DpopClient, generateDpopKey, readResult, type HttpResult, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { ConsentBrowser } from "./consent.ts";
import { createAccount, type BenchServer } from "./server.ts";

/**
 * One atproto loopback client with its DPoP key, signed in to the consent
 * screen as the benchmark account: everything the cases need that is not
 * itself measured (PAR + approval to get a code, tokens, proofs).
 */

export const REDIRECT_URI = "http://127.0.0.1/callback";
export const SCOPE = "atproto transition:generic";
export const CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: REDIRECT_URI, scope: SCOPE })}`;
const ACCOUNT = { handle: "bench.test", email: "bench@example.com", password: "bench horse battery staple" };

export type Code = { code: string; verifier: string };

export class Driver {
  private constructor(
    readonly server: BenchServer,
    readonly client: DpopClient,
    readonly did: string,
    private readonly browser: ConsentBrowser,
  ) {}

  static async create(server: BenchServer): Promise<Driver> {
    const { did } = await createAccount(server, ACCOUNT);
    const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
    const browser = new ConsentBrowser(server.issuer, { identifier: ACCOUNT.handle, password: ACCOUNT.password });
    const driver = new Driver(server, client, did, browser);
    await driver.obtainCode(); // signs in once and learns the server's DPoP nonce
    return driver;
  }

  get issuer(): string {
    return this.server.issuer;
  }

  url(path: string): string {
    return `${this.server.issuer}${path}`;
  }

  /** A DPoP proof for one request, with the last nonce the server sent. */
  proof(method: string, url: string, accessToken?: string): Promise<string> {
    return createDpopProof(this.client.key, { method, url, nonce: this.client.nonce, accessToken });
  }

  /** Remembers the nonce of a response; true when the response asks for a (new) nonce. */
  observe(result: HttpResult): boolean {
    this.client.nonce = result.headers.get("DPoP-Nonce") ?? this.client.nonce;
    const body = result.body as { error?: string } | undefined;
    return body?.error === "use_dpop_nonce" || /error="use_dpop_nonce"/.test(result.headers.get("WWW-Authenticate") ?? "");
  }

  /** PAR form fields of a fresh request (new PKCE pair and state). */
  parForm(challenge = createPkce().challenge): Record<string, string> {
    return {
      client_id: CLIENT_ID,
      response_type: "code",
      redirect_uri: REDIRECT_URI,
      scope: SCOPE,
      state: `bench-${Math.random().toString(36).slice(2)}`,
      code_challenge: challenge,
      code_challenge_method: "S256",
    };
  }

  /** PAR + one-POST approval on the consent screen (browser session kept): a fresh authorization code. */
  async obtainCode(): Promise<Code> {
    const pkce = createPkce();
    const { client_id: _clientId, response_type: _responseType, ...params } = this.parForm(pkce.challenge);
    const par = await this.client.pushAuthorizationRequest(params);
    if (par.status !== 201) throw new Error(`PAR failed (${par.status}): ${JSON.stringify(par.body)}`);
    const location = await this.browser.approve(this.client.authorizeUrl(par.body.request_uri));
    const code = location.searchParams.get("code");
    if (!code) throw new Error(`no code in redirect ${location.href}`);
    return { code, verifier: pkce.verifier };
  }

  /** com.atproto.server.createSession's body for the benchmark account (docs/decisions/0047). */
  get passwordSignIn(): string {
    return JSON.stringify({ identifier: ACCOUNT.handle, password: ACCOUNT.password });
  }

  /** A password session of the benchmark account: its access and refresh JWTs. */
  async passwordSession(): Promise<{ accessJwt: string; refreshJwt: string }> {
    const result = await send(this.url("/xrpc/com.atproto.server.createSession"), { method: "POST", headers: { "Content-Type": "application/json" }, body: this.passwordSignIn });
    if (result.status !== 200) throw new Error(`createSession failed (${result.status}): ${JSON.stringify(result.body)}`);
    return result.body as { accessJwt: string; refreshJwt: string };
  }

  async obtainTokens(): Promise<TokenSet> {
    const { code, verifier } = await this.obtainCode();
    const exchanged = await this.client.exchangeCode(code, verifier, REDIRECT_URI);
    if (exchanged.status !== 200) throw new Error(`code exchange failed (${exchanged.status}): ${JSON.stringify(exchanged.body)}`);
    return exchanged.body;
  }
}

/** The measured request itself: one fetch, body read to the end. */
export async function send(url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<HttpResult> {
  return readResult(await fetch(url, init));
}
