import { jsonEndpoint } from "../.server/http/endpoint.ts";

/** The server signs nothing that clients verify (tokens are opaque), so the set is empty. */
export function loader() {
  return jsonEndpoint("authorization-server", async () =>
    Response.json({ keys: [] }, { headers: { "Cache-Control": "public, max-age=300" } }),
  );
}
