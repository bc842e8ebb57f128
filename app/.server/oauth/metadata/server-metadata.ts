import { LANGUAGES } from "../../../i18n/languages.ts";
import type { Config } from "../../config.ts";

/** docs/architecture.md, "The contract": exactly these scope tokens; `include` joins only with a permission-set resolver. */
export const SUPPORTED_SCOPES = [
  "atproto",
  "repo",
  "rpc",
  "blob",
  "account",
  "identity",
  "transition:generic",
  "transition:email",
  "transition:chat.bsky",
] as const;

/** `include` is advertised only when a permission-set resolver is configured (docs/architecture.md, "Scopes and the data server"). */
export function supportedScopes(config: Config): string[] {
  const { directory, network } = config.permissionSets;
  return directory || network ? [...SUPPORTED_SCOPES, "include"] : [...SUPPORTED_SCOPES];
}

/** The RFC 8414 members that name the JSON endpoints; each is the path of one entry of the route table (http/api-routes.ts). */
export type EndpointName = "token_endpoint" | "pushed_authorization_request_endpoint" | "revocation_endpoint" | "userinfo_endpoint" | "jwks_uri";

/** The sign-in and consent screen: the one endpoint that is a page, served by Remix rather than the route table. */
export const AUTHORIZATION_ENDPOINT_PATH = "/oauth/authorize";

/** The prompt values PAR takes: OIDC Core's four, and "create" while people may sign up (docs/decisions/0052). */
export function promptValues(config: Pick<Config, "signUp">): string[] {
  const values = ["none", "login", "consent", "select_account"];
  return config.signUp.enabled ? [...values, "create"] : values;
}

/** Where a person manages the apps they allowed (the account area's Connected apps): the metadata names it. */
export const APPS_PAGE_PATH = "/account/apps";

/**
 * One app's page, a stable address an app can link to (docs/decisions/0053): the management page, then the app's
 * client_id as one path segment (encodeURIComponent).
 */
export function appPagePath(clientId: string): string {
  return `${APPS_PAGE_PATH}/${encodeURIComponent(clientId)}`;
}

/**
 * The client_id an app's page address names, read from the raw path: the router's own parameter turns an encoded "/"
 * back into "%2F" (so that a segment stays one), which a client_id holding both cannot survive. Undefined when the
 * path is not an app's page or its encoding is broken.
 */
export function clientIdOfAppPage(pathname: string): string | undefined {
  const prefix = `${APPS_PAGE_PATH}/`;
  if (!pathname.startsWith(prefix)) return undefined;
  const segment = pathname.slice(prefix.length);
  if (segment === "" || segment.includes("/")) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** RFC 8414 authorization server metadata, with the atproto profile's fields; `endpoints` come from the route table. */
export function authorizationServerMetadata(config: Config, endpoints: Partial<Record<EndpointName, string>>) {
  const at = (name: EndpointName) => {
    const path = endpoints[name];
    if (!path) throw new Error(`The route table serves no ${name}`);
    return `${config.issuer}${path}`;
  };
  return {
    issuer: config.issuer,
    authorization_endpoint: `${config.issuer}${AUTHORIZATION_ENDPOINT_PATH}`,
    token_endpoint: at("token_endpoint"),
    pushed_authorization_request_endpoint: at("pushed_authorization_request_endpoint"),
    require_pushed_authorization_requests: true,
    revocation_endpoint: at("revocation_endpoint"),
    userinfo_endpoint: at("userinfo_endpoint"),
    jwks_uri: at("jwks_uri"),
    scopes_supported: supportedScopes(config),
    response_types_supported: ["code"],
    response_modes_supported: ["query", "fragment"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none", "private_key_jwt"],
    token_endpoint_auth_signing_alg_values_supported: ["ES256"],
    // RFC 7009 §2.1: a confidential client authenticates at revocation as at the token endpoint.
    revocation_endpoint_auth_methods_supported: ["none", "private_key_jwt"],
    revocation_endpoint_auth_signing_alg_values_supported: ["ES256"],
    dpop_signing_alg_values_supported: ["ES256"],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
    subject_types_supported: ["public"],
    request_parameter_supported: false,
    request_uri_parameter_supported: true,
    require_request_uri_registration: true,
    // Initiating User Registration via OpenID Connect 1.0 §4.1: "create" is listed when sign-up is open here
    // (docs/decisions/0052); PAR refuses it otherwise.
    prompt_values_supported: promptValues(config),
    // OIDC Discovery §3: the languages the screens ship, each with its full catalogue (docs/decisions/0019).
    ui_locales_supported: [...LANGUAGES],
    // draft-emelia-oauth-user-authorization-mgmt-uri-00 (October 2026): "a URI through which the user may manage the
    // authorized clients that have access to their account". And the name of the draft it replaced
    // (draft-emelia-oauth-authorization-management-uri-00, expired), which clients written against it read
    // (docs/decisions/0053). An app's own page is this URI, a slash, and its encoded client_id.
    user_authorization_management_uri: `${config.issuer}${APPS_PAGE_PATH}`,
    authorization_management_uri: `${config.issuer}${APPS_PAGE_PATH}`,
  };
}

/** RFC 9728 protected resource metadata of the data server. */
export function protectedResourceMetadata(config: Config) {
  return {
    resource: config.issuer,
    authorization_servers: [config.issuer],
    bearer_methods_supported: ["header"],
    scopes_supported: supportedScopes(config),
    resource_documentation: "https://atproto.com",
  };
}
