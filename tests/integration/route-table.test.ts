/**
 * The route table of the JSON endpoints (app/.server/http/api-routes.ts) is
 * the one source of what the entry serves: every endpoint the discovery
 * documents name is a table entry, answered with CORS and in the error
 * shape the entry declares; the consent screen is not in it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../app/.server/config.ts";
import { applyMigrations } from "../../app/.server/db/migrations.ts";
import { apiRoutes, type ApiRoute, type ApiRouteTable } from "../../app/.server/http/api-routes.ts";
import { createServices, type Services } from "../../app/.server/services.ts";
import { createServerDatabase, type ServerDatabase } from "../helpers/test-database.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

let server: TestServer;
let services: Services;
let table: ApiRouteTable;
let database: ServerDatabase;

beforeAll(async () => {
  server = await startTestServer();
  // The same table, built in this process over a database of its own (on the project's engine), to read its entries.
  database = await createServerDatabase();
  const config = loadConfig({ DATABASE_URL: database.url, PUBLIC_URL: server.issuer });
  // A SQLite file starts empty; a PostgreSQL test database comes migrated, and migrating again changes nothing.
  await applyMigrations(config.database);
  services = await createServices(config);
  table = apiRoutes(services);
});
afterAll(async () => {
  await services?.close();
  await database?.remove();
  await server?.stop();
});

type Metadata = Record<string, unknown>;

async function discoveryUrls(): Promise<{ name: string; url: string }[]> {
  const documents = await Promise.all(
    ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"].map(async (documentPath) => (await (await fetch(`${server.issuer}${documentPath}`)).json()) as Metadata),
  );
  return documents.flatMap((document) =>
    Object.entries(document)
      .filter(([name, value]) => typeof value === "string" && /(_endpoint|_uri)$/.test(name) && (value as string).startsWith(server.issuer))
      .map(([name, value]) => ({ name, url: value as string })),
  );
}

/** An error answer of an endpoint: a request it must refuse (wrong method or missing input). */
async function refusalOf(route: ApiRoute, url: string): Promise<Response> {
  const method = route.methods.includes("POST") ? "POST" : "GET";
  const wrongMethod = route.methods.includes("POST") && !route.methods.includes("GET") ? "GET" : "PUT";
  // Under a prefix: a path that is not a method name at all.
  return route.prefix ? fetch(`${url}not%20a%20name`, { method }) : fetch(url, { method: wrongMethod });
}

describe("the route table", () => {
  it("serves every endpoint the discovery documents name, except the pages (the consent screen, Connected apps)", async () => {
    // Pages are Remix's, not the route table's: the consent screen, and the management page a person is sent to
    // (docs/decisions/0053: named under both drafts' names).
    const pages = new Set(["authorization_endpoint", "authorization_management_uri", "user_authorization_management_uri"]);
    const urls = await discoveryUrls();
    expect(urls.map((entry) => entry.name).sort()).toEqual([
      "authorization_endpoint",
      "authorization_management_uri",
      "jwks_uri",
      "pushed_authorization_request_endpoint",
      "revocation_endpoint",
      "token_endpoint",
      "user_authorization_management_uri",
      "userinfo_endpoint",
    ]);
    for (const { name, url } of urls) {
      const route = table.find(new URL(url).pathname);
      if (pages.has(name)) expect(route, name).toBeUndefined();
      else expect(route?.metadataName, name).toBe(name);
    }
  });

  it("every entry answers a CORS preflight and its refusals carry CORS headers and its error shape", async () => {
    for (const route of table.routes) {
      const url = `${server.issuer}${route.path}`;
      const preflight = await fetch(url, { method: "OPTIONS", headers: { Origin: "https://app.example", "Access-Control-Request-Method": route.methods[0]! } });
      expect(preflight.status, route.path).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin"), route.path).toBe("*");
      for (const method of route.methods) expect(preflight.headers.get("access-control-allow-methods"), route.path).toContain(method);

      const refused = await refusalOf(route, url);
      expect(refused.status, route.path).toBeGreaterThanOrEqual(400);
      expect(refused.status, route.path).toBeLessThan(500);
      expect(refused.headers.get("access-control-allow-origin"), route.path).toBe("*");
      expect(refused.headers.get("content-type"), route.path).toMatch(/^application\/json/);
      const body = (await refused.json()) as Record<string, unknown>;
      if (route.errorShape === "oauth") expect(Object.keys(body).sort(), route.path).toEqual(["error", "error_description"]);
      else expect(Object.keys(body).sort(), route.path).toEqual(["error", "message"]);
      if (route.dpopNonce) expect(refused.headers.get("dpop-nonce"), route.path).toBeTruthy();
    }
  });

  it("the consent screen and the account pages are not API routes: no CORS, HTML", async () => {
    for (const page of ["/oauth/authorize", "/account"]) {
      expect(table.find(page), page).toBeUndefined();
      const response = await fetch(`${server.issuer}${page}`, { headers: { Origin: "https://app.example" } });
      expect(response.headers.get("access-control-allow-origin"), page).toBeNull();
      expect(response.headers.get("content-type"), page).toMatch(/text\/html/);
    }
  });
});
