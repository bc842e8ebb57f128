import { AtriumError } from "../errors/atrium-error.ts";
import type { RepoHead, RepoStore } from "../repo/repo-store.ts";

/**
 * What every com.atproto.sync.* method that serves a repository checks first (docs/decisions/0027, 0031); the CAR
 * files themselves are repo-exports.ts's.
 */

export class SyncError extends AtriumError {
  constructor(name: string, message: string, status = 400) {
    super(name, message, { status, xrpcName: name });
  }
}

/**
 * The repository's head, or the lexicons' error: RepoNotFound for an unknown DID (or an account without a repository
 * yet), RepoDeactivated while its account is deactivated (docs/decisions/0031; getRepo, getRecord, getLatestCommit,
 * getBlocks, getBlob and listBlobs all list it). Sync is public: unlike the reference, which still serves the
 * account's own signed-in requests, nobody here is told more than the network is.
 */
export async function headOf(store: RepoStore, did: string): Promise<RepoHead> {
  const availability = await store.availability(did);
  const head = availability?.head;
  refuseUnavailable(did, head, availability?.deactivatedAt != null);
  return head;
}

export function refuseUnavailable(did: string, head: RepoHead | undefined, deactivated: boolean): asserts head is RepoHead {
  if (!head) throw new SyncError("RepoNotFound", `Could not find repo for DID: ${did}`);
  if (deactivated) throw new SyncError("RepoDeactivated", `Repo has been deactivated: ${did}`);
}
