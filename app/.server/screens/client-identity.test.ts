import { domainToASCII } from "node:url";
import { describe, expect, it } from "vitest";
import { claimWarnings, clientIdentity, type ServiceIdentity } from "./client-identity.ts";

const SERVICE: ServiceIdentity = { serviceName: "Example Social", issuer: "https://pds.example.com" };

function reasons(claims: Parameters<typeof claimWarnings>[0], service = SERVICE) {
  return claimWarnings(claims, service).map((warning) => `${warning.reason}:${warning.in.join("+")}`);
}

describe("claimWarnings", () => {
  it("says nothing about an ordinary app", () => {
    expect(reasons({ hostname: "skyline.example", name: "Skyline Photos" })).toEqual([]);
    expect(reasons({ hostname: "graysky.app", name: "Graysky" })).toEqual([]);
  });

  it("flags an app that calls itself Bluesky or official on an unrelated host", () => {
    expect(reasons({ hostname: "photos.example", name: "Bluesky (official app)" })).toEqual(["official:name"]);
    expect(reasons({ hostname: "photos.example", name: "OFFICIAL client" })).toEqual(["official:name"]);
  });

  it("flags Bluesky or official in the host itself", () => {
    expect(reasons({ hostname: "bsky-official.example", name: "Skyline" })).toEqual(["official:address"]);
    expect(reasons({ hostname: "bluesky-login.example" })).toEqual(["official:address"]);
  });

  it("does not flag Bluesky's own apps, whose hosts make the claim true", () => {
    expect(reasons({ hostname: "bsky.app", name: "Bluesky" })).toEqual([]);
    expect(reasons({ hostname: "web.bsky.app", name: "Bluesky Social (official)" })).toEqual([]);
    // A host that merely ends in the same letters is not Bluesky's.
    expect(reasons({ hostname: "notbsky.app", name: "Bluesky" })).toEqual(["official:name"]);
  });

  it("flags a name or host that imitates this server's own name or host", () => {
    expect(reasons({ hostname: "login.example", name: "Example Social sign-in" })).toEqual(["service-name:name"]);
    expect(reasons({ hostname: "examplesocial.example", name: "Helper" })).toEqual(["service-name:address"]);
    expect(reasons({ hostname: "pds.example.com.evil.example", name: "Helper" })).toEqual(["service-name:address"]);
    expect(reasons({ hostname: "other.example", name: "pds.example.com" })).toEqual(["service-name:name"]);
  });

  it("does not flag this server's own host or the hosts under it", () => {
    expect(reasons({ hostname: "pds.example.com", name: "Example Social" })).toEqual([]);
    expect(reasons({ hostname: "admin.pds.example.com", name: "Example Social admin" })).toEqual([]);
  });

  it("flags look-alike letters: mixed scripts, lookalike-only matches, styled letters", () => {
    expect(reasons({ hostname: "photos.example", name: "Вluesky" })).toEqual(["official:name", "lookalike:name"]);
    expect(reasons({ hostname: "photos.example", name: "B1uesky" })).toEqual(["official:name", "lookalike:name"]);
    expect(reasons({ hostname: "photos.example", name: "𝐁𝐥𝐮𝐞𝐬𝐤𝐲" })).toEqual(["official:name", "lookalike:name"]);
    expect(reasons({ hostname: "photos.example", name: "Skуline" })).toEqual(["lookalike:name"]);
    expect(reasons({ hostname: "photos.example", name: "Exarnple Social" })).toEqual(["service-name:name", "lookalike:name"]);
  });

  // Issue 16: the review's `bşky.app` and `ƅsky.app` passed without a word.
  it.each(["bşky.app", "ƅsky.app", "ƀsky.app", "bsķy.app", "bskÿ.app", "bsky.àpp", "web.bşky.app", "bşky.social", "bѕky.app", "bsky.sociał", "bsky.socıal"])(
    "flags Bluesky's host spelled with look-alike letters: %j",
    (unicode) => {
      const clientId = `https://${domainToASCII(unicode)}/client-metadata.json`;
      const identity = clientIdentity({ clientId, name: "Skyline" }, SERVICE);
      expect(identity.hostUnicode).toBe(unicode);
      expect(identity.warnings).toContainEqual({ reason: "lookalike", in: ["address"] });
    },
  );

  it("flags a name that spells Bluesky's host with look-alike letters, and not Bluesky's own hosts", () => {
    expect(reasons({ hostname: "photos.example", name: "ƅsky.app" })).toEqual(["lookalike:name"]);
    expect(reasons({ hostname: "photos.example", name: "Bşky.app client" })).toEqual(["lookalike:name"]);
    expect(reasons({ hostname: "bsky.app", name: "Bluesky" })).toEqual([]);
    expect(reasons({ hostname: "web.bsky.app", name: "bsky.app" })).toEqual([]);
    // Mentioning the real host plainly is not an imitation by its letters.
    expect(reasons({ hostname: "photos.example", name: "Photos for bsky.app" })).toEqual([]);
  });

  it("flags an internationalised host whose Unicode form mixes scripts", () => {
    const identity = clientIdentity({ clientId: "https://xn--skline-xrf.example/client-metadata.json", name: "Skyline" }, SERVICE);
    expect(identity.host).toBe("xn--skline-xrf.example");
    expect(identity.hostUnicode).toBeDefined();
    expect(identity.warnings.map((warning) => warning.reason)).toContain("lookalike");
  });

  it("flags hidden characters: removed bidi controls, or invisible format characters left in the name", () => {
    expect(reasons({ hostname: "photos.example", name: "Photos", nameHadHiddenCharacters: true })).toEqual(["hidden-characters:name"]);
    expect(reasons({ hostname: "photos.example", name: "Pho\u200btos" })).toEqual(["hidden-characters:name"]);
  });

  it("uses the default service name (the issuer's host) too", () => {
    const service = { serviceName: "localhost", issuer: "http://localhost:3000" };
    expect(reasons({ hostname: "127.0.0.1", name: "Localhost Login" }, service)).toEqual(["service-name:name"]);
    expect(reasons({ hostname: "127.0.0.1", name: "Skyline Photos" }, service)).toEqual([]);
  });
});

describe("clientIdentity", () => {
  it("names a web app by its verified host and keeps its name as a claim", () => {
    const identity = clientIdentity({ clientId: "https://photos.example:8443/client-metadata.json", name: "Bluesky (official app)", logoUri: "https://photos.example/logo.png" }, SERVICE);
    expect(identity).toMatchObject({ isLoopback: false, host: "photos.example:8443", name: "Bluesky (official app)", logoUri: "https://photos.example/logo.png" });
    expect(identity.hostUnicode).toBeUndefined();
    expect(identity.warnings).toEqual([{ reason: "official", in: ["name"] }]);
  });

  it("describes a loopback app by where it receives the answer", () => {
    const identity = clientIdentity({ clientId: `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1:8080/callback", scope: "atproto" })}` }, SERVICE);
    expect(identity).toMatchObject({ isLoopback: true, redirectUris: ["http://127.0.0.1:8080/callback"], warnings: [] });
    expect(identity.host).toBeUndefined();
  });
});
