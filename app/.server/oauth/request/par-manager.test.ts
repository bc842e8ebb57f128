import { beforeEach, describe, expect, it } from "vitest";
import { memoryClientManager, MemoryRequestStore } from "../../../../tests/helpers/memory-stores.ts";
import { AtriumError } from "../../errors/atrium-error.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import { MINUTE } from "../../util/time.ts";
import { ParManager, REQUEST_URI_PREFIX, parParametersSchema, type ParInput } from "./par-manager.ts";

/**
 * Pushed authorization requests (RFC 9126 §2) and the authorization
 * parameters they carry (RFC 6749 §4.1.1, RFC 7636 §4.3, OAuth 2.1,
 * RFC 9449 §10), on in-memory stores and a clock the test moves.
 */

const ISSUER = "https://pds.example.com";
const loopbackClient = (...redirects: string[]) => {
  const query = new URLSearchParams({ scope: "atproto transition:generic" });
  for (const redirect of redirects) query.append("redirect_uri", redirect);
  return `http://localhost?${query}`;
};
const ONE_REDIRECT = loopbackClient("http://127.0.0.1/callback");
const TWO_REDIRECTS = loopbackClient("http://127.0.0.1/callback", "http://127.0.0.1/other");
const DPOP_JKT = "proof-key-thumbprint";
const PENDING = 3;

let clock: number;
const now = () => clock;
let requests: MemoryRequestStore;
let par: ParManager;

beforeEach(() => {
  clock = Date.UTC(2026, 10, 1, 12, 0, 0);
  requests = new MemoryRequestStore();
  const clients = memoryClientManager(ISSUER, now);
  par = new ParManager(clients, requests, { requestUriLifetimeMs: 5 * MINUTE, pendingPerAddress: PENDING, now });
});

function input(overrides: Partial<ParInput> = {}): ParInput {
  return parParametersSchema.parse({
    client_id: ONE_REDIRECT,
    response_type: "code",
    redirect_uri: "http://127.0.0.1:5173/callback",
    scope: "atproto",
    state: "the-state",
    code_challenge: "c".repeat(43),
    code_challenge_method: "S256",
    ...overrides,
  });
}

async function refusal(overrides: Partial<ParInput>, dpopJkt = DPOP_JKT): Promise<{ code: string; description: string }> {
  try {
    await par.push(input(overrides), dpopJkt);
  } catch (error) {
    if (error instanceof AtriumError) return { code: error.code, description: error.message };
    throw error;
  }
  throw new Error("expected the request to be refused");
}

