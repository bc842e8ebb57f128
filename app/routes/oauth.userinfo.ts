import type { LoaderFunctionArgs } from "@remix-run/node";
import { jsonEndpoint, noStoreJson } from "../.server/http/endpoint.ts";
import { publicRequestUrl } from "../.server/http/request-input.ts";

/** OIDC Core §5.3 userinfo, protected by a DPoP-bound access token (RFC 9449 §7). */
async function userinfo({ request }: LoaderFunctionArgs) {
  return jsonEndpoint("resource", async ({ config, accessTokens }) => {
    const subject = await accessTokens.verify({
      authorization: request.headers.get("Authorization"),
      dpop: request.headers.get("DPoP"),
      method: request.method,
      url: publicRequestUrl(config.issuer, request),
    });
    return noStoreJson({ sub: subject.did, preferred_username: subject.handle });
  });
}

export const loader = userinfo;
export const action = userinfo;
