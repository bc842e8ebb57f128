import { z } from "zod";
import { InvalidRequestError, TooManyRequestsError, UnsupportedResponseTypeError } from "../errors/oauth-error.ts";
import { assertDistinctDpopKey, clientKeyOf, type ClientCredentials, type ClientManager } from "../client/client-manager.ts";
import { redirectUriMatches, type OAuthClient } from "../client/client-metadata.ts";
import type { PermissionSetResolver } from "../scopes/permission-sets/permission-set-resolver.ts";
import { resolveRequestedScope } from "../scopes/requested-scope.ts";
import { randomToken, sha256Base64url } from "../../util/crypto.ts";
import { SECOND, secondsUntil } from "../../util/time.ts";
import type { AuthorizationParameters, RequestStore, StoredAuthorizationRequest } from "./request-store.ts";

/** RFC 9126 §2.2: the request_uri is a URN; only its hash is stored. */
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";

const optionalText = (max: number) => z.string().max(max).optional();

/** PAR form parameters (RFC 9126 §2.1, RFC 6749 §4.1.1, RFC 7636 §4.3). */
export const parParametersSchema = z.object({
  client_id: z.string().min(1, "client_id is required").max(2048),
  response_type: z.string().max(64).optional(),
  redirect_uri: optionalText(2048),
  scope: optionalText(4096),
  state: z.string({ required_error: "state is required" }).min(1, "state is required").max(2048),
  code_challenge: z
    .string({ required_error: "code_challenge is required (PKCE)" })
    .regex(/^[A-Za-z0-9_-]{43}$/, "code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)"),
  code_challenge_method: optionalText(16),
  response_mode: optionalText(16),
  login_hint: optionalText(512),
  prompt: optionalText(64),
  // OIDC Core §3.1.2.1: "End-User's preferred languages and scripts for the user interface, represented as a
  // space-separated list of BCP47 [RFC5646] language tag values, ordered by preference". Tags this server does not
  // ship are no error (the screen falls back); tags that are not tags at all are.
  ui_locales: z
    .string()
    .max(256)
    .transform((value) => value.trim().split(/\s+/).filter(Boolean).join(" "))
    .refine((value) => value.split(" ").every((tag) => /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(tag)), "ui_locales must be space-separated BCP 47 language tags")
    .optional(),
  dpop_jkt: optionalText(128),
  nonce: optionalText(512),
  request_uri: optionalText(4096),
  request: optionalText(65536),
  client_assertion_type: optionalText(256),
  client_assertion: optionalText(8192),
});

export type ParInput = z.infer<typeof parParametersSchema>;
export type ParResult = { request_uri: string; expires_in: number };

export class ParManager {
  constructor(
    private readonly clients: ClientManager,
    private readonly requests: RequestStore,
    private readonly options: {
      requestUriLifetimeMs: number;
      /** How many requests one address may have waiting for an answer at once (docs/decisions/0022). */
      pendingPerAddress: number;
      permissionSets?: PermissionSetResolver;
      now?: () => number;
      /** People may sign up here: prompt=create is taken (docs/decisions/0052). */
      signUp?: boolean;
    },
  ) {}

  /** `from`: the limit bucket of the address that pushed (docs/decisions/0006); undefined when none is known. */
  async push(input: ParInput, dpopJkt: string, from?: string): Promise<ParResult> {
    const client = await this.clients.getClient(input.client_id);
    const credentials: ClientCredentials = {
      client_assertion: input.client_assertion,
      client_assertion_type: input.client_assertion_type,
    };
    const auth = await this.clients.authenticate(client, credentials);
    assertDistinctDpopKey(auth, dpopJkt);
    const parameters = validateAuthorizationParameters(input, client, dpopJkt, this.options.signUp ?? false);
    const { scope, permissionSets } = await resolveRequestedScope(input.scope, client.scopes, this.options.permissionSets);
    parameters.scope = scope;
    if (permissionSets.length) parameters.permission_sets = permissionSets;

    const now = this.options.now?.() ?? Date.now();
    const requestUri = REQUEST_URI_PREFIX + randomToken("req");
    const stored: StoredAuthorizationRequest = {
      idHash: sha256Base64url(requestUri),
      clientId: client.clientId,
      parameters,
      dpopJkt,
      clientKey: clientKeyOf(auth),
      createdAt: now,
      expiresAt: now + this.options.requestUriLifetimeMs,
    };
    const max = this.options.pendingPerAddress;
    const created = await this.requests.create(stored, from === undefined ? undefined : { from, max });
    if (!created.created) {
      // RFC 9126 §2.3: "429: If the number of requests from a client during a particular time period exceeds the
      // number the authorization server allows, the authorization server responds with an HTTP 429 (Too Many
      // Requests) status code." Without this bound one address could keep any number of requests (loopback clients
      // need no registration) stored at once (docs/decisions/0022).
      const wait = Math.max(1, Math.ceil((created.retryAt - now) / SECOND));
      throw new TooManyRequestsError(`Too many authorization requests from this address are waiting for an answer (at most ${max}); try again in ${wait} seconds`, wait);
    }
    return { request_uri: requestUri, expires_in: secondsUntil(stored.expiresAt, now) };
  }
}

