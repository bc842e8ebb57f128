import type { Keypair } from "@atproto/crypto";
import { accountKeypair } from "../accounts/signing-key.ts";
import { IdentityError } from "./identity-error.ts";
import type { PlcDirectory } from "./plc-directory.ts";
import { atprotoOperation, didOfGenesis, operationCid, signOperation, type PlcOperation } from "./plc-operation.ts";

/** What account creation and handle changes need from the identity system (docs/decisions/0028a-plc-identity.md). */
export interface IdentityRegistry {
  /**
   * Registers a new did:plc naming the handle, the account's key (its stored JWK) and this PDS; answers the DID.
   * `recoveryKey`, a did:key the person holds, goes above this server's rotation key (docs/decisions/0052).
   */
  register(account: { handle: string; signingKey: string; recoveryKey?: string }): Promise<string>;
  /** Points the DID's document at the new handle (a signed update operation), before the handle changes here. */
  updateHandle(did: string, handle: string): Promise<void>;
  /** Whether the directory knows the DID. */
  isRegistered(did: string): Promise<boolean>;
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

  async register(account: { handle: string; signingKey: string; recoveryKey?: string }): Promise<string> {
    const signingKey = (await accountKeypair(account.signingKey)).did();
    // did:plc specification: rotation keys are "ordered from highest to lowest priority"; the person's own comes first,
    // as the reference PDS places a recoveryKey given to createAccount.
    const rotationKeys = account.recoveryKey ? [account.recoveryKey, this.rotationKey.did()] : [this.rotationKey.did()];
    const unsigned = atprotoOperation({ handle: account.handle, signingKey, pdsEndpoint: this.pdsEndpoint, rotationKeys }, null);
    const genesis = await signOperation(unsigned, this.rotationKey);
    const did = await didOfGenesis(genesis);
    await this.directory.submit(did, genesis);
    return did;
  }

  async updateHandle(did: string, handle: string): Promise<void> {
    const last = await this.directory.lastOperation(did);
    if (!last) throw new IdentityError("plc_not_registered", `${did} is not registered at the PLC directory ${this.directory.url} (npm run account -- register)`);
    if (last.type === "plc_tombstone") throw new IdentityError("plc_refused", `${did} was tombstoned at the PLC directory ${this.directory.url}`);
    this.requireRotationKey(did, last);
    await this.directory.submit(did, await signOperation(withHandle(last, handle, await operationCid(last)), this.rotationKey));
  }

  async tombstone(did: string): Promise<void> {
    const last = await this.directory.lastOperation(did);
    if (!last || last.type === "plc_tombstone") return;
    this.requireRotationKey(did, last);
    // did:plc specification: a tombstone's `prev` is the CID of the last operation, signed by one of its rotation keys.
    await this.directory.submit(did, await signOperation({ type: "plc_tombstone", prev: await operationCid(last) }, this.rotationKey));
  }

  private requireRotationKey(did: string, last: PlcOperation): void {
    if (!last.rotationKeys.includes(this.rotationKey.did())) {
      throw new IdentityError("plc_refused", `This server's rotation key is not among ${did}'s rotation keys: its DID document is managed elsewhere`);
    }
  }

  async isRegistered(did: string): Promise<boolean> {
    return (await this.directory.lastOperation(did)) !== undefined;
  }
}

/** The last operation with `at://<handle>` as its first alias (other aliases kept), chained to it. */
function withHandle(last: PlcOperation, handle: string, prev: string) {
  const others = last.alsoKnownAs.filter((alias) => !alias.startsWith("at://"));
  return { ...stripSignature(last), alsoKnownAs: [`at://${handle}`, ...others], prev };
}

function stripSignature(operation: PlcOperation): Omit<PlcOperation, "sig"> {
  const { sig: _sig, ...unsigned } = operation;
  return unsigned;
}
