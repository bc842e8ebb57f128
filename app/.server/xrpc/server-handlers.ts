import type { Services } from "../services.ts";
import { XrpcError } from "./xrpc-error.ts";

/** com.atproto.identity.resolveHandle: the DID of a handle hosted here. */
export async function resolveHandle(services: Services, params: URLSearchParams) {
  const handle = params.get("handle");
  if (!handle) throw new XrpcError(400, "InvalidRequest", "Params must have the property \"handle\"");
  const account = await services.accounts.findByHandle(handle);
  if (!account) throw new XrpcError(400, "InvalidRequest", "Unable to resolve handle");
  return { did: account.did };
}

/** com.atproto.server.describeServer. */
export function describeServer(services: Services) {
  const { config } = services;
  return {
    did: `did:web:${config.publicUrl.host}`,
    availableUserDomains: [],
    inviteCodeRequired: true,
    phoneVerificationRequired: false,
    links: {},
    contact: {},
  };
}
