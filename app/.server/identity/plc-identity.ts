import type { Keypair } from "@atproto/crypto";
import { IdentityError } from "./identity-error.ts";
import type { PlcDirectory } from "./plc-directory.ts";
import { atprotoOperation, didOfGenesis, operationCid, signOperation, type PlcOperation, type PlcTombstone, type UnsignedPlcOperation } from "./plc-operation.ts";

/** The fields of an operation a change may set; `prev` and the signature are the registry's to write. */
export type OperationFields = Omit<UnsignedPlcOperation, "type" | "prev">;

/**
 * Who controls a DID, as its last operation says (docs/decisions/0050): `sole` when this server's rotation key is
 * its only one (this server alone can change or end it), `shared` when this server's key is one of several (a key of
 * the person's own above it, say), `elsewhere` when this server's key is no longer among them (the DID moved: this
 * server can change nothing), `ended` once tombstoned, `unknown` when the directory never saw it.
 */
export type Control = "sole" | "shared" | "elsewhere" | "ended" | "unknown";

/** What account creation, handle changes and the person's own operations need from the identity system (docs/decisions/0028a-plc-identity.md). */
export interface IdentityRegistry {
  /** This server's rotation key, as a did:key. */
  readonly rotationKeyDid: string;
  /**
   * Registers a new did:plc naming the handle, the account's signing key (`signingKey`, a did:key) and this PDS;
   * answers the DID. `recoveryKey`, a did:key the person holds, goes above this server's key (docs/decisions/0050).
   */
  register(account: { handle: string; signingKey: string; recoveryKey?: string }): Promise<string>;
  /** Points the DID's document at the new handle (a signed update operation), before the handle changes here. */
  updateHandle(did: string, handle: string): Promise<void>;
  /** Whether the directory knows the DID. */
  isRegistered(did: string): Promise<boolean>;
  /** The DID's last operation (a tombstone when it ended); undefined when the directory never saw it. */
  lastOperation(did: string): Promise<PlcOperation | PlcTombstone | undefined>;
  /** Who controls the DID now. */
  control(did: string): Promise<Control>;
  /**
   * The next operation of the DID, chained to `last` and signed with this server's rotation key, with `change`'s
   * fields: refused when this server's key is not among `last`'s rotation keys. Not submitted.
   */
  signUpdate(did: string, last: PlcOperation, change: OperationFields): Promise<PlcOperation>;
  /** Submits a signed operation to the directory, which checks its signature and its `prev`. */
  submit(did: string, operation: PlcOperation): Promise<void>;
  /**
   * Ends the DID at the directory (a signed `plc_tombstone`): its document no longer resolves. Done again, or for a
   * DID the directory never saw, it does nothing, so that a step that failed after it can simply be retried.
   */
  tombstone(did: string): Promise<void>;
}

/**
 * did:plc identities at the PLC directory, signed with the server's rotation key. The DID document names the
 * account's signing key (`#atproto`: what signs its commits and service-auth tokens), `at://<handle>` and this PDS
 * (`#atproto_pds` = PUBLIC_URL exactly).
 */
export class PlcIdentity implements IdentityRegistry {
  constructor(
    private readonly directory: PlcDirectory,
    private readonly rotationKey: Keypair,
    private readonly pdsEndpoint: string,
  ) {}

  get rotationKeyDid(): string {
    return this.rotationKey.did();
  }

  async register(account: { handle: string; signingKey: string; recoveryKey?: string }): Promise<string> {
    // did:plc specification: rotation keys are "ordered from highest to lowest priority"; the person's own comes first,
    // so that an operation of this server's can be undone with it within the recovery window.
    const rotationKeys = account.recoveryKey ? [account.recoveryKey, this.rotationKeyDid] : [this.rotationKeyDid];
    const unsigned = atprotoOperation({ handle: account.handle, signingKey: account.signingKey, pdsEndpoint: this.pdsEndpoint, rotationKeys }, null);
    const genesis = await signOperation(unsigned, this.rotationKey);
    const did = await didOfGenesis(genesis);
    await this.directory.submit(did, genesis);
    return did;
  }

  async updateHandle(did: string, handle: string): Promise<void> {
    const last = await this.requireOperation(did);
    const others = last.alsoKnownAs.filter((alias) => !alias.startsWith("at://"));
    await this.submit(did, await this.signUpdate(did, last, { ...fieldsOf(last), alsoKnownAs: [`at://${handle}`, ...others] }));
  }

  async tombstone(did: string): Promise<void> {
    const last = await this.directory.lastOperation(did);
    if (!last || last.type === "plc_tombstone") return;
    this.requireRotationKey(did, last);
    // did:plc specification: a tombstone's `prev` is the CID of the last operation, signed by one of its rotation keys.
    await this.directory.submit(did, await signOperation({ type: "plc_tombstone", prev: await operationCid(last) }, this.rotationKey));
  }

  async lastOperation(did: string): Promise<PlcOperation | PlcTombstone | undefined> {
    return this.directory.lastOperation(did);
  }

  async control(did: string): Promise<Control> {
    const last = await this.directory.lastOperation(did);
    if (!last) return "unknown";
    if (last.type === "plc_tombstone") return "ended";
    if (!last.rotationKeys.includes(this.rotationKeyDid)) return "elsewhere";
    return last.rotationKeys.length === 1 ? "sole" : "shared";
  }

  async signUpdate(did: string, last: PlcOperation, change: OperationFields): Promise<PlcOperation> {
    this.requireRotationKey(did, last);
    const { rotationKeys, verificationMethods, alsoKnownAs, services } = change;
    return signOperation({ type: "plc_operation", rotationKeys, verificationMethods, alsoKnownAs, services, prev: await operationCid(last) }, this.rotationKey);
  }

  async submit(did: string, operation: PlcOperation): Promise<void> {
    await this.directory.submit(did, operation);
  }

  async isRegistered(did: string): Promise<boolean> {
    return (await this.directory.lastOperation(did)) !== undefined;
  }

  /** The DID's last operation, which must be a live one: not registered, or tombstoned, is refused. */
  async requireOperation(did: string): Promise<PlcOperation> {
    const last = await this.directory.lastOperation(did);
    if (!last) throw new IdentityError("plc_not_registered", `${did} is not registered at the PLC directory ${this.directory.url} (npm run account -- register)`);
    if (last.type === "plc_tombstone") throw new IdentityError("plc_tombstoned", `${did} was tombstoned at the PLC directory ${this.directory.url}`);
    return last;
  }

  private requireRotationKey(did: string, last: PlcOperation): void {
    if (!last.rotationKeys.includes(this.rotationKeyDid)) {
      throw new IdentityError("plc_moved", `This server's rotation key is not among ${did}'s rotation keys: its DID document is managed elsewhere`);
    }
  }
}

/** The fields of an operation, without its chaining and signature. */
export function fieldsOf(operation: PlcOperation): OperationFields {
  const { rotationKeys, verificationMethods, alsoKnownAs, services } = operation;
  return { rotationKeys, verificationMethods, alsoKnownAs, services };
}
