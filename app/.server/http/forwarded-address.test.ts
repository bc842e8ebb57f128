import { describe, expect, it } from "vitest";
import { clientAddressOf, limitBucketOf, MAX_PROXY_HOPS, normalizeAddress, parseTrustedProxies, type TrustedProxies } from "./forwarded-address.ts";

/**
 * docs/decisions/0006: the client address is read from the right of
 * [X-Forwarded-For entries…, socket peer], one trusted proxy at a time;
 * what a client writes to the left of its own proxy's entry never counts.
 */

function trust(value: string): TrustedProxies {
  const parsed = parseTrustedProxies(value);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.trusted;
}

describe("parseTrustedProxies", () => {
  it.each([undefined, "", "  ", "0", "false", "off", "no", "OFF", "00"])("reads %j as no trusted proxy", (value) => {
    expect(parseTrustedProxies(value)).toEqual({ ok: true, trusted: { kind: "none" } });
  });

  it.each(["1", "true", "on", "yes", "TRUE", " 1 "])("reads %j as one proxy hop", (value) => {
    expect(parseTrustedProxies(value)).toEqual({ ok: true, trusted: { kind: "hops", hops: 1 } });
  });

  it("reads a whole number as that many hops, up to the maximum", () => {
    expect(trust("3")).toEqual({ kind: "hops", hops: 3 });
    expect(trust(String(MAX_PROXY_HOPS))).toEqual({ kind: "hops", hops: MAX_PROXY_HOPS });
    const tooMany = parseTrustedProxies(String(MAX_PROXY_HOPS + 1));
    expect(tooMany.ok).toBe(false);
  });

  it("reads a list of addresses and CIDR ranges, IPv4 and IPv6, in canonical form", () => {
    const trusted = trust("10.0.0.0/8, 192.0.2.7 ,2001:DB8::/32,::1,::ffff:198.51.100.9,[2001:db8::5]");
    expect(trusted).toMatchObject({ kind: "addresses", ranges: ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1", "198.51.100.9", "2001:db8::5"] });
  });

  it.each(["10.0.0.300", "10.0.0.0/33", "2001:db8::/129", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.1,,10.0.0.2", "proxy.example.com", "maybe", "-1", "1.5", "10.0.0.1/8/8"])(
    "refuses %j with a message that says what is accepted",
    (value) => {
      const parsed = parseTrustedProxies(value);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.message).toMatch(/IP address|hops/);
    },
  );
});

describe("normalizeAddress", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["  203.0.113.7 ", "203.0.113.7"],
    ["203.0.113.7:51234", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["::FFFF:203.0.113.7", "203.0.113.7"],
    ["::ffff:cb00:7107", "203.0.113.7"],
    ["0:0:0:0:0:ffff:203.0.113.7", "203.0.113.7"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["[2001:db8::1]:443", "2001:db8::1"],
    ["[::ffff:203.0.113.7]:80", "203.0.113.7"],
    ["::1", "::1"],
  ])("%j → %j", (raw, expected) => {
    expect(normalizeAddress(raw)).toBe(expected);
  });

  it.each(["", "unknown", "_hidden", "example.com", "203.0.113", "203.0.113.256", "01.2.3.4", "203.0.113.7:", "203.0.113.7:port", "[2001:db8::1", "[2001:db8::1]x", "[203.0.113.7]", "2001:db8::1:443x", "<script>"])(
    "refuses %j",
    (raw) => {
      expect(normalizeAddress(raw)).toBeUndefined();
    },
  );
});

describe("clientAddressOf", () => {
  const PROXY = "10.0.0.2";
  const NGINX = "127.0.0.1";

  it.each<[string, string | undefined, string, string]>([
    // No trust: the socket peer, whatever the headers say.
    ["off: the header is ignored", "198.51.100.1", "off", NGINX],
    // One hop: the address the proxy appended, not what the client wrote before it.
    ["1 hop: the proxy's entry", "198.51.100.1", "1", "198.51.100.1"],
    ["1 hop: forged entries to the left are ignored", "6.6.6.6, 7.7.7.7, 198.51.100.1", "1", "198.51.100.1"],
    ["1 hop: a forged address in the client's own header is still left of the proxy's", "1.1.1.1,198.51.100.1", "true", "198.51.100.1"],
    // Two hops: CDN → nginx → us; the CDN appended the client, nginx appended the CDN.
    ["2 hops", "6.6.6.6, 198.51.100.1, 203.0.113.50", "2", "198.51.100.1"],
    ["3 hops on a chain of two entries: the left-most", "198.51.100.1, 203.0.113.50", "3", "198.51.100.1"],
    // Garbage ends the walk at the last address that was one (the view of the proxy that passed it on).
    ["2 hops, garbage where the client should be", "unknown, 203.0.113.50", "2", "203.0.113.50"],
    ["1 hop, garbage appended by the proxy itself: the proxy's own peer", "198.51.100.1, garbage", "1", NGINX],
    ["1 hop, an empty entry", "198.51.100.1, ", "1", NGINX],
    ["1 hop, an empty header", "", "1", NGINX],
    // Entries as proxies write them.
    ["1 hop, IPv6", "6.6.6.6, 2001:DB8::0:1", "1", "2001:db8::1"],
    ["1 hop, bracketed IPv6 with a port", "6.6.6.6, [2001:db8::1]:51234", "1", "2001:db8::1"],
    ["1 hop, IPv4 with a port", "6.6.6.6, 198.51.100.1:51234", "1", "198.51.100.1"],
    ["1 hop, IPv4-mapped IPv6", "6.6.6.6, ::ffff:198.51.100.1", "1", "198.51.100.1"],
    // A list of proxies: walk left while the address is one of them.
    ["list: peer trusted, next entry is the client", "6.6.6.6, 198.51.100.1", "127.0.0.1/32", "198.51.100.1"],
    ["list: two trusted proxies in a row", "6.6.6.6, 198.51.100.1, 10.0.0.9", "127.0.0.0/8, 10.0.0.0/8", "198.51.100.1"],
    ["list: every entry trusted, the left-most", "10.0.0.7, 10.0.0.9", "127.0.0.1, 10.0.0.0/8", "10.0.0.7"],
    ["list: garbage after a trusted proxy", "6.6.6.6, bogus, 10.0.0.9", "127.0.0.1, 10.0.0.0/8", "10.0.0.9"],
    ["list: IPv6 proxy range", "6.6.6.6, 198.51.100.1, 2001:db8::9", "127.0.0.1,2001:db8::/32", "198.51.100.1"],
  ])("%s", (_name, forwardedFor, setting, expected) => {
    expect(clientAddressOf(NGINX, forwardedFor, trust(setting))).toBe(expected);
  });

  it("several X-Forwarded-For lines count as one comma-joined list (RFC 9110 §5.3)", () => {
    const lines = ["6.6.6.6, 7.7.7.7", "198.51.100.1"];
    expect(clientAddressOf(NGINX, lines, trust("1"))).toBe("198.51.100.1");
    expect(clientAddressOf(NGINX, lines, trust("2"))).toBe("7.7.7.7");
    expect(clientAddressOf(NGINX, ["6.6.6.6", "", "198.51.100.1"], trust("2"))).toBe("198.51.100.1");
  });

  it("a peer that is not a trusted proxy is the client: its X-Forwarded-For is ignored entirely", () => {
    expect(clientAddressOf("198.51.100.77", "6.6.6.6", trust("127.0.0.1/32"))).toBe("198.51.100.77");
    expect(clientAddressOf("::ffff:198.51.100.77", "127.0.0.1", trust("127.0.0.1/32"))).toBe("198.51.100.77");
  });

  it("a trusted peer written as an IPv4-mapped address (a dual-stack socket) is still trusted", () => {
    expect(clientAddressOf(`::ffff:${PROXY}`, "6.6.6.6, 198.51.100.1", trust("10.0.0.0/8"))).toBe("198.51.100.1");
  });

  it("without a header, or without trust, the peer in canonical form", () => {
    expect(clientAddressOf("::ffff:198.51.100.1", undefined, trust("1"))).toBe("198.51.100.1");
    expect(clientAddressOf("::ffff:198.51.100.1", "6.6.6.6", trust("off"))).toBe("198.51.100.1");
  });

  it("a socket without a peer address (already closed) has no client address", () => {
    expect(clientAddressOf(undefined, "6.6.6.6", trust("1"))).toBeUndefined();
  });

  it("reads only the trusted end of a long header", () => {
    const forged = Array.from({ length: 2000 }, (_, i) => `10.${i >> 8}.${i & 255}.1`).join(", ");
    expect(clientAddressOf(NGINX, `${forged}, 198.51.100.1`, trust("1"))).toBe("198.51.100.1");
  });
});

describe("limitBucketOf", () => {
  it("counts IPv4 addresses one by one and IPv6 addresses by their /64", () => {
    expect(limitBucketOf("198.51.100.7")).toBe("198.51.100.7");
    expect(limitBucketOf("2001:db8:1:2:3:4:5:6")).toBe("2001:db8:1:2::/64");
    expect(limitBucketOf("2001:db8:1:2::ffff")).toBe("2001:db8:1:2::/64");
    expect(limitBucketOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(limitBucketOf("::1")).toBe("0:0:0:0::/64");
    expect(limitBucketOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    // Two hosts of one /64 share a bucket; neighbouring /64s do not.
    expect(limitBucketOf("2001:db8:a:b::1")).toBe(limitBucketOf("2001:db8:a:b:ffff:ffff:ffff:ffff"));
    expect(limitBucketOf("2001:db8:a:b::1")).not.toBe(limitBucketOf("2001:db8:a:c::1"));
  });
});
