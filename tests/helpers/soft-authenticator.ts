/**
 * A software WebAuthn authenticator for server tests (no browser): one P-256
 * (ES256) credential, its COSE public key for inserting a Passkey row
 * directly, and assertions ("webauthn.get") signed like a real
 * authenticator would sign them. Knobs let a test break one thing at a time
 * (origin, RP ID, counter, flags, signing key, client data type).
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from "node:crypto";
import { at, sql, type Database } from "../../app/.server/db/sql.ts";
import { execute } from "./databases.ts";

// ---------------------------------------------------------------------------
// A tiny CBOR encoder (RFC 8949): unsigned and negative integers, byte
// strings, text strings, arrays and maps; enough for COSE keys and
// attestation objects.

export type CborValue = number | bigint | Uint8Array | string | CborValue[] | Map<CborValue, CborValue>;

function cborHead(major: number, length: number | bigint): Buffer {
  const n = BigInt(length);
  if (n < 0n) throw new Error("CBOR length must be non-negative");
  const type = major << 5;
  if (n < 24n) return Buffer.from([type | Number(n)]);
  if (n < 0x100n) return Buffer.from([type | 24, Number(n)]);
  if (n < 0x10000n) {
    const out = Buffer.alloc(3);
    out[0] = type | 25;
    out.writeUInt16BE(Number(n), 1);
    return out;
  }
  if (n < 0x100000000n) {
    const out = Buffer.alloc(5);
    out[0] = type | 26;
    out.writeUInt32BE(Number(n), 1);
    return out;
  }
  const out = Buffer.alloc(9);
  out[0] = type | 27;
  out.writeBigUInt64BE(n, 1);
  return out;
}

export function cborEncode(value: CborValue): Buffer {
  if (typeof value === "number" || typeof value === "bigint") {
    if (typeof value === "number" && !Number.isInteger(value)) throw new Error("only integers are supported");
    const n = BigInt(value);
    return n >= 0n ? cborHead(0, n) : cborHead(1, -1n - n);
  }
  if (value instanceof Uint8Array) return Buffer.concat([cborHead(2, value.length), value]);
  if (typeof value === "string") {
    const bytes = Buffer.from(value, "utf8");
    return Buffer.concat([cborHead(3, bytes.length), bytes]);
  }
  if (Array.isArray(value)) return Buffer.concat([cborHead(4, value.length), ...value.map(cborEncode)]);
  if (value instanceof Map) {
    const parts: Buffer[] = [cborHead(5, value.size)];
    for (const [key, item] of value) parts.push(cborEncode(key), cborEncode(item));
    return Buffer.concat(parts);
  }
  throw new Error(`cannot CBOR-encode ${typeof value}`);
}

// ---------------------------------------------------------------------------

export const FLAG_UP = 0x01;
export const FLAG_UV = 0x04;
export const FLAG_BE = 0x08;
export const FLAG_BS = 0x10;
export const FLAG_AT = 0x40;

export type AuthenticationResponseJSON = {
  id: string;
  rawId: string;
  type: "public-key";
  response: { clientDataJSON: string; authenticatorData: string; signature: string; userHandle?: string };
  clientExtensionResults: Record<string, unknown>;
  authenticatorAttachment?: string;
};

export type AssertOptions = {
  challenge: string;
  origin: string;
  rpId: string;
  /** The signature counter to report; defaults to the authenticator's own, incremented. */
  counter?: number;
  /** Sets UV (UP is always set unless `userPresent` is false). */
  userVerified?: boolean;
  userPresent?: boolean;
  /** clientDataJSON type; "webauthn.get" unless a test wants another. */
  type?: string;
  /** Sign with this key instead of the credential's (a forged assertion). */
  signWith?: KeyObject;
  /** The user handle to return (base64url); defaults to the one set at creation. */
  userHandle?: string;
};

export function sha256(data: Uint8Array | string): Buffer {
  return createHash("sha256").update(data).digest();
}

