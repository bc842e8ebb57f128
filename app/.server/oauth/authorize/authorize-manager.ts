import { AtriumError } from "../../errors/atrium-error.ts";
import { englishText } from "../../i18n/translate.ts";
import { OAuthError } from "../errors/oauth-error.ts";
import type { ClientManager } from "../client/client-manager.ts";
import type { OAuthClient } from "../client/client-metadata.ts";
import { REQUEST_URI_PREFIX } from "../request/par-manager.ts";
import { returnAddressOf, wayBackOf, type RequestStore, type ReturnAddress, type StoredAuthorizationRequest } from "../request/request-store.ts";
import { randomToken, sha256Base64url } from "../../util/crypto.ts";
import { HOUR } from "../../util/time.ts";

/** Why an authorization request cannot be shown or answered; the stable codes of AuthorizationPageError. */
export type AuthorizationPageErrorCode = "request_invalid" | "request_unsupported" | "request_expired" | "request_answered" | "client_unreachable";

/** Which page explains it: the key of its title and message in the catalogue (errors:authorize.<page>, docs/decisions/0019). */
export type AuthorizationPage = "notPushed" | "expired" | "noClientId" | "otherClient" | "unreachable" | "answered" | "unsupported" | "noRequestUri" | "otherBrowser";

/**
 * A failure on the authorization screen that must not be sent to the
 * client's redirect_uri (the request, and so the redirect target, is not
 * trustworthy): the person sees a page with its title and message instead,
 * in their language; the error's own title and message are the catalogue's English.
 */
export class AuthorizationPageError extends AtriumError {
  constructor(code: AuthorizationPageErrorCode, page: AuthorizationPage, values: Record<string, string> = {}, status = 400) {
    const titleKey = `errors:authorize.${page}.title` as const;
    const messageKey = `errors:authorize.${page}.message` as const;
    super(code, englishText(messageKey, values), { status, title: englishText(titleKey), titleKey, messageKey, messageValues: values });
  }
}

/**
 * A request that can no longer be answered (it expired, or was answered already) but whose app is known: the
 * browser goes back to the app with `access_denied` (docs/decisions/0020) instead of a dead end. `location` is
 * built only from what that very request stored at PAR (its validated redirect_uri, state and response_mode), and
 * carries no code. `automatic`: this browser was shown the request, so it is sent there at once; any other gets a
 * page naming `host` with a button to `location` (docs/decisions/0022).
 */
export class AuthorizationReturnError extends AuthorizationPageError {
  readonly host: string;

  constructor(
    status: ReturnStatus,
    readonly location: string,
    readonly automatic: boolean,
  ) {
    const host = appHostOf(location);
    super(RETURN_CODES[status], pageOf(status, automatic), { host });
    this.host = host;
  }
}

/** Why a request goes back to its app unanswered: it expired, it was answered, or it was opened with another client_id. */
export type ReturnStatus = "expired" | "answered" | "otherClient";

const RETURN_CODES = { expired: "request_expired", answered: "request_answered", otherClient: "request_invalid" } as const;

/** What the app reads in error_description (RFC 6749 §4.1.2.1: "Human-readable ASCII text", for its developers). */
const RETURN_DESCRIPTIONS: Record<ReturnStatus, string> = {
  expired: "This authorization request expired before it was answered",
  answered: "This authorization request was already answered",
  otherClient: "This authorization request was opened with another client_id",
};

/** The page a browser that is not sent back at once reads: the other-client page names the app's host itself. */
function pageOf(status: ReturnStatus, automatic: boolean): AuthorizationPage {
  if (status === "otherClient") return "otherClient";
  return automatic ? status : "otherBrowser";
}

/** Whether `browser` is the one a request was last shown to (undefined: a browser with nothing to recognise it by). */
function isShownTo(shownTo: string | null, browser: string | undefined): boolean {
  return browser !== undefined && shownTo === browser;
}

