import { describe, expect, it } from "vitest";
import { loadConfig } from "../../config.ts";
import { appPagePath, authorizationServerMetadata, clientIdOfAppPage } from "./server-metadata.ts";

const config = loadConfig({ PUBLIC_URL: "https://pds.example.com", ATRIUM_PLC_ROTATION_KEY: "11".repeat(32), ATRIUM_KEY_ENCRYPTION_KEY: "22".repeat(32) });
const ENDPOINTS = {
  token_endpoint: "/oauth/token",
  pushed_authorization_request_endpoint: "/oauth/par",
  revocation_endpoint: "/oauth/revoke",
  userinfo_endpoint: "/oauth/userinfo",
  jwks_uri: "/oauth/jwks",
};

describe("authorization server metadata: where a person manages their apps (docs/decisions/0053)", () => {
  it("names the Connected apps page under the current draft's name and the expired draft's", () => {
    const metadata = authorizationServerMetadata(config, ENDPOINTS);
    expect(metadata.user_authorization_management_uri).toBe("https://pds.example.com/account/apps");
    expect(metadata.authorization_management_uri).toBe(metadata.user_authorization_management_uri);
  });

  it("gives each app a page of its own: the management URI, a slash and the client_id as one segment", () => {
    const clientId = "http://localhost?redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&scope=atproto";
    const path = appPagePath(clientId);
    expect(path.split("/")).toHaveLength(4);
    expect(clientIdOfAppPage(path)).toBe(clientId);
    expect(clientIdOfAppPage("/account/apps/%E0%A4%A")).toBeUndefined();
    expect(clientIdOfAppPage("/account/apps/")).toBeUndefined();
    expect(appPagePath("https://app.example/client-metadata.json")).toBe("/account/apps/https%3A%2F%2Fapp.example%2Fclient-metadata.json");
  });
});
