import type { ClientKeyBinding } from "../client/client-manager.ts";
import type { NewAuthorizationCode } from "../token/grant-store.ts";
import type { PermissionSetGrant } from "../scopes/requested-scope.ts";

/** The validated parameters of a pushed authorization request. */
export type AuthorizationParameters = {
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string;
  code_challenge: string;
  code_challenge_method: "S256";
  response_mode: "query" | "fragment";
  login_hint?: string;
  prompt?: "none" | "login" | "consent" | "select_account" | "create";
  /** OIDC Core §3.1.2.1: the languages the app asks the screen to use, by preference (space-separated BCP 47 tags). */
  ui_locales?: string;
  /** Permission sets requested with include:, already expanded into `scope`. */
  permission_sets?: PermissionSetGrant[];
};

export type StoredAuthorizationRequest = {
  idHash: string;
  clientId: string;
  parameters: AuthorizationParameters;
  dpopJkt: string;
  /** The key a confidential client authenticated with at PAR (null: a public client). */
  clientKey: ClientKeyBinding | null;
  createdAt: number;
  expiresAt: number;
};

/**
 * What is kept of a request after it expired or was answered, for a while, when its screen was shown
 * (docs/decisions/0020, 0022): enough to send the browser back to the app with an error, nothing more. `redirectUri`
 * is the one validated at PAR for this request.
 */
export type ReturnAddress = { clientId: string; redirectUri: string; state: string; responseMode: "query" | "fragment" };

/**
 * A request found by its request_uri: live and unanswered, or only its way back (expired, or answered already) with
 * `shownTo`, the browser its screen was last shown to (null: none recorded).
 */
export type FoundRequest =
  | { status: "active"; request: StoredAuthorizationRequest }
  | { status: "expired" | "answered"; returnAddress: ReturnAddress; shownTo: string | null };

/**
 * The longest `state` a way back keeps. Apps send a short random value (the atproto client: 22 characters); a request
 * with a longer one gets no way back rather than a row a client could fill with two kilobytes of its own text for a day.
 */
export const WAY_BACK_MAX_STATE = 512;

export function returnAddressOf(parameters: Pick<AuthorizationParameters, "client_id" | "redirect_uri" | "state" | "response_mode">): ReturnAddress {
  return { clientId: parameters.client_id, redirectUri: parameters.redirect_uri, state: parameters.state, responseMode: parameters.response_mode };
}

/** The way back a shown request keeps (docs/decisions/0022); undefined when its state is too long to keep. */
export function wayBackOf(parameters: AuthorizationParameters): ReturnAddress | undefined {
  return parameters.state.length <= WAY_BACK_MAX_STATE ? returnAddressOf(parameters) : undefined;
}

/** The request was shown to a browser (docs/decisions/0022). */
export type Showing = {
  now: number;
  /** The new expiry (never earlier than it was). */
  until: number;
  /** What identifies the browser (a MAC of its per-browser cookie), or undefined when there is none to record. */
  browser: string | undefined;
  wayBack: ReturnAddress | undefined;
};

/** Whether a pushed request was stored, or refused: its address has `max` requests waiting for an answer already. */
export type Created = { created: true } | { created: false; retryAt: number };

/** The address that pushed a request (its limit bucket), and how many of its requests may wait for an answer at once. */
export type PendingBound = { from: string; max: number };

export interface RequestStore {
  /** Stores a pushed request, unless its address has `bound.max` requests waiting already (one atomic step). */
  create(request: StoredAuthorizationRequest, bound?: PendingBound): Promise<Created>;
  /**
   * The request behind a request_uri hash. Once it can no longer be answered its parameters are dropped: a request
   * whose screen was shown is then only its return address, kept until `retentionMs` after its expiry
   * (docs/decisions/0020, 0022); any other is deleted and absent (docs/architecture.md, "Lazy expiry").
   */
  find(idHash: string, now: number): Promise<FoundRequest | undefined>;
  /**
   * The screen was shown: pushes the expiry out, records the browser and keeps the way back. Only a request that can
   * still be answered, with all of its parameters, is touched: one that expired or was answered in the meantime
   * stays as it is (never revived with only its way back).
   */
  show(idHash: string, showing: Showing): Promise<void>;
  /** Marks the request used; true only for the one caller that won (docs/architecture.md, "Tokens and codes"). */
  consume(idHash: string, now: number): Promise<boolean>;
  /**
   * The request was approved: marks it used and stores its code, in one
   * atomic step. False, and no code, when another answer consumed it first.
   */
  exchangeForCode(idHash: string, now: number, code: NewAuthorizationCode): Promise<boolean>;
}