/**
 * What names the app a redirect URI goes to: its host (with a port), or, for a native app's private-use scheme
 * (RFC 8252 §7.1, "com.example.app:/callback"), which has none, that scheme.
 */
function appHostOf(location: string): string {
  const url = new URL(location);
  return url.host || url.protocol.slice(0, -1);
}

export type PendingAuthorization = { request: StoredAuthorizationRequest; client: OAuthClient; requestUri: string };

/** Errors sent back to the client through its redirect (RFC 6749 §4.1.2.1, OIDC Core §3.1.2.6). */
export type RedirectErrorCode = "access_denied" | "login_required" | "consent_required" | "account_selection_required" | "server_error";

/** The longest a request_uri may be kept alive by showing the screen. */
const MAX_REQUEST_LIFETIME = HOUR;

export class AuthorizeManager {
  constructor(
    private readonly issuer: string,
    private readonly clients: ClientManager,
    private readonly requests: RequestStore,
    private readonly options: { requestUriLifetimeMs: number; codeLifetimeMs: number; now?: () => number },
  ) {}

  /**
   * Loads the pending request behind a request_uri, for the screen, and records that it was shown to `browser` (a MAC
   * of its per-browser cookie; undefined: nothing to record).
   */
  async load(clientId: string | null, requestUri: string | null, browser: string | undefined): Promise<PendingAuthorization> {
    if (!requestUri || !requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > 512) {
      throw new AuthorizationPageError("request_invalid", "notPushed");
    }
    const now = this.now();
    const found = await this.requests.find(sha256Base64url(requestUri), now);
    if (!found) {
      // Never issued, or gone for longer than the grace period: nothing says where the app is.
      throw new AuthorizationPageError("request_expired", "expired");
    }
    // RFC 9126 §4: the authorization request carries "client_id REQUIRED" beside the request_uri.
    if (!clientId) throw new AuthorizationPageError("request_invalid", "noClientId");
    if (found.status !== "active") {
      // RFC 9700 §4.11.2: "The authorization server SHOULD only automatically redirect the user agent if it trusts the
      // redirection URI. If the URI is not trusted, the authorization server MAY inform the user and rely on the user to
      // make the correct decision." Anyone may publish metadata naming any redirect URI, so only the browser this
      // request was shown to goes back unasked; for any other the link would be a redirector (docs/decisions/0022).
      // The client_id of the link does not matter here: the way back is the pushing app's, kept from PAR.
      throw this.returnToApp(found.status, found.returnAddress, isShownTo(found.shownTo, browser));
    }
    const { request } = found;
    // It must be the client that pushed the request, or one app could show the screen of another's request.
    if (clientId !== request.clientId) throw await this.endForAnotherClient(request, browser);
    let client: OAuthClient;
    try {
      client = await this.clients.getClient(request.clientId);
    } catch (error) {
      const detail = error instanceof OAuthError ? error.description : "no details";
      throw new AuthorizationPageError("client_unreachable", "unreachable", { detail }, 502);
    }
    // Showing the screen keeps the request alive while the person reads it, and gives it a way back for this browser.
    const until = Math.min(now + this.options.requestUriLifetimeMs, request.createdAt + MAX_REQUEST_LIFETIME);
    await this.requests.show(request.idHash, { now, until, browser, wayBack: wayBackOf(request.parameters) });
    return { request, client, requestUri };
  }

  /**
   * The languages a pending request asked the screen to use (its ui_locales, OIDC Core §3.1.2.1), for choosing the
   * screen's language before the page itself loads the request; nothing for an unknown, spent or expired request_uri.
   * A read only: it neither extends the request nor fetches the client.
   */
  async requestedLocales(requestUri: string | null): Promise<string[] | undefined> {
    if (!requestUri || !requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > 512) return undefined;
    const found = await this.requests.find(sha256Base64url(requestUri), this.now());
    return found?.status === "active" ? found.request.parameters.ui_locales?.split(" ") : undefined;
  }

