import net from "node:net";

/**
 * The client address behind reverse proxies (ATRIUM_TRUST_PROXY,
 * docs/decisions/0006-trusted-forwarded-address.md).
 *
 * X-Forwarded-For is a list each proxy appends to (MDN: `<client>,
 * <proxy1>, <proxy2>`); nginx's `$proxy_add_x_forwarded_for` is "the
 * X-Forwarded-For client request header field with the $remote_addr variable
 * appended to it, separated by a comma". Only what our own proxies appended
 * is a fact. RFC 7239 §8.1, of the standard form of the same list: it
 * "cannot be relied upon to be correct, as it may be modified, whether
 * mistakenly or for malicious reasons, by every node on the way to the
 * server, including the client making the request", and with trusted
 * proxies "the chain of IP addresses listed before the request came to the
 * proxy cannot be trusted". So the chain [X-Forwarded-For entries left to
 * right…, socket peer] is read from the right, one trusted proxy at a time,
 * as Express's proxy-addr reads it.
 */

/** Which proxies in front of this server are believed when they name the client. */
export type TrustedProxies =
  | { readonly kind: "none" }
  /** A fixed number of proxies in front of the server: the client is that many places left of the socket peer. */
  | { readonly kind: "hops"; readonly hops: number }
  /** Proxies known by address: walk left while the current address is one of them. */
  | { readonly kind: "addresses"; readonly ranges: readonly string[]; readonly list: net.BlockList };

export const NO_TRUSTED_PROXIES: TrustedProxies = { kind: "none" };

/** More hops than any real deployment has; a larger number is more likely a typo for an address. */
export const MAX_PROXY_HOPS = 10;

const OFF = /^(0|false|off|no)$/i;
const ON = /^(true|on|yes)$/i;

export type ParsedTrust = { ok: true; trusted: TrustedProxies } | { ok: false; message: string };

/**
 * Reads ATRIUM_TRUST_PROXY: off (unset, empty, 0/false/off/no); true/on/yes
 * for one proxy; a whole number of proxies; or a comma-separated list of
 * proxy addresses and CIDR ranges (IPv4 and IPv6).
 */
export function parseTrustedProxies(value: string | undefined): ParsedTrust {
  const text = (value ?? "").trim();
  if (text === "" || OFF.test(text)) return { ok: true, trusted: NO_TRUSTED_PROXIES };
  if (ON.test(text)) return { ok: true, trusted: { kind: "hops", hops: 1 } };
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops === 0) return { ok: true, trusted: NO_TRUSTED_PROXIES };
    if (hops > MAX_PROXY_HOPS) return { ok: false, message: `the number of proxy hops must be at most ${MAX_PROXY_HOPS} (got ${text})` };
    return { ok: true, trusted: { kind: "hops", hops } };
  }
  const list = new net.BlockList();
  const ranges: string[] = [];
  for (const item of text.split(",")) {
    const range = addRange(list, item.trim());
    if (range === undefined) {
      return { ok: false, message: `${JSON.stringify(item.trim())} is not an IP address or CIDR range (use off, true, a number of proxy hops, or a comma-separated list of proxy addresses and ranges such as 10.0.0.0/8, ::1)` };
    }
    ranges.push(range);
  }
  return { ok: true, trusted: { kind: "addresses", ranges, list } };
}

/** Adds "address" or "address/prefix" to the list; the canonical text, or undefined when it is neither. */
function addRange(list: net.BlockList, item: string): string | undefined {
  const slash = item.indexOf("/");
  const address = normalizeAddress(slash === -1 ? item : item.slice(0, slash));
  if (address === undefined) return undefined;
  const family = familyOf(address);
  if (slash === -1) {
    list.addAddress(address, family);
    return address;
  }
  const prefixText = item.slice(slash + 1);
  const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= (family === "ipv4" ? 32 : 128))) return undefined;
  list.addSubnet(address, prefix, family);
  return `${address}/${prefix}`;
}

function familyOf(address: string): "ipv4" | "ipv6" {
  return net.isIPv4(address) ? "ipv4" : "ipv6";
}

const MAPPED_DOTTED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/;
const MAPPED_HEX = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;
const PORT = /^\d{1,5}$/;

/**
 * One X-Forwarded-For entry (or a socket address) as a plain IP address, the
 * form the per-address limits count: trimmed, IPv6 in its canonical text
 * (RFC 5952), IPv4-mapped IPv6 as the IPv4 address it carries, brackets and
 * a port removed ("[2001:db8::1]:443", "192.0.2.1:8080"). Undefined for
 * anything that is not an IP address ("unknown", obfuscated names, garbage).
 */
