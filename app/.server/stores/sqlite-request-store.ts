import type Database from "better-sqlite3";
import type { AuthorizationParameters, RequestStore, StoredAuthorizationRequest } from "../oauth/request/request-store.ts";
import { clientKeyColumns, clientKeyFromColumns, type ClientKeyColumns } from "./client-key-columns.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

type Row = ClientKeyColumns & {
  idHash: string;
  clientId: string;
  parameters: string;
  dpopJkt: string;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
};

export class SqliteRequestStore implements RequestStore {
  private readonly statements;

  constructor(db: Database.Database) {
    this.statements = {
      insert: db.prepare(
        `INSERT INTO "AuthorizationRequest" (idHash, clientId, parameters, dpopJkt, clientKeyId, clientKeyAlg, clientKeyJkt, createdAt, expiresAt, consumedAt)
         VALUES (@idHash, @clientId, @parameters, @dpopJkt, @clientKeyId, @clientKeyAlg, @clientKeyJkt, @createdAt, @expiresAt, NULL)`,
      ),
      cleanup: db.prepare(
        deleteExpiredSql("AuthorizationRequest", "idHash"),
      ),
      find: db.prepare(`SELECT * FROM "AuthorizationRequest" WHERE idHash = ?`),
      deleteOne: db.prepare(`DELETE FROM "AuthorizationRequest" WHERE idHash = ?`),
      extend: db.prepare(`UPDATE "AuthorizationRequest" SET expiresAt = MAX(expiresAt, ?) WHERE idHash = ? AND consumedAt IS NULL`),
      consume: db.prepare(
        `UPDATE "AuthorizationRequest" SET consumedAt = ? WHERE idHash = ? AND consumedAt IS NULL AND expiresAt > ?`,
      ),
    };
  }

  create(request: StoredAuthorizationRequest): void {
    this.statements.cleanup.run(request.createdAt);
    const { clientKey, ...columns } = request;
    this.statements.insert.run({ ...columns, ...clientKeyColumns(clientKey), parameters: JSON.stringify(request.parameters) });
  }

  findActive(idHash: string, now: number): StoredAuthorizationRequest | undefined {
    const row = this.statements.find.get(idHash) as Row | undefined;
    if (!row) return undefined;
    if (row.expiresAt <= now) {
      this.statements.deleteOne.run(idHash);
      return undefined;
    }
    if (row.consumedAt !== null) return undefined;
    return {
      idHash: row.idHash,
      clientId: row.clientId,
      parameters: JSON.parse(row.parameters) as AuthorizationParameters,
      dpopJkt: row.dpopJkt,
      clientKey: clientKeyFromColumns(row),
      createdAt: row.createdAt,
      expiresAt: row.expiresAt,
    };
  }

  extend(idHash: string, until: number): void {
    this.statements.extend.run(until, idHash);
  }

  consume(idHash: string, now: number): boolean {
    return this.statements.consume.run(now, idHash, now).changes === 1;
  }
}
