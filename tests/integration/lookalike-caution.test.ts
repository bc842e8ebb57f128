import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { translatorFor } from "../../app/.server/i18n/translate.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { pageText } from "../helpers/account.ts";
import { ClientHost } from "../helpers/client-host.ts";
import { CookieJar, openConsentPage } from "../helpers/consent.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Issue 16: apps whose name spells one of Bluesky's hosts with Latin look-alike letters (`bşky.app`, `ƅsky.app`)
 * got no caution on the consent screen. Each app serves its own metadata document; the screen, opened as a browser
 * opens it, must say that the name imitates other letters, and must say nothing for an ordinary app.
 */

const en = translatorFor("en");
const CAUTION = en("consent:identity.caution.title");
const LOOKALIKE_NAME = en("consent:identity.caution.reasons.lookalike.name");

describe("the consent screen's caution for look-alike names", () => {
  let server: TestServer;
  const hosts: ClientHost[] = [];
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await Promise.all(hosts.map((host) => host.stop()));
    await server?.stop();
  });

  /** The consent screen's text for an app calling itself `name`. */
  async function screenFor(name: string): Promise<string> {
    const host = await ClientHost.start();
    hosts.push(host);
    host.serveMetadata(host.metadata({ authMethod: "none", clientName: name }));
    const client = new DpopClient(server.issuer, await generateDpopKey(), host.clientId);
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest({ redirect_uri: host.redirectUri, scope: "atproto transition:generic", state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256" });
    expect(par.status, JSON.stringify(par.body)).toBe(201);
    const page = await openConsentPage(client.authorizeUrl(par.body.request_uri), new CookieJar());
    expect(page.status).toBe(200);
    return pageText(page.html);
  }

  it.each(["bşky.app", "ƅsky.app", "Ƀsky.app", "bsky.аpp", "bsĸy.social"])("cautions that %j imitates other letters", async (name) => {
    const text = await screenFor(name);
    expect(text).toContain(CAUTION);
    expect(text).toContain(LOOKALIKE_NAME);
  });

  it("says nothing of an ordinary app", async () => {
    const text = await screenFor("Skyline Photos");
    expect(text).not.toContain(CAUTION);
  });
});
