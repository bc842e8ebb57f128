import type { Config } from "../config.ts";
import { serviceEndpointOf } from "../identity/did-document.ts";
import type { DidResolver } from "../identity/did-resolver.ts";
import type { Upstream, UpstreamClient } from "./upstream-client.ts";
import { invalidRequest } from "./xrpc-error.ts";

/**
 * Which service a proxied call goes to, and where that service is (atproto XRPC, "Service Proxying":
 * https://atproto.com/specs/xrpc; docs/decisions/0048).
 */

/** A service as atproto-proxy names it: `<did>#<id>`. */
export type ProxyTarget = { service: string; did: string; id: string };

const CREATE_REPORT = "com.atproto.moderation.createReport";

/**
 * The atproto-proxy header's service; without one, the reference PDS's defaults: the report service for
 * createReport, the app view for app.bsky.* and chat.bsky.*; undefined for anything else (not implemented here).
 */
export function proxyTargetOf(config: Config, nsid: string, header: string | null): ProxyTarget | undefined {
  const named = header?.trim();
  if (named) return parseServiceRef(named);
  if (nsid === CREATE_REPORT) return parseServiceRef(config.proxy.reportService);
  if (nsid.startsWith("app.bsky.") || nsid.startsWith("chat.bsky.")) return parseServiceRef(config.appview);
  return undefined;
}

/** `<did>#<id>`; the reference's refusals (no DID, no id, two `#`, spaces) in one form. */
function parseServiceRef(value: string): ProxyTarget {
  const match = /^(did:[a-z]+:[^#\s]+)#([a-zA-Z0-9_-]+)$/.exec(value);
  if (!match) throw invalidRequest("atproto-proxy must be of the form <did>#<service>, e.g. did:web:api.bsky.app#bsky_appview");
  return { service: value, did: match[1]!, id: match[2]! };
}

/**
 * Where each service is: the URL the operator set for it, or the endpoint its DID document names for `#<id>`,
 * resolved through the server's one DID resolver (identity/did-resolver.ts: the hardened fetch, a bounded cache).
 * A DID that does not resolve, a document without the service, or an endpoint the upstream client may not call is a
 * 400 InvalidRequest, as the reference answers, before anything is signed or sent.
 */
export class ServiceDirectory {
  private readonly pinned: Map<string, URL>;

  constructor(
    pinned: Record<string, string>,
    private readonly dids: DidResolver,
    private readonly client: UpstreamClient,
  ) {
    this.pinned = new Map(Object.entries(pinned).map(([service, url]) => [service, new URL(url)]));
  }

  async upstreamOf(target: ProxyTarget): Promise<Upstream> {
    const pinned = this.pinned.get(target.service);
    if (pinned) return { service: target.service, url: pinned, operatorSet: true };
    let document;
    try {
      document = await this.dids.resolve(target.did);
    } catch (error) {
      throw invalidRequest(`Could not resolve the service ${target.service}: ${(error as Error).message}`);
    }
    const endpoint = serviceEndpointOf(document, target.id);
    if (endpoint === undefined) throw invalidRequest(`The DID document of ${target.did} names no service #${target.id}`);
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw invalidRequest(`The endpoint of ${target.service} is not a URL: ${JSON.stringify(endpoint.slice(0, 200))}`);
    }
    const refused = this.client.refusedEndpoint(url);
    if (refused) throw invalidRequest(`The endpoint of ${target.service} (${url.origin}) ${refused}`);
    return { service: target.service, url, operatorSet: false };
  }
}