  /**
   * A live request opened with another client_id (a link changed, or mixed up between two apps) is ended, and its way
   * back goes to the app that pushed it, as the reference provider does (docs/decisions/0032): that app learns that
   * this request will not be answered, instead of the person being stuck on a page. RFC 6749 §4.1.2.1 forbids
   * redirecting "to the invalid redirection URI" when "the client identifier is missing or invalid"; the way back is
   * not the link's app's but the pushing app's redirect_uri, validated at PAR. Which browser goes there unasked is
   * decided as for any ended request (RFC 9700 §4.11.2, docs/decisions/0022): only the one the screen was shown to.
   * The store recorded that browser; reading it back after the request ended costs a second read, on this rare path
   * only. Several opens at once: one ends it, every one of them answers the same way.
   */
  private async endForAnotherClient(request: StoredAuthorizationRequest, browser: string | undefined): Promise<AuthorizationReturnError> {
    const now = this.now();
    await this.requests.consume(request.idHash, now);
    const ended = await this.requests.find(request.idHash, now);
    const shown = ended !== undefined && ended.status !== "active" && isShownTo(ended.shownTo, browser);
    return this.returnToApp("otherClient", returnAddressOf(request.parameters), shown);
  }

  /**
   * The person allowed the request: issue a single-use code (RFC 6749 §4.1.2) for `scope`, the request's own or less
   * (RFC 6749 §3.3: the server may grant less than requested, and the token response's `scope` says what).
   */
  async approve(pending: PendingAuthorization, accountDid: string, scope = pending.request.parameters.scope): Promise<string> {
    const { request } = pending;
    const code = randomToken("cod");
    const now = this.now();
    const issued = await this.requests.exchangeForCode(request.idHash, now, {
      codeHash: sha256Base64url(code),
      clientId: request.clientId,
      accountDid,
      redirectUri: request.parameters.redirect_uri,
      scope,
      codeChallenge: request.parameters.code_challenge,
      dpopJkt: request.dpopJkt,
      clientKey: request.clientKey,
      createdAt: now,
      expiresAt: now + this.options.codeLifetimeMs,
    });
    if (!issued) throw this.alreadyUsed(request);
    return this.redirectUrl(returnAddressOf(request.parameters), { code });
  }

  /** The person denied, or the request cannot proceed without a screen: tell the client. */
  async reject(pending: PendingAuthorization, error: RedirectErrorCode, description: string): Promise<string> {
    if (!(await this.requests.consume(pending.request.idHash, this.now()))) throw this.alreadyUsed(pending.request);
    return this.redirectUrl(returnAddressOf(pending.request.parameters), { error, error_description: description });
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /**
   * Answered in the meantime (another tab, a second click) or expired while the screen was open: back to the app. This
   * browser has just been shown the request (it answered it), so it goes back at once.
   */
  private alreadyUsed(request: StoredAuthorizationRequest): AuthorizationReturnError {
    const expired = request.expiresAt <= this.now();
    return this.returnToApp(expired ? "expired" : "answered", returnAddressOf(request.parameters), true);
  }

  /**
   * RFC 6749 §4.1.2.1: the app learns that this request will not be answered (`access_denied`), with its `state`,
   * so that it can start again; the person lands back in the app rather than on a dead end.
   */
  private returnToApp(status: ReturnStatus, address: ReturnAddress, automatic: boolean): AuthorizationReturnError {
    return new AuthorizationReturnError(status, this.redirectUrl(address, { error: "access_denied", error_description: RETURN_DESCRIPTIONS[status] }), automatic);
  }

  /**
   * The redirect back to the client with `state` and `iss` (RFC 9207), in the
   * query or the fragment as the client asked.
   */
  private redirectUrl(address: ReturnAddress, values: Record<string, string>): string {
    const url = new URL(address.redirectUri);
    const params = new URLSearchParams({ ...values, state: address.state, iss: this.issuer });
    if (address.responseMode === "fragment") {
      url.hash = params.toString();
    } else {
      for (const [key, value] of params) url.searchParams.append(key, value);
    }
    return url.href;
  }
}
