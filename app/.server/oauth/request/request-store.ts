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
  prompt?: "none" | "login" | "consent" | "select_account";
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
 * What is kept of a request after it expired or was answered, for a while (docs/decisions/0020): enough to send the
 * browser back to the app with an error, nothing more. `redirectUri` is the one validated at PAR for this request.
 */
export type ReturnAddress = { clientId: string; redirectUri: string; state: string; responseMode: "query" | "fragment" };

/** A request found by its request_uri: live and unanswered, or only its way back (expired, or answered already). */
export type FoundRequest = { status: "active"; request: StoredAuthorizationRequest } | { status: "expired" | "answered"; returnAddress: ReturnAddress };

export function returnAddressOf(parameters: Pick<AuthorizationParameters, "client_id" | "redirect_uri" | "state" | "response_mode">): ReturnAddress {
  return { clientId: parameters.client_id, redirectUri: parameters.redirect_uri, state: parameters.state, responseMode: parameters.response_mode };
}

export interface RequestStore {
  create(request: StoredAuthorizationRequest): Promise<void>;
  /**
   * The request behind a request_uri hash. Once expired or answered it is only its return address, kept until
   * `retentionMs` after its expiry (docs/decisions/0020); after that the row is deleted and absent (docs/architecture.md,
   * "Lazy expiry").
   */
  find(idHash: string, now: number): Promise<FoundRequest | undefined>;
  /** Pushes the expiry out to `until` (never earlier than it was). */
  extend(idHash: string, until: number): Promise<void>;
  /** Marks the request used; true only for the one caller that won (docs/architecture.md, "Tokens and codes"). */
  consume(idHash: string, now: number): Promise<boolean>;
  /**
   * The request was approved: marks it used and stores its code, in one
   * atomic step. False, and no code, when another answer consumed it first.
   */
  exchangeForCode(idHash: string, now: number, code: NewAuthorizationCode): Promise<boolean>;
}
