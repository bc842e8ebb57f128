import { AtriumError } from "../errors/atrium-error.ts";
import { atprotoPdsEndpoint, atprotoSigningKey, type DidDocument } from "../identity/did-document.ts";
import type { PlcOperation, PlcTombstone } from "../identity/plc-operation.ts";
import type { ImportStatus, MissingBlob, RepoImportStore } from "../repo/repo-import-store.ts";
import type { AccountStatusManager } from "./account-status.ts";

/** What the DID says of its account, as the steps of a move read it (the latest PLC operation, or the DID document). */
export type PublishedIdentity = { rotationKeys?: readonly string[]; signingKey?: string; pdsEndpoint?: string };

export type MovingInDependencies = {
  imports: RepoImportStore;
  accountStatus: AccountStatusManager;
  /** The account's signing key here, as a did:key; undefined for no such account. */
  signingDidKey: (did: string) => Promise<string | undefined>;
  /** The DID's identity as published now: did:plc from the directory itself (no cache), did:web from its document. */
  published: (did: string) => Promise<PublishedIdentity | undefined>;
  /** This server's PLC rotation key (did:key) and its public URL, which a DID served here must name. */
  rotationDidKey: string;
  pdsEndpoint: string;
};

/** com.atproto.server.checkAccountStatus's answer (its lexicon's output). */
export type AccountMoveStatus = {
  activated: boolean;
  validDid: boolean;
  repoCommit: string;
  repoRev: string;
  repoBlocks: number;
  indexedRecords: number;
  privateStateValues: number;
  expectedBlobs: number;
  importedBlobs: number;
};

/**
 * The steps of moving an account here after its repository (docs/decisions/0055), as the reference PDS answers them:
 * checkAccountStatus (how far the move has come), listMissingBlobs (what uploadBlob must still bring), and
 * activateAccount, which refuses until the DID document names this server and the account's key here, so that the
 * firehose never announces an account the network would not find here.
 */
export class MovingIn {
  constructor(private readonly deps: MovingInDependencies) {}

  async status(did: string): Promise<AccountMoveStatus> {
    const [status, activation, problem] = await Promise.all([this.deps.imports.status(did), this.deps.accountStatus.statusOf(did), this.identityProblem(did)]);
    if (!status || !activation) throw accountNotFound();
    return answerOf(status, activation.active, problem === undefined);
  }

  async missingBlobs(did: string, options: { limit: number; cursor?: string }): Promise<{ blobs: Array<{ cid: string; recordUri: string }>; cursor?: string }> {
    const missing = await this.deps.imports.missingBlobs(did, options);
    const blobs = missing.map((blob: MissingBlob) => ({ cid: blob.cid, recordUri: `at://${did}/${blob.collection}/${blob.rkey}` }));
    // The reference's cursor: the last CID of a page, also of a page shorter than the limit.
    return blobs.length > 0 ? { blobs, cursor: blobs.at(-1)!.cid } : { blobs };
  }

  /** activateAccount: only once the DID's identity names this server (the reference's assertValidDidDocumentForService). */
  async activate(did: string): Promise<void> {
    const problem = await this.identityProblem(did);
    if (problem !== undefined) throw new AtriumError("invalid_identity", problem, { status: 400, xrpcName: "InvalidRequest" });
    if (!(await this.deps.accountStatus.activate(did))) throw accountNotFound();
  }

  /** Why the DID's published identity does not point here, in the reference's words; undefined when it does. */
  private async identityProblem(did: string): Promise<string | undefined> {
    const [published, signingKey] = await Promise.all([this.deps.published(did).catch(() => undefined), this.deps.signingDidKey(did)]);
    if (!published) return `Could not resolve ${did}'s DID document`;
    if (published.rotationKeys !== undefined && !published.rotationKeys.includes(this.deps.rotationDidKey)) {
      return "Server rotation key not included in PLC DID data: submit the PLC operation that names this server (com.atproto.identity.submitPlcOperation) first";
    }
    if (published.pdsEndpoint !== this.deps.pdsEndpoint) return `DID document atproto_pds service endpoint does not match PDS public url (${this.deps.pdsEndpoint})`;
    if (signingKey === undefined || published.signingKey !== signingKey) return "DID document verification method does not match expected signing key";
    return undefined;
  }
}

/** A did:plc's identity from its latest operation (what the directory's document is built from), none once tombstoned. */
export function publishedByPlc(last: PlcOperation | PlcTombstone | undefined): PublishedIdentity | undefined {
  if (!last || last.type !== "plc_operation") return undefined;
  return { rotationKeys: last.rotationKeys, signingKey: last.verificationMethods.atproto, pdsEndpoint: last.services.atproto_pds?.endpoint };
}

/** A did:web's identity from its document (it has no rotation keys). */
export function publishedByDocument(document: DidDocument): PublishedIdentity {
  return { signingKey: atprotoSigningKey(document), pdsEndpoint: atprotoPdsEndpoint(document) };
}

function answerOf(status: ImportStatus, activated: boolean, validDid: boolean): AccountMoveStatus {
  return {
    activated,
    validDid,
    // Every account here has a first commit (docs/decisions/0027): the lexicon requires both.
    repoCommit: status.head?.cid ?? "",
    repoRev: status.head?.rev ?? "",
    repoBlocks: status.blocks,
    indexedRecords: status.records,
    privateStateValues: 0,
    expectedBlobs: status.expectedBlobs,
    importedBlobs: status.importedBlobs,
  };
}

/** The reference's answer for an account that is not (or no longer) here. */
function accountNotFound(): AtriumError {
  return new AtriumError("account_not_found", "user not found", { status: 400, xrpcName: "AccountNotFound" });
}
