import type { EndTarget, NoticeRecipient, NoticeStore, StoredEndLink } from "../notices/notice-store.ts";
import { tables } from "../db/rows.generated.ts";
import { shape } from "../db/row-shape.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const cleanupLinks = expiredRowsCleanup("EndLink", "tokenHash");

/** An expired link is kept this long after, so that its page says it expired rather than that it never worked. */
const KEEP_EXPIRED_MS = 30 * 24 * 60 * 60 * 1000;

const LINK_ROW = shape({ ...tables.EndLink.columns, handle: "string" });

function targetOf(kind: string, target: string, since: number | null): EndTarget {
  return kind === "app" ? { kind: "app", clientId: target, since: since ?? 0 } : { kind: "browser", deviceHash: target };
}

/** The new-sign-in emails' state (docs/decisions/0056): two columns of the account and the EndLink rows. */
export class SqlNoticeStore implements NoticeStore {
  constructor(private readonly db: Database) {}

  async claimFirstBrowser(accountDid: string, now: number) {
    return this.db.execute(function* (): Program<boolean> {
      // The conditional UPDATE decides (docs/decisions/0017): of two first sign-ins at once, one is the first.
      return (yield* run(sql`UPDATE "Account" SET "firstBrowserAt" = ${at(now)} WHERE "did" = ${accountDid} AND "firstBrowserAt" IS NULL`)) > 0;
    });
  }

  async recipient(accountDid: string) {
    return this.db.execute(function* (): Program<NoticeRecipient | undefined> {
      return yield* get(tables.Account.pick("handle", "email", "signInNotices"), sql`SELECT "handle", "email", "signInNotices" FROM "Account" WHERE "did" = ${accountDid}`);
    });
  }

  async setSignInNotices(accountDid: string, on: boolean, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "Account" SET "signInNotices" = ${on}, "updatedAt" = ${at(now)} WHERE "did" = ${accountDid}`);
    });
  }

  async addLink(link: Omit<StoredEndLink, "usedAt">) {
    const { target } = link;
    const [kind, value, since] = target.kind === "app" ? ["app", target.clientId, target.since] : ["browser", target.deviceHash, null];
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupLinks(link.createdAt - KEEP_EXPIRED_MS));
      yield* run(sql`INSERT INTO "EndLink" ("tokenHash", "accountDid", "kind", "target", "label", "since", "createdAt", "expiresAt")
        VALUES (${link.tokenHash}, ${link.accountDid}, ${kind}, ${value}, ${link.label}, ${at(since)}, ${at(link.createdAt)}, ${at(link.expiresAt)})`);
    });
  }

  async findLink(tokenHash: string) {
    return this.db.execute(function* (): Program<(StoredEndLink & { handle: string }) | undefined> {
      const row = yield* get(LINK_ROW, sql`SELECT l."tokenHash" AS "tokenHash", l."accountDid" AS "accountDid", l."kind" AS "kind", l."target" AS "target",
          l."label" AS "label", l."since" AS "since", l."createdAt" AS "createdAt", l."expiresAt" AS "expiresAt", l."usedAt" AS "usedAt", a."handle" AS "handle"
        FROM "EndLink" l JOIN "Account" a ON a."did" = l."accountDid" WHERE l."tokenHash" = ${tokenHash}`);
      if (!row) return undefined;
      const { kind, target, since, ...rest } = row;
      return { ...rest, target: targetOf(kind, target, since) };
    });
  }

  async spendLink(tokenHash: string, now: number) {
    return this.db.execute(function* (): Program<boolean> {
      // One conditional statement decides a replay or two clicks at once: one spends it (docs/decisions/0017).
      return (yield* run(sql`UPDATE "EndLink" SET "usedAt" = ${at(now)} WHERE "tokenHash" = ${tokenHash} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)}`)) > 0;
    });
  }
}
