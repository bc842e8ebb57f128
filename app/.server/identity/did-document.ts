import { formatDidKey, multibaseToBytes } from "@atproto/crypto";
import { z } from "zod";

/**
 * A DID document as the network serves it (W3C DID core, with atproto's conventions:
 * https://atproto.com/specs/did), checked with zod since it comes from the network. What atproto reads is checked:
 * `alsoKnownAs` (the handle), the `#atproto` verification method (the account's signing key) and the `#atproto_pds`
 * service.
 */
export const didDocumentSchema = z
  .object({
    id: z.string(),
    alsoKnownAs: z.array(z.string()).max(100).optional(),
    verificationMethod: z
      .array(z.object({ id: z.string(), type: z.string(), controller: z.string().optional(), publicKeyMultibase: z.string().optional() }).passthrough())
      .max(100)
      .optional(),
    service: z
      .array(z.object({ id: z.string(), type: z.unknown(), serviceEndpoint: z.unknown() }).passthrough())
      .max(100)
      .optional(),
  })
  // The rest of the document is kept as served (its @context, other keys): createAccount answers it whole, as the
  // reference's didDoc. The resolver's size cap bounds it.
  .passthrough();

export type DidDocument = z.infer<typeof didDocumentSchema>;

/** The entry of `list` whose id is `#fragment` or `<did>#fragment` (the spec allows both). */
function byFragment<T extends { id: string }>(did: string, list: T[] | undefined, fragment: string): T | undefined {
  return list?.find((entry) => entry.id === `#${fragment}` || entry.id === `${did}#${fragment}`);
}

/**
 * The did:key of the document's `#atproto` verification method, or undefined. atproto's DID spec: the key is a
 * `Multikey` whose `publicKeyMultibase` is the multibase form of a did:key; documents written before that use the
 * legacy `EcdsaSecp256r1VerificationKey2019` / `EcdsaSecp256k1VerificationKey2019` types with the raw public key
 * (which the PLC directory in this repository's tests still serves).
 */
export function atprotoSigningKey(document: DidDocument): string | undefined {
  const method = byFragment(document.id, document.verificationMethod, "atproto");
  const multibase = method?.publicKeyMultibase;
  if (!method || !multibase) return undefined;
  try {
    if (method.type === "Multikey") return `did:key:${multibase}`;
    if (method.type === "EcdsaSecp256r1VerificationKey2019") return formatDidKey("ES256", multibaseToBytes(multibase));
    if (method.type === "EcdsaSecp256k1VerificationKey2019") return formatDidKey("ES256K", multibaseToBytes(multibase));
  } catch {
    return undefined; // not a key of that type: the document names no usable key
  }
  return undefined;
}

/** The `#atproto_pds` service endpoint of the document, as written, or undefined. */
export function atprotoPdsEndpoint(document: DidDocument): string | undefined {
  const service = byFragment(document.id, document.service, "atproto_pds");
  if (!service || service.type !== "AtprotoPersonalDataServer" || typeof service.serviceEndpoint !== "string") return undefined;
  return service.serviceEndpoint;
}

/**
 * The endpoint of the document's service `#<id>` (any type), as written, or undefined: where service proxying sends
 * calls for `<did>#<id>` (atproto XRPC, "Service Proxying": https://atproto.com/specs/xrpc).
 */
export function serviceEndpointOf(document: DidDocument, id: string): string | undefined {
  const service = byFragment(document.id, document.service, id);
  return typeof service?.serviceEndpoint === "string" ? service.serviceEndpoint : undefined;
}
