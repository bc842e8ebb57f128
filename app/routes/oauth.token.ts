import type { ActionFunctionArgs } from "@remix-run/node";
import { jsonEndpoint, methodNotAllowed, noStoreJson } from "../.server/http/endpoint.ts";
import { publicRequestUrl, readForm } from "../.server/http/request-input.ts";
import { tokenRequestSchema } from "../.server/oauth/token/token-manager.ts";

/** RFC 6749 §3.2 token endpoint: authorization_code (with PKCE) and refresh_token; DPoP required (RFC 9449 §5). */
export async function action({ request }: ActionFunctionArgs) {
  if (request.method !== "POST") return methodNotAllowed("POST");
  return jsonEndpoint("authorization-server", async ({ config, dpop, tokens }) => {
    const form = await readForm(request);
    const proof = await dpop.verify({ proof: request.headers.get("DPoP"), method: "POST", url: publicRequestUrl(config.issuer, request) });
    return noStoreJson(await tokens.exchange(tokenRequestSchema.parse(form), proof.jkt));
  });
}

export function loader() {
  return methodNotAllowed("POST");
}
