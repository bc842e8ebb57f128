import { verifySignature } from "@atproto/crypto";
import { z } from "zod";
import { AtriumError } from "../errors/atrium-error.ts";

/**
 * An atproto service-auth token another server signed for an account (https://atproto.com/specs/xrpc, "Inter-Service
 * Authentication"): a JWT whose `iss` is the account's DID, `aud` the service it is for, `lxm` the one method it
 * allows, and whose signature is by the `#atproto` key of the issuer's DID document. Checked here with the reference
 * PDS's rules and words (its xrpc-server verifyJwt and auth verifier), for com.atproto.server.createAccount with an
 * existing DID (docs/decisions/0055).
 */
export type ServiceJwtClaims = { iss: string; aud: string; exp: number; lxm?: string };

/** A refused token: 401 with the reference's error name (AuthenticationRequired when it gives none). */
export class ServiceJwtError extends AtriumError {
  constructor(message: string, xrpcName = "AuthenticationRequired") {
    super("service_jwt_refused", message, { status: 401, xrpcName });
  }
}

/** `iss`'s DID's `#atproto` key as a did:key, undefined when its document names none; `fresh`: not from a cache. */
export type IssuerKeyLookup = (did: string, fresh: boolean) => Promise<string | undefined>;

const headerSchema = z.object({ alg: z.string(), typ: z.string().optional() }).passthrough();
const payloadSchema = z
  .object({ iss: z.string(), aud: z.string(), exp: z.number(), lxm: z.string().optional(), nonce: z.string().optional() })
  .passthrough();

/** Types a service token must not have: an OAuth access token (RFC 9068), the reference's refresh tokens, DPoP proofs (RFC 9449). */
const REFUSED_TYPES = new Set(["at+jwt", "refresh+jwt", "dpop+jwt"]);

const DID = /^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$/;

export class ServiceJwtVerifier {
  constructor(
    private readonly issuerKey: IssuerKeyLookup,
    private readonly now: () => number,
  ) {}

  /** The token's claims once every check passed: unexpired, for `audience` and `lxm`, signed by its issuer's key. */
  async verify(token: string, expected: { audience: string; lxm: string }): Promise<ServiceJwtClaims> {
    const parts = token.split(".");
    if (parts.length !== 3) throw new ServiceJwtError("poorly formatted jwt", "BadJwt");
    const header = headerSchema.safeParse(decodeJson(parts[0]!));
    if (!header.success) throw new ServiceJwtError("poorly formatted jwt", "BadJwt");
    if (header.data.typ !== undefined && REFUSED_TYPES.has(header.data.typ)) throw new ServiceJwtError(`Invalid jwt type "${header.data.typ}"`, "BadJwtType");
    const parsed = payloadSchema.safeParse(decodeJson(parts[1]!));
    if (!parsed.success) throw new ServiceJwtError("poorly formatted jwt", "BadJwt");
    const claims = parsed.data;
    if (this.now() / 1000 > claims.exp) throw new ServiceJwtError("jwt expired", "JwtExpired");
    if (claims.aud !== expected.audience) throw new ServiceJwtError("jwt audience does not match service did", "BadJwtAudience");
    if (claims.lxm !== expected.lxm) {
      const words = claims.lxm === undefined ? "missing" : "bad";
      throw new ServiceJwtError(`${words} jwt lexicon method ("lxm"). must match: ${expected.lxm}`, "BadJwtLexiconMethod");
    }
    const issuer = issuerDid(claims.iss);
    if (issuer === undefined) throw new ServiceJwtError("jwt iss is not a valid did", "BadJwtIss");
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`, "utf8");
    const signature = Buffer.from(parts[2]!, "base64url");
    const cached = await this.keyOf(issuer, false);
    if (await this.signedBy(cached, signed, signature, header.data.alg)) return claims;
    // The key may have been rotated since the document was cached: once more, from the source.
    const fresh = await this.keyOf(issuer, true);
    if (fresh !== cached && (await this.signedBy(fresh, signed, signature, header.data.alg))) return claims;
    throw new ServiceJwtError("jwt signature does not match jwt issuer", "BadJwtSignature");
  }

  private async keyOf(did: string, fresh: boolean): Promise<string> {
    let key: string | undefined;
    try {
      key = await this.issuerKey(did, fresh);
    } catch {
      throw new ServiceJwtError("could not resolve iss did");
    }
    if (key === undefined) throw new ServiceJwtError("missing or bad key in did doc");
    return key;
  }

  /**
   * ES256 or ES256K as the key's type says (an `alg` naming another is refused). A high-S signature is taken, as the
   * reference's verifier takes it for these tokens (allowMalleableSig): it proves the same key as its low-S twin.
   */
  private async signedBy(didKey: string, signed: Uint8Array, signature: Uint8Array, alg: string): Promise<boolean> {
    try {
      return await verifySignature(didKey, signed, signature, { jwtAlg: alg, allowMalleableSig: true });
    } catch {
      throw new ServiceJwtError("could not verify jwt signature", "BadJwtSignature");
    }
  }
}

/** The DID of an `iss` (a DID, or a DID and a service fragment: `did:plc:…#atproto_labeler`), undefined when malformed. */
function issuerDid(iss: string): string | undefined {
  const [did, fragment, ...rest] = iss.split("#");
  if (rest.length > 0 || fragment === "" || !DID.test(did!)) return undefined;
  return did;
}

function decodeJson(part: string): unknown {
  try {
    return JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}