export class SoftAuthenticator {
  readonly credentialId: Buffer;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The authenticator's signature counter (incremented by each assertion that doesn't set one). */
  counter = 0;

  constructor(options: { credentialId?: Buffer; userHandle?: string } = {}) {
    const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
    this.credentialId = options.credentialId ?? randomBytes(32);
    this.userHandle = options.userHandle;
  }

  userHandle: string | undefined;

  /** The credential id as the server stores it (base64url). */
  get id(): string {
    return this.credentialId.toString("base64url");
  }

  /** COSE_Key (RFC 9053) of the public key: EC2, ES256, P-256, x and y. */
  cosePublicKey(): Buffer {
    const jwk = this.publicKey.export({ format: "jwk" });
    const x = Buffer.from(jwk.x!, "base64url");
    const y = Buffer.from(jwk.y!, "base64url");
    if (x.length !== 32 || y.length !== 32) throw new Error("unexpected P-256 coordinate length");
    return cborEncode(
      new Map<CborValue, CborValue>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, x],
        [-3, y],
      ]),
    );
  }

  /** authenticatorData: rpIdHash || flags || signCount (|| attested credential data). */
  authenticatorData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter >>> 0, 0);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  /** A navigator.credentials.get() answer, as @simplewebauthn/browser would send it. */
  assert(options: AssertOptions): AuthenticationResponseJSON {
    const counter = options.counter ?? ++this.counter;
    if (options.counter !== undefined && options.counter > this.counter) this.counter = options.counter;
    let flags = options.userPresent === false ? 0 : FLAG_UP;
    if (options.userVerified) flags |= FLAG_UV;
    const clientDataJSON = Buffer.from(
      JSON.stringify({ type: options.type ?? "webauthn.get", challenge: options.challenge, origin: options.origin, crossOrigin: false }),
      "utf8",
    );
    const authData = this.authenticatorData(options.rpId, flags, counter);
    const signature = sign("sha256", Buffer.concat([authData, sha256(clientDataJSON)]), options.signWith ?? this.privateKey); // DER
    const userHandle = options.userHandle ?? this.userHandle;
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      response: {
        clientDataJSON: clientDataJSON.toString("base64url"),
        authenticatorData: authData.toString("base64url"),
        signature: signature.toString("base64url"),
        ...(userHandle !== undefined ? { userHandle } : {}),
      },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    };
  }

  /** A navigator.credentials.create() answer with attestation "none" (for registering through the real flow). */
  attest(options: { challenge: string; origin: string; rpId: string; userVerified?: boolean }) {
    let flags = FLAG_UP | FLAG_AT;
    if (options.userVerified) flags |= FLAG_UV;
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length, 0);
    const attested = Buffer.concat([Buffer.alloc(16) /* AAGUID */, idLength, this.credentialId, this.cosePublicKey()]);
    const authData = this.authenticatorData(options.rpId, flags, this.counter, attested);
    const attestationObject = cborEncode(
      new Map<CborValue, CborValue>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]),
    );
    const clientDataJSON = Buffer.from(
      JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin: options.origin, crossOrigin: false }),
      "utf8",
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key" as const,
      response: {
        clientDataJSON: clientDataJSON.toString("base64url"),
        attestationObject: attestationObject.toString("base64url"),
        transports: ["internal"],
      },
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
    };
  }

  /** Inserts this credential as a Passkey row of `accountDid`, as registration would have stored it. */
  async insertInto(db: Database, accountDid: string, options: { name?: string; counter?: number } = {}): Promise<void> {
    await execute(
      db,
      sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "transports", "deviceType", "backedUp", "createdAt", "lastUsedAt")
        VALUES (${this.id}, ${accountDid}, ${options.name ?? "Test key"}, ${this.cosePublicKey()}, ${options.counter ?? this.counter}, ${JSON.stringify(["internal"])},
          'singleDevice', ${false}, ${at(Date.now())}, NULL)`,
    );
  }
}
