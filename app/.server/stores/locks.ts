import { lock, rankRowWrites, type Program } from "../db/sql.ts";

/**
 * The locks that transactions take together, written once, in the one order every transaction takes them: two
 * transactions that took two of them in opposite orders could each hold what the other waits for. The driver refuses a
 * lock ranked below one its program already holds (db/sql.ts, runProgramSync/runProgramAsync), on both engines, so
 * that a store written against this order fails its tests rather than deadlocking in production.
 *
 * 1. an account's identifiers (handle, email, DID), when an account claims or changes them;
 * 2. an account's credentials (password, passkeys, sessions, grants: a sign-in stores a session on their strength);
 * 3. an account's data (its records, blobs and status: a commit, an upload's quota, a takedown, a deletion);
 * 4. one blob's stored copy (docs/decisions/0043);
 * 5. the sequencer, which numbers the firehose's events in commit order (docs/decisions/0027).
 *
 * On PostgreSQL each is a transaction-scoped advisory lock; on SQLite BEGIN IMMEDIATE already excludes every other
 * writer, and the order is checked all the same. Locks of one row's own (a consent, a request, an attempt counter) are
 * never held with another and are not ranked.
 */
const ORDER = ["account-identifier", "account-credentials", "account-data", "blob-content", "sequencer"] as const;

/**
 * An account's row is written under its identifiers' and credentials' locks (a sign-in's lastSignInAt, a password
 * change, a takedown): a write to it counts as holding the account's data lock, so that neither of those is asked
 * for after it. A reset that wrote the row and then asked for the credentials lock deadlocked on PostgreSQL with a
 * sign-in holding the lock and writing the row.
 */
rankRowWrites("Account", ORDER.indexOf("account-data"));

function* ranked(kind: (typeof ORDER)[number], key: string): Program<void> {
  yield* lock(key, ORDER.indexOf(kind));
}

/** An account's unique values (handle, email, DID), in sorted order: two processes cannot both find one free and take it. */
export function* lockIdentifiers(...values: string[]): Program<void> {
  for (const value of [...values].sort()) yield* ranked("account-identifier", `account-identifier:${value}`);
}

/**
 * An account's credentials (password, passkeys, lockdown), with the sign-ins that store a session on the strength of
 * them: on PostgreSQL READ COMMITTED would otherwise let a sign-in read the old password hash while a reset's
 * transaction is still open.
 */
export function* lockCredentials(did: string): Program<void> {
  yield* ranked("account-credentials", `account-credentials:${did}`);
}

/**
 * An account's records, blobs and status: an upload's quota sum, the references a record write adds or removes, a
 * status change and a deletion never interleave.
 */
export function* lockAccountData(did: string): Program<void> {
  yield* ranked("account-data", `account-data:${did}`);
}

/**
 * One CID's stored copy (docs/decisions/0043), taken by every step that makes an account have the CID (an upload's
 * insert, the legacy move) and by the sweep that deletes the copy once no account has it.
 */
export function* lockBlobContent(cid: string): Program<void> {
  yield* ranked("blob-content", `blob-content:${cid}`);
}

/** The sequencer: events are numbered in the order their transactions commit (docs/decisions/0027). */
export function* lockSequencer(): Program<void> {
  yield* ranked("sequencer", "repo-event-sequencer");
}
