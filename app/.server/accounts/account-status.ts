import { parseCid } from "@atproto/lex-data";
import { AtriumError } from "../errors/atrium-error.ts";
import { accountEventBody, identityEventBody, syncEventBody } from "../sync/event-bodies.ts";
import type { NewEvent } from "../sync/event-log.ts";
import type { RepoStore } from "../repo/repo-store.ts";

/**
 * Deactivating and reactivating an account (docs/decisions/0031; com.atproto.server.deactivateAccount and
 * activateAccount semantics). Deactivation keeps everything: the records, the blobs, the apps the person allowed.
 * While deactivated, com.atproto.sync.* answers RepoDeactivated, listRepos and getRepoStatus say active=false
 * status=deactivated, the account's apps get AccountDeactivated from /xrpc, and no commit lands. Each change and
 * its firehose events are one step of the store (RepoStore.changeAccountStatus), so no commit can be sequenced
 * after the #account deactivated event.
 */

/** The subscribeRepos lexicon's #account status for an account the person deactivated. */
export const DEACTIVATED = "deactivated";

/** `since`: when it was deactivated (epoch ms). */
export type AccountStatus = { active: true } | { active: false; status: typeof DEACTIVATED; since: number };

/**
 * The reference PDS's answer to a deactivated account's credentials (AuthRequiredError "Account is deactivated",
 * `AccountDeactivated`, 401). It carries no DPoP challenge: the token is sound, and a client that refreshed it would
 * get the same answer.
 */
export function accountDeactivated(): AtriumError {
  return new AtriumError("AccountDeactivated", "Account is deactivated", { status: 401, xrpcName: "AccountDeactivated" });
}

export class AccountStatusManager {
  constructor(
    private readonly repo: RepoStore,
    private readonly handleOf: (did: string) => Promise<string | undefined>,
    private readonly now: () => number,
    /** Told after events were appended (this process's firehose reads them at once: docs/decisions/0029). */
    private readonly onAppended: () => void = () => {},
  ) {}

  async statusOf(did: string): Promise<AccountStatus | undefined> {
    const availability = await this.repo.availability(did);
    if (!availability) return undefined;
    const since = availability.deactivatedAt;
    return since === null ? { active: true } : { active: false, status: DEACTIVATED, since };
  }

  /**
   * The reference's deactivateAccount: the status changes and the #account event (active=false,
   * status=deactivated) is appended in the same transaction. Deactivating a deactivated account changes nothing
   * and announces nothing. False: no such account.
   */
  async deactivate(did: string): Promise<boolean> {
    const now = this.now();
    const event: NewEvent = { did, type: "account", body: accountEventBody({ did, active: false, status: DEACTIVATED, time: iso(now) }) };
    const outcome = await this.repo.changeAccountStatus(did, { deactivated: true }, now, [event]);
    if (outcome === "changed") this.onAppended();
    return outcome !== "no-account";
  }

  /**
   * The reference's activateAccount: #account (active), then #identity with the handle, then #sync with the
   * repository's current commit, so that a relay that dropped the repository re-resolves the identity and takes the
   * head without walking history. No commit lands on a deactivated repository, but an import does
   * (docs/decisions/0055): the change is made only if the head is still the one the #sync names, read again otherwise.
   */
  async activate(did: string): Promise<boolean> {
    for (let attempt = 1; attempt <= ACTIVATION_ATTEMPTS; attempt++) {
      const outcome = await this.activateAt(did);
      if (outcome !== "head-moved") return outcome;
    }
    throw new AtriumError("ActivationConflict", "The repository kept changing while the account was activated: try again", { status: 409, xrpcName: "ActivationConflict" });
  }

  private async activateAt(did: string): Promise<boolean | "head-moved"> {
    const [availability, handle] = await Promise.all([this.repo.availability(did), this.handleOf(did)]);
    if (!availability || handle === undefined) return false;
    if (availability.deactivatedAt === null) return true;
    const now = this.now();
    const time = iso(now);
    const events: NewEvent[] = [
      { did, type: "account", body: accountEventBody({ did, active: true, time }) },
      { did, type: "identity", body: identityEventBody({ did, handle, time }) },
    ];
    if (availability.head) {
      const commit = parseCid(availability.head.cid);
      const commitBlock = await this.repo.blockstore(did).getBytes(commit);
      if (commitBlock) events.push({ did, type: "sync", body: await syncEventBody({ did, commit, commitBlock, rev: availability.head.rev, time }) });
    }
    const outcome = await this.repo.changeAccountStatus(did, { deactivated: false, head: availability.head?.cid ?? null }, now, events);
    if (outcome === "head-moved") return outcome;
    if (outcome === "changed") this.onAppended();
    return outcome !== "no-account";
  }
}

/** Imports landing one after another while an activation reads the head: each attempt re-reads it. */
const ACTIVATION_ATTEMPTS = 3;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
