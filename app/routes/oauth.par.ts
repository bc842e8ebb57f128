import type { ActionFunctionArgs } from "@remix-run/node";
import { jsonEndpoint, methodNotAllowed, noStoreJson } from "../.server/http/endpoint.ts";
import { publicRequestUrl, readForm } from "../.server/http/request-input.ts";
import { parParametersSchema } from "../.server/oauth/request/par-manager.ts";

/** RFC 9126 pushed authorization request. DPoP proof required (atproto OAuth profile). */
export async function action({ request }: ActionFunctionArgs) {
  if (request.method !== "POST") return methodNotAllowed("POST");
  return jsonEndpoint("authorization-server", async ({ config, dpop, par }) => {
    const form = await readForm(request);
    const proof = await dpop.verify({ proof: request.headers.get("DPoP"), method: "POST", url: publicRequestUrl(config.issuer, request) });
    const input = parParametersSchema.parse(form);
    // RFC 9126 §2.2: "201 Created".
    return noStoreJson(await par.push(input, proof.jkt), 201);
  });
}

export function loader() {
  return methodNotAllowed("POST");
}
