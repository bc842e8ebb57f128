import { getConfig } from "../.server/config.ts";
import { protectedResourceMetadata } from "../.server/oauth/metadata/server-metadata.ts";

export function loader() {
  return Response.json(protectedResourceMetadata(getConfig()), { headers: { "Cache-Control": "public, max-age=60" } });
}
