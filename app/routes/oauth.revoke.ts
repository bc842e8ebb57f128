import type { ActionFunctionArgs } from "@remix-run/node";
import { z } from "zod";
import { jsonEndpoint, methodNotAllowed } from "../.server/http/endpoint.ts";
import { readForm } from "../.server/http/request-input.ts";

const revokeSchema = z.object({
  token: z.string({ required_error: "token is required" }).min(1, "token is required").max(4096),
  token_type_hint: z.string().max(64).optional(),
});

/**
 * RFC 7009 revocation. Holding a token is enough to end it, so neither
 * client authentication nor a DPoP proof is required (generic clients send
 * none); either token ends its whole grant (DESIGN 4.1).
 */
export async function action({ request }: ActionFunctionArgs) {
  if (request.method !== "POST") return methodNotAllowed("POST");
  return jsonEndpoint("authorization-server", async ({ tokens }) => {
    const { token } = revokeSchema.parse(await readForm(request));
    tokens.revoke(token);
    // RFC 7009 §2.2: 200 also when the token was invalid or unknown.
    return new Response(null, { status: 200 });
  });
}

export function loader() {
  return methodNotAllowed("POST");
}
