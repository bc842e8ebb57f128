import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { PostgresDatabase } from "../db/postgres-database.ts";
import { errorReporter, isDatabaseError } from "./report-error.ts";

function sqliteError(): unknown {
  const db = new Database(":memory:");
  try {
    db.prepare("SELECT * FROM missing_table").get();
  } catch (error) {
    return error;
  } finally {
    db.close();
  }
  throw new Error("expected an SqliteError");
}

describe("isDatabaseError", () => {
  it("recognises better-sqlite3's errors, Prisma's, and errors caused by either", () => {
    expect(isDatabaseError(sqliteError())).toBe(true);
    expect(isDatabaseError(Object.assign(new Error("x"), { name: "PrismaClientKnownRequestError", code: "P2002" }))).toBe(true);
    expect(isDatabaseError(Object.assign(new Error("x"), { name: "DriverAdapterError" }))).toBe(true);
    expect(isDatabaseError(new Error("wrapped", { cause: sqliteError() }))).toBe(true);
    expect(isDatabaseError(Object.assign(new Error("busy"), { code: "SQLITE_BUSY" }))).toBe(true);
  });

  it("recognises what the PostgreSQL engine passes on: a failed statement, a refused connection", async () => {
    // A pool on a port nothing listens on: the refusal comes from the engine, marked as the database's.
    const unreachable = new PostgresDatabase("postgresql://atrium@127.0.0.1:1/atrium", { poolSize: 1 });
    const refused = await Promise.resolve(unreachable.ping()).catch((error: unknown) => error);
    await unreachable.close();
    expect(isDatabaseError(refused)).toBe(true);
    // The same kind of error, not from the engine, is not counted.
    expect(isDatabaseError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }))).toBe(false);
  });

  it("does not count other errors", () => {
    expect(isDatabaseError(new TypeError("x is undefined"))).toBe(false);
    expect(isDatabaseError("text")).toBe(false);
    expect(isDatabaseError(null)).toBe(false);
    expect(isDatabaseError(Object.assign(new Error("fetch failed"), { code: "ECONNREFUSED" }))).toBe(false);
  });
});

describe("errorReporter", () => {
  it("logs at error with the error and the request id, and counts database errors only", () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const log = { error: (fields: object, message: string) => lines.push({ fields: fields as Record<string, unknown>, message }), warn() {}, info() {}, debug() {} };
    let databaseErrors = 0;
    const report = errorReporter(log, { databaseError: () => databaseErrors++ });
    const bug = new TypeError("a bug");
    report("Unexpected error while handling a request", bug, "req-id-1");
    report("Unexpected error while handling a request", sqliteError());
    expect(databaseErrors).toBe(1);
    expect(lines[0]).toEqual({ fields: { err: bug, reqId: "req-id-1" }, message: "Unexpected error while handling a request" });
    expect(lines[1]!.fields).not.toHaveProperty("reqId");
  });
});