export function normalizeAddress(raw: string): string | undefined {
  const text = raw.trim();
  if (net.isIPv4(text)) return text;
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    const rest = end === -1 ? "" : text.slice(end + 1);
    if (end === -1 || (rest !== "" && !(rest.startsWith(":") && PORT.test(rest.slice(1))))) return undefined;
    const inner = text.slice(1, end);
    return net.isIPv6(inner) ? canonicalIPv6(inner) : undefined;
  }
  if (net.isIPv6(text)) return canonicalIPv6(text);
  // An IPv4 address with a port; an IPv6 address with a port must be bracketed (RFC 3986 §3.2.2).
  const colon = text.indexOf(":");
  if (colon > 0 && colon === text.lastIndexOf(":") && PORT.test(text.slice(colon + 1)) && net.isIPv4(text.slice(0, colon))) {
    return text.slice(0, colon);
  }
  return undefined;
}

function canonicalIPv6(address: string): string {
  const lower = address.toLowerCase();
  const dotted = MAPPED_DOTTED.exec(lower)?.[1];
  if (dotted !== undefined && net.isIPv4(dotted)) return dotted;
  let canonical: string;
  try {
    // The URL parser writes IPv6 hosts in RFC 5952 form (zeros compressed, lower case).
    canonical = new URL(`http://[${lower}]`).hostname.slice(1, -1);
  } catch {
    // A zone index ("fe80::1%eth0") is valid for the socket but not in a URL: keep it as written.
    return lower;
  }
  const hex = MAPPED_HEX.exec(canonical);
  if (!hex) return canonical;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * The client's address: the socket peer, or, when the peer is a trusted
 * proxy, the address it says it received the request from, and so on to the
 * left while the address is a trusted proxy. With N hops, the entry N places
 * left of the peer (the left-most one when the chain is shorter). An entry
 * that is not an IP address ends the walk at the last address that was one:
 * the view of the proxy that passed the garbage on. `forwardedFor` is the
 * X-Forwarded-For value; several header lines count as one list (RFC 9110
 * §5.3). Undefined only when the socket has no peer address (it closed).
 */
export function clientAddressOf(peer: string | undefined, forwardedFor: string | readonly string[] | undefined, trusted: TrustedProxies): string | undefined {
  if (peer === undefined) return undefined;
  let client = normalizeAddress(peer) ?? peer;
  if (trusted.kind === "none" || forwardedFor === undefined) return client;
  const chain = typeof forwardedFor === "string" ? forwardedFor : forwardedFor.join(",");
  // Entries are read from the right, without splitting the whole header: only trusted hops are ever looked at.
  let end = chain.length;
  for (let walked = 0; end >= 0 && isTrustedProxy(trusted, client, walked); walked++) {
    const comma = end === 0 ? -1 : chain.lastIndexOf(",", end - 1);
    const next = normalizeAddress(chain.slice(comma + 1, end));
    if (next === undefined) break;
    client = next;
    end = comma;
  }
  return client;
}

/**
 * Whether the socket peer is a reverse proxy ATRIUM_TRUST_PROXY trusts: on the
 * list of addresses, or, with a hop count, any peer (the server must then be
 * reachable only through the proxy).
 */
export function peerIsTrustedProxy(peer: string | undefined, trusted: TrustedProxies): boolean {
  if (peer === undefined || trusted.kind === "none") return false;
  return isTrustedProxy(trusted, normalizeAddress(peer) ?? peer, 0);
}

function isTrustedProxy(trusted: TrustedProxies, address: string, walked: number): boolean {
  if (trusted.kind === "hops") return walked < trusted.hops;
  if (trusted.kind === "addresses") return trusted.list.check(address, familyOf(address));
  return false;
}

/**
 * What the per-address limits count: an IPv4 address as it is; an IPv6
 * address by its /64 prefix. A single IPv6 host is routinely given a whole
 * /64 (RFC 6177 §2, RFC 7421), so counting single IPv6 addresses would give
 * one client 2^64 fresh counters.
 */
export function limitBucketOf(address: string): string {
  if (!address.includes(":")) return address;
  let full: string;
  try {
    // Expand "::" so the first four groups can be read (zone indexes are dropped for counting).
    full = new URL(`http://[${address.split("%")[0]}]`).hostname.slice(1, -1);
  } catch {
    return address;
  }
  const [head, tail = ""] = full.split("::");
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const groups = full.includes("::") ? [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups] : headGroups;
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
