import { getConfig } from "../.server/config.ts";
import { authorizationServerMetadata } from "../.server/oauth/metadata/server-metadata.ts";

export function loader() {
  return Response.json(authorizationServerMetadata(getConfig()), { headers: { "Cache-Control": "public, max-age=60" } });
}
