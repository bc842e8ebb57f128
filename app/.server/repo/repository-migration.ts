import type { Logger } from "../observability/logger.ts";
import type { RepoStore } from "./repo-store.ts";
import type { RepoWriter } from "./repo-writer.ts";

/** Accounts read per round; each is migrated in its own transaction. */
const BATCH = 50;

/**
 * Gives every account that has no repository yet its first commit, holding its records (docs/decisions/0027,
 * docs/operations.md, "Upgrading"). Run at start, after the SQL migrations. It cannot be SQL: commits are signed and MSTs built
 * with @atproto/repo. Each account is one transaction, so an interrupted run leaves every account either migrated or
 * untouched, and running it again (or in several processes at once: the head's insert decides) finishes the rest.
 */
export async function migrateRepositories(store: RepoStore, writer: RepoWriter, log: Logger): Promise<number> {
  let migrated = 0;
  for (;;) {
    const accounts = await store.accountsWithoutRepository(BATCH);
    if (accounts.length === 0) {
      if (migrated > 0) log.info({ accounts: migrated }, "Gave existing accounts their repository's first commit");
      return migrated;
    }
    for (const account of accounts) {
      const outcome = await writer.migrateAccount(account);
      if (outcome.migrated) migrated++;
      for (const record of outcome.dropped) {
        log.warn({ did: account.did, path: record.path, reason: record.reason }, "A record the atproto data model cannot hold was left out of the repository and deleted");
      }
    }
  }
}