describe("ParManager.push", () => {
  it("refuses a push from an address whose requests waiting for an answer are at the bound: 429 with Retry-After (docs/decisions/0022)", async () => {
    for (let i = 0; i < PENDING; i++) await par.push(input(), DPOP_JKT, "192.0.2.1");
    clock += MINUTE;
    const refused = await par.push(input(), DPOP_JKT, "192.0.2.1").catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AtriumError);
    expect(refused).toMatchObject({ status: 429, code: "temporarily_unavailable", retryAfterSeconds: 4 * 60 });
    expect(requests.rows.size).toBe(PENDING);
    // Another address is not held up; an answered request no longer waits; an expired one neither.
    await par.push(input(), DPOP_JKT, "192.0.2.2");
    const first = [...requests.rows.keys()][0]!;
    expect(await requests.consume(first, clock)).toBe(true);
    await par.push(input(), DPOP_JKT, "192.0.2.1");
    clock += 4 * MINUTE;
    await par.push(input(), DPOP_JKT, "192.0.2.1");
  });

  it("stores only the hash of the request_uri, with the proof key, and answers its lifetime", async () => {
    const result = await par.push(input(), DPOP_JKT);
    expect(result.request_uri.startsWith(REQUEST_URI_PREFIX)).toBe(true);
    expect(result.expires_in).toBe(300);
    const stored = requests.rows.get(sha256Base64url(result.request_uri))!;
    expect(stored.dpopJkt).toBe(DPOP_JKT);
    expect(stored.expiresAt).toBe(clock + 5 * MINUTE);
    expect(stored.parameters).toMatchObject({ redirect_uri: "http://127.0.0.1:5173/callback", scope: "atproto", response_mode: "query" });
    expect([...requests.rows.keys()]).not.toContain(result.request_uri);
  });

  it("takes the one declared redirect_uri when none is sent, and requires one when several are declared", async () => {
    const result = await par.push(input({ redirect_uri: undefined }), DPOP_JKT);
    expect(requests.rows.get(sha256Base64url(result.request_uri))!.parameters.redirect_uri).toBe("http://127.0.0.1/callback");
    expect(await refusal({ client_id: TWO_REDIRECTS, redirect_uri: undefined })).toMatchObject({ code: "invalid_request", description: expect.stringContaining("redirect_uri is required") });
  });

  it("accepts a loopback redirect on any port (RFC 8252 §7.3) but not another path, host, query or fragment", async () => {
    await expect(par.push(input({ redirect_uri: "http://127.0.0.1:61234/callback" }), DPOP_JKT)).resolves.toBeDefined();
    for (const redirect of [
      "http://127.0.0.1:5173/elsewhere",
      "http://[::1]:5173/callback",
      "http://127.0.0.1:5173/callback?x=1",
      "http://127.0.0.1:5173/callback#frag",
      "https://127.0.0.1:5173/callback",
      "http://user:pass@127.0.0.1:5173/callback",
    ]) {
      expect(await refusal({ redirect_uri: redirect }), redirect).toMatchObject({ code: "invalid_request" });
    }
  });

  it('refuses anything but response_type "code" with unsupported_response_type', async () => {
    for (const responseType of [undefined, "token", "code id_token"]) {
      expect((await refusal({ response_type: responseType })).code).toBe("unsupported_response_type");
    }
  });

  it("refuses the plain PKCE method and a missing method (S256 only)", async () => {
    expect((await refusal({ code_challenge_method: "plain" })).description).toContain("S256");
    expect((await refusal({ code_challenge_method: undefined })).description).toContain("S256");
  });

  it("refuses a request_uri or a request object sent to the PAR endpoint (RFC 9126 §2.1)", async () => {
    expect((await refusal({ request_uri: `${REQUEST_URI_PREFIX}x` })).description).toContain("request_uri must not be sent");
    expect((await refusal({ request: "eyJ..." })).description).toContain("not supported");
  });

  it("refuses a dpop_jkt that is not the proof's key, and accepts the matching one", async () => {
    expect((await refusal({ dpop_jkt: "another-key" })).description).toContain("dpop_jkt");
    await expect(par.push(input({ dpop_jkt: DPOP_JKT }), DPOP_JKT)).resolves.toBeDefined();
  });

  it("refuses a scope without atproto, or with a value the client did not declare, with invalid_scope", async () => {
    expect((await refusal({ scope: "transition:generic" })).code).toBe("invalid_scope");
    expect((await refusal({ scope: undefined })).code).toBe("invalid_scope");
    expect((await refusal({ scope: "atproto transition:chat.bsky" })).code).toBe("invalid_scope");
  });

  it("refuses an unknown response_mode and prompt, and keeps the known ones", async () => {
    expect((await refusal({ response_mode: "form_post" })).description).toContain("response_mode");
    expect((await refusal({ prompt: "everything" })).description).toContain("prompt");
    const result = await par.push(input({ response_mode: "fragment", prompt: "consent", login_hint: "  alice.test  " }), DPOP_JKT);
    expect(requests.rows.get(sha256Base64url(result.request_uri))!.parameters).toMatchObject({
      response_mode: "fragment",
      prompt: "consent",
      login_hint: "alice.test",
    });
  });

  it("keeps ui_locales (OIDC Core §3.1.2.1) as space-separated tags, and refuses what is not a list of language tags", async () => {
    const result = await par.push(input({ ui_locales: "  de-CH   fr en " }), DPOP_JKT);
    expect(requests.rows.get(sha256Base64url(result.request_uri))!.parameters.ui_locales).toBe("de-CH fr en");
    const none = await par.push(input({}), DPOP_JKT);
    expect(requests.rows.get(sha256Base64url(none.request_uri))!.parameters.ui_locales).toBeUndefined();
    // A tag this server does not ship is no error: the screen falls back to the next choice.
    await expect(par.push(input({ ui_locales: "tlh" }), DPOP_JKT)).resolves.toBeDefined();
    expect(parParametersSchema.safeParse({ client_id: "x", state: "s", code_challenge: "c".repeat(43), ui_locales: "fr,de" }).success).toBe(false);
    expect(parParametersSchema.safeParse({ client_id: "x", state: "s", code_challenge: "c".repeat(43), ui_locales: "<script>" }).success).toBe(false);
  });

  it("stores nothing when the request is refused", async () => {
    await refusal({ code_challenge_method: "plain" });
    await refusal({ scope: "transition:generic" });
    expect(requests.rows.size).toBe(0);
  });
});

describe("parParametersSchema", () => {
  it("requires state and a 43-character base64url code_challenge", () => {
    expect(parParametersSchema.safeParse({ client_id: "x", code_challenge: "c".repeat(43) }).success).toBe(false);
    expect(parParametersSchema.safeParse({ client_id: "x", state: "s", code_challenge: "c".repeat(42) }).success).toBe(false);
    expect(parParametersSchema.safeParse({ client_id: "x", state: "s", code_challenge: `${"c".repeat(42)}=` }).success).toBe(false);
    expect(parParametersSchema.safeParse({ client_id: "x", state: "s", code_challenge: "c".repeat(43) }).success).toBe(true);
  });
});
