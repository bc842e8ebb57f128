import { domainToUnicode } from "node:url";
import { isLoopbackClientId, loopbackClient } from "../oauth/client/client-metadata.ts";
import { hasInvisibleCharacters, looksDeceptive, looksLikeItContains } from "../util/confusables.ts";

/**
 * Who is asking, as the consent screen and the connected apps show it (docs/decisions/0018): first what this
 * server verified, then what the app claims about itself, with a caution when the claim looks like an imitation.
 *
 * Verified: a web app's client_id is the https URL its metadata was fetched from, so its host controls that
 * document; a loopback app (client_id http://localhost…) is a program on the person's own computer, recognised
 * only by where it receives the answer (a 127.0.0.1 or [::1] address and port). Claimed: the name and logo in the
 * metadata, which anyone can write.
 */

export type ClaimWarningReason =
  /** The name or address looks like this server's own name or host. */
  | "service-name"
  /** The name or address says "Bluesky" or "official" (a claim of being the official app). */
  | "official"
  /** Look-alike letters: mixed scripts, a whole word of look-alikes, styled letters, or a match only through them. */
  | "lookalike"
  /** The name held bidirectional controls, control characters or invisible format characters. */
  | "hidden-characters";

export type ClaimWarning = { reason: ClaimWarningReason; in: ("name" | "address")[] };

/** What the screens show of an app's identity: plain data, safe to send to the browser. */
export type ClientIdentityView = {
  isLoopback: boolean;
  /** A web app's verified host (the client_id's, with its port); absent for loopback apps. */
  host?: string;
  /** The host in Unicode, when it is an internationalised name (xn--…) that reads differently. */
  hostUnicode?: string;
  /** Loopback apps: where they receive the answer (their only distinguishing mark). */
  redirectUris?: string[];
  /** Self-declared by the app (visible text only: client-metadata.ts removed hidden characters). */
  name?: string;
  logoUri?: string;
  warnings: ClaimWarning[];
};

/** This server, as the rules compare against it. */
export type ServiceIdentity = { serviceName: string; issuer: string };

export type ClaimedClient = {
  clientId: string;
  name?: string;
  logoUri?: string;
  /** The metadata's name held characters that were removed before it was stored (client-metadata.ts). */
  nameHadHiddenCharacters?: boolean;
};

/**
 * Hosts of Bluesky's own apps: there a name saying "Bluesky" is true, so it is not flagged. Anything else that
 * says so is at best a third-party app mentioning Bluesky, and the caution tells the person to look at the address.
 */
const BLUESKY_HOSTS = ["bsky.app", "bsky.social"];

/** Words that claim to be the official app (the review: real phishing names use exactly these). */
const OFFICIAL_TERMS = ["bluesky", "official"];

export function clientIdentity(client: ClaimedClient, service: ServiceIdentity): ClientIdentityView {
  if (isLoopbackClientId(client.clientId)) {
    return {
      isLoopback: true,
      redirectUris: loopbackRedirectUris(client.clientId),
      name: client.name,
      logoUri: client.logoUri,
      warnings: claimWarnings({ name: client.name, nameHadHiddenCharacters: client.nameHadHiddenCharacters }, service),
    };
  }
  let url: URL | undefined;
  try {
    url = new URL(client.clientId);
  } catch {
    url = undefined;
  }
  const host = url?.host ?? client.clientId;
  const unicode = url ? domainToUnicode(url.hostname) : "";
  const hostUnicode = unicode && unicode !== url?.hostname ? unicode : undefined;
  return {
    isLoopback: false,
    host,
    hostUnicode,
    name: client.name,
    logoUri: client.logoUri,
    warnings: claimWarnings({ hostname: url?.hostname, hostUnicode, name: client.name, nameHadHiddenCharacters: client.nameHadHiddenCharacters }, service),
  };
}

/** A loopback client's redirect URIs, from its client_id (http://127.0.0.1/ and http://[::1]/ when it names none). */
function loopbackRedirectUris(clientId: string): string[] | undefined {
  try {
    return loopbackClient(clientId).redirectUris;
  } catch {
    return undefined;
  }
}

type Claims = { hostname?: string; hostUnicode?: string; name?: string; nameHadHiddenCharacters?: boolean };

/**
 * The cautions for an app's name and address (the rules: docs/decisions/0018 and util/confusables.ts):
 * - service-name: the name or address looks like it contains this server's name or host (at least 4 letters), and
 *   the address is not this server's own host or one under it;
 * - official: it looks like it contains "Bluesky" or "official", and the address is not one of Bluesky's own;
 * - lookalike: a word mixes Latin, Cyrillic, Greek, Armenian or Cherokee letters, is entirely made of look-alikes,
 *   uses styled letters, or matches one of the names above or one of Bluesky's hosts only through look-alike letters
 *   or removed diacritics;
 * - hidden-characters: the name held bidi or control characters (removed) or invisible format characters.
 */
export function claimWarnings(claims: Claims, service: ServiceIdentity): ClaimWarning[] {
  const found = new Map<ClaimWarningReason, Set<"name" | "address">>();
  const add = (reason: ClaimWarningReason, where: "name" | "address") => {
    const places = found.get(reason) ?? new Set();
    places.add(where);
    found.set(reason, places);
  };
  const issuerHost = new URL(service.issuer).hostname;
  const hostname = claims.hostname?.toLowerCase();
  const isOwnHost = hostname !== undefined && (hostname === issuerHost || hostname.endsWith(`.${issuerHost}`));
  const isBlueskyHost = hostname !== undefined && BLUESKY_HOSTS.some((host) => hostname === host || hostname.endsWith(`.${host}`));
  const serviceTerms = [...new Set([service.serviceName, issuerHost])];

  const texts: [where: "name" | "address", text: string | undefined][] = [
    ["name", claims.name],
    ["address", claims.hostUnicode ?? hostname],
  ];
  for (const [where, text] of texts) {
    if (!text) continue;
    const check = (terms: string[], reason: ClaimWarningReason) => {
      for (const term of terms) {
        if (!looksLikeItContains(text, term)) continue;
        add(reason, where);
        // Found only through look-alike letters ("B1uesky", "Вluesky"): say that too.
        if (!plainFold(text).includes(plainFold(term))) add("lookalike", where);
      }
    };
    if (!isOwnHost) check(serviceTerms, "service-name");
    if (!isBlueskyHost) check(OFFICIAL_TERMS, "official");
    if (looksDeceptive(text) || imitatesBlueskyHost(text)) add("lookalike", where);
  }
  if (claims.nameHadHiddenCharacters || (claims.name !== undefined && hasInvisibleCharacters(claims.name))) add("hidden-characters", "name");

  const order: ClaimWarningReason[] = ["service-name", "official", "lookalike", "hidden-characters"];
  return order.filter((reason) => found.has(reason)).map((reason) => ({ reason, in: [...found.get(reason)!].sort() }));
}

/**
 * Bluesky's own hosts spelled with look-alike letters (`bşky.app`, `ƅsky.app`, `bѕky.social`): the text reads as one
 * of them only once diacritics are removed and look-alikes mapped. A text that plainly contains one (`web.bsky.app`,
 * or a name mentioning bsky.app) is not an imitation by its letters.
 */
function imitatesBlueskyHost(text: string): boolean {
  return BLUESKY_HOSTS.some((host) => looksLikeItContains(text, host) && !plainFold(text).includes(plainFold(host)));
}

/** Lower case, letters and digits only, nothing mapped: what a text says without look-alike reading. */
function plainFold(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, "");
}
