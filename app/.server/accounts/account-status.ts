import { parseCid } from "@atproto/lex-data";
import { AtriumError } from "../errors/atrium-error.ts";
import { accountEventBody, identityEventBody, syncEventBody } from "../sync/event-bodies.ts";
import type { NewEvent } from "../sync/event-log.ts";
import type { RepoStore } from "../repo/repo-store.ts";
import type { TakedownStore } from "./takedown-store.ts";

/**
 * An account's status, as the person, the network and the apps see it (docs/decisions/0031, 0051). Two columns of
 * the account decide it: `deactivatedAt` (the person paused it; com.atproto.server.deactivateAccount semantics) and
 * `takendownAt` (the operator took it down; com.atproto.admin.updateSubjectStatus). A taken-down account is
 * "takendown" whether or not it is also deactivated, as the reference PDS's formatAccountStatus ranks them.
 *
 * Deactivation keeps everything: the records, the blobs, the apps the person allowed. A takedown ends every token and
 * session of the account at once and refuses new ones; the records and blobs stay, and an untakedown restores the
 * account (not the old tokens). While either holds, com.atproto.sync.* answers RepoDeactivated or RepoTakendown,
 * listRepos and getRepoStatus say active=false with the status, and no commit lands. Each change and its firehose
 * events are one step of the store (RepoStore.changeAccountStatus, TakedownStore.changeAccountTakedown), under the lock
 * every commit takes, so that no commit can be sequenced after the #account event that says the account stopped.
 */

/** The subscribeRepos lexicon's #account status for an account the person deactivated. */
export const DEACTIVATED = "deactivated";
/** The subscribeRepos lexicon's #account status for an account the operator took down. */
export const TAKENDOWN = "takendown";

/** The one place an account's state is read from its columns: every check of it (sync, tokens, sign-in) asks this. */
export type AccountState = "active" | typeof DEACTIVATED | typeof TAKENDOWN;

export function accountStateOf(account: { deactivatedAt: number | null; takendownAt: number | null }): AccountState {
  if (account.takendownAt !== null) return TAKENDOWN;
  if (account.deactivatedAt !== null) return DEACTIVATED;
  return "active";
}

/** The lexicons' `active` and `status` (listRepos, getRepoStatus, getSession, #account) for a state. */
export function statusFields(state: AccountState): { active: true } | { active: false; status: typeof DEACTIVATED | typeof TAKENDOWN } {
  return state === "active" ? { active: true } : { active: false, status: state };
}

/** `since`: when it was deactivated or taken down (epoch ms); `ref`: the operator's reference for a takedown. */
export type AccountStatus =
  | { active: true }
  | { active: false; status: typeof DEACTIVATED; since: number }
  | { active: false; status: typeof TAKENDOWN; since: number; ref: string };

/**
 * The reference PDS's answer to a deactivated account's credentials (AuthRequiredError "Account is deactivated",
 * `AccountDeactivated`, 401). It carries no DPoP challenge: the token is sound, and a client that refreshed it would
 * get the same answer.
 */
export function accountDeactivated(): AtriumError {
  return new AtriumError("AccountDeactivated", "Account is deactivated", { status: 401, xrpcName: "AccountDeactivated" });
}

/** The reference PDS's answer to a taken-down account's credentials (AuthRequiredError, `AccountTakedown`, 401). */
export function accountTakenDown(): AtriumError {
  return new AtriumError("AccountTakedown", "Account has been taken down", { status: 401, xrpcName: "AccountTakedown", messageKey: "errors:signIn.takenDown" });
}

/** What a takedown or its reversal did: false when there was no such account. */
export type TakedownOutcome = { found: boolean; changed: boolean };

export class AccountStatusManager {
  constructor(
    private readonly repo: RepoStore,
    private readonly takedowns: TakedownStore,
    private readonly handleOf: (did: string) => Promise<string | undefined>,
    private readonly now: () => number,
    /** Told after events were appended (this process's firehose reads them at once: docs/decisions/0029). */
    private readonly onAppended: () => void = () => {},
  ) {}

  async statusOf(did: string): Promise<AccountStatus | undefined> {
    const availability = await this.repo.availability(did);
    if (!availability) return undefined;
    const { deactivatedAt, takendownAt, takedownRef } = availability;
    if (takendownAt !== null) return { active: false, status: TAKENDOWN, since: takendownAt, ref: takedownRef ?? "" };
    return deactivatedAt === null ? { active: true } : { active: false, status: DEACTIVATED, since: deactivatedAt };
  }

  /** The account's state; undefined when there is no such account. */
  async stateOf(did: string): Promise<AccountState | undefined> {
    const availability = await this.repo.availability(did);
    return availability && accountStateOf(availability);
  }

  /**
   * The reference's deactivateAccount: the status changes and the #account event (active=false,
   * status=deactivated) is appended in the same transaction. Deactivating a deactivated account changes nothing
   * and announces nothing. False: no such account. A taken-down account's deactivation is the operator's to keep:
   * refused with AccountTakedown.
   */
  async deactivate(did: string): Promise<boolean> {
    const now = this.now();
    const event: NewEvent = { did, type: "account", body: accountEventBody({ did, active: false, status: DEACTIVATED, time: iso(now) }) };
    const outcome = await this.repo.changeAccountStatus(did, { deactivated: true }, now, [event]);
    if (outcome === "takendown") throw accountTakenDown();
    if (outcome === "changed") this.onAppended();
    return outcome !== "no-account";
  }

  /**
   * The reference's activateAccount: #account (active), then #identity with the handle, then #sync with the
   * repository's current commit, so that a relay that dropped the repository re-resolves the identity and takes the
   * head without walking history. No commit lands on a deactivated repository, but an import does
   * (docs/decisions/0055): the change is made only if the head is still the one the #sync names, read again otherwise.
   * As in the reference, a taken-down account cannot be activated (AccountTakedown).
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
    if (availability.takendownAt !== null) throw accountTakenDown();
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
    if (outcome === "takendown") throw accountTakenDown();
    if (outcome === "head-moved") return outcome;
    if (outcome === "changed") this.onAppended();
    return outcome !== "no-account";
  }

  /**
   * The operator's takedown (com.atproto.admin.updateSubjectStatus, docs/decisions/0051): in one transaction, the
   * account is marked taken down with `ref`, every browser session, authorization code and grant (with its tokens)
   * of the account is deleted, and #account {active: false, status: "takendown"} is appended; a takedown of a
   * taken-down account only replaces its reference.
   */
  async takedown(did: string, ref: string): Promise<TakedownOutcome> {
    const outcome = await this.takedowns.changeAccountTakedown(did, { ref }, this.now());
    if (outcome.changed) this.onAppended();
    return outcome;
  }

  /**
   * The untakedown: the account is served and may sign in again, and #account says its status as it now is (active,
   * or deactivated when the person had deactivated it). Nothing the takedown ended comes back.
   */
  async reverseTakedown(did: string): Promise<TakedownOutcome> {
    const outcome = await this.takedowns.changeAccountTakedown(did, null, this.now());
    if (outcome.changed) this.onAppended();
    return outcome;
  }
}

/** Imports landing one after another while an activation reads the head: each attempt re-reads it. */
const ACTIVATION_ATTEMPTS = 3;

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