/** Checks everything but the scope, which needs the (asynchronous) permission-set resolver. */
function validateAuthorizationParameters(input: ParInput, client: OAuthClient, dpopJkt: string, signUp: boolean): AuthorizationParameters {
  // RFC 9126 §2.1: "The request_uri authorization request parameter MUST NOT be provided in this case"
  if (input.request_uri !== undefined) throw new InvalidRequestError("request_uri must not be sent to the PAR endpoint");
  if (input.request !== undefined) throw new InvalidRequestError("Request objects (JAR) are not supported");
  // OAuth 2.1: only the authorization code flow; no implicit flow.
  if (input.response_type !== "code") throw new UnsupportedResponseTypeError('response_type must be "code"');
  // RFC 7636 §4.2: S256 is the only method supported here (plain is refused; OAuth 2.1 §4.1.1 and the atproto profile).
  if (input.code_challenge_method !== "S256") throw new InvalidRequestError('code_challenge_method must be "S256"');
  // RFC 9449 §10: if dpop_jkt is sent it must match the proof's key.
  if (input.dpop_jkt !== undefined && input.dpop_jkt !== dpopJkt) throw new InvalidRequestError("dpop_jkt does not match the DPoP proof key");

  const redirectUri = chooseRedirectUri(input.redirect_uri, client);
  const responseMode = input.response_mode ?? "query";
  if (responseMode !== "query" && responseMode !== "fragment") throw new InvalidRequestError('response_mode must be "query" or "fragment"');

  return {
    client_id: client.clientId,
    redirect_uri: redirectUri,
    scope: "",
    state: input.state,
    code_challenge: input.code_challenge,
    code_challenge_method: "S256",
    response_mode: responseMode,
    login_hint: input.login_hint?.trim() || undefined,
    prompt: parsePrompt(input.prompt, signUp),
    ui_locales: input.ui_locales || undefined,
  };
}

function chooseRedirectUri(requested: string | undefined, client: OAuthClient): string {
  if (requested === undefined) {
    // OAuth 2.1 §4.1.1: redirect_uri may be omitted only when exactly one is registered.
    if (client.redirectUris.length === 1) return client.redirectUris[0]!;
    throw new InvalidRequestError("redirect_uri is required: the client declares more than one");
  }
  if (!client.redirectUris.some((declared) => redirectUriMatches(declared, requested))) {
    throw new InvalidRequestError("redirect_uri is not one the client declared in its metadata");
  }
  return requested;
}

function parsePrompt(prompt: string | undefined, signUp: boolean): AuthorizationParameters["prompt"] {
  if (prompt === undefined || prompt === "") return undefined;
  if (prompt === "none" || prompt === "login" || prompt === "consent" || prompt === "select_account") return prompt;
  // Initiating User Registration via OpenID Connect 1.0 §4.1: "If the OpenID Provider receives a prompt value that it
  // does not support (not declared in the prompt_values_supported metadata field) the OP SHOULD respond with an HTTP
  // 400 (Bad Request) status code and an error value of invalid_request."
  if (prompt === "create" && signUp) return prompt;
  throw new InvalidRequestError(`prompt must be one of "none", "login", "consent", "select_account"${signUp ? ' or "create"' : ' (sign-up is closed here: "create" is not taken)'}`);
}
