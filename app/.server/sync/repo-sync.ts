import { AtriumError } from "../errors/atrium-error.ts";
import type { RepoHead, RepoStore } from "../repo/repo-store.ts";
import { accountStateOf, type AccountState } from "../accounts/account-status.ts";

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
 * Who asks for a repository's data: the network (anyone), or the account's own owner or the operator, who are served
 * it while the account is deactivated or taken down, as the reference PDS serves them (its isUserOrAdmin), so that a
 * taken-down person can still export their data (docs/decisions/0051).
 */
export type SyncReader = "public" | "owner-or-admin";

/**
 * The repository's head, or the lexicons' error: RepoNotFound for an unknown DID (or an account without a repository
 * yet), RepoTakendown while the operator has taken it down, RepoDeactivated while its account is deactivated
 * (docs/decisions/0031, 0051; getRepo, getRecord, getLatestCommit, getBlocks, getBlob and listBlobs all list them).
 * The owner and the operator are told the head whatever the state (`reader`).
 */
export async function headOf(store: RepoStore, did: string, reader: SyncReader = "public"): Promise<RepoHead> {
  const availability = await store.availability(did);
  const head = availability?.head;
  refuseUnavailable(did, head, availability ? accountStateOf(availability) : "active", reader);
  return head;
}

export function refuseUnavailable(did: string, head: RepoHead | undefined, state: AccountState, reader: SyncReader): asserts head is RepoHead {
  if (!head) throw new SyncError("RepoNotFound", `Could not find repo for DID: ${did}`);
  if (reader === "owner-or-admin") return;
  // The reference's wording, ranked as its assertRepoAvailability ranks them.
  if (state === "takendown") throw new SyncError("RepoTakendown", `Repo has been takendown: ${did}`);
  if (state === "deactivated") throw new SyncError("RepoDeactivated", `Repo has been deactivated: ${did}`);
}
