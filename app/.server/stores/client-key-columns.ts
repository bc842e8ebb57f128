import type { ClientKeyBinding } from "../oauth/client/client-manager.ts";

/** The three columns that record a client key binding (AuthorizationRequest, AuthorizationCode, Grant). */
export type ClientKeyColumns = { clientKeyId: string | null; clientKeyAlg: string | null; clientKeyJkt: string | null };

export function clientKeyColumns(binding: ClientKeyBinding | null): ClientKeyColumns {
  return binding ? { clientKeyId: binding.kid, clientKeyAlg: binding.alg, clientKeyJkt: binding.jkt } : { clientKeyId: null, clientKeyAlg: null, clientKeyJkt: null };
}

/**
 * The binding a row records. A row written before keys were bound by their
 * thumbprint has only a kid: it gets an empty thumbprint, which no key
 * matches, so such a grant cannot be refreshed and the app signs in again.
 */
export function clientKeyFromColumns(row: ClientKeyColumns): ClientKeyBinding | null {
  if (row.clientKeyId === null) return null;
  return { kid: row.clientKeyId, alg: "ES256", jkt: row.clientKeyAlg === "ES256" ? (row.clientKeyJkt ?? "") : "" };
}
