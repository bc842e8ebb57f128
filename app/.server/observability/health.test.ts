import { SqliteDatabase } from "../db/sqlite-database.ts";
import { describe, expect, it } from "vitest";
import { healthEndpoint } from "./health.ts";

describe("GET /xrpc/_health (healthEndpoint)", () => {
  it("answers 200 with the version while the check passes, never cached", async () => {
    const reports: unknown[] = [];
    const response = await healthEndpoint("1.2.3", async () => {}, (...args) => reports.push(args))();
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body as string)).toEqual({ version: "1.2.3" });
    expect(response.headers["Cache-Control"]).toBe("no-store");
    expect(reports).toEqual([]);
  });

  it("answers 503 in the XRPC error shape (and the version) when the check throws, and reports the error", async () => {
    const failure = Object.assign(new Error("file is not a database"), { code: "SQLITE_NOTADB" });
    const reports: unknown[][] = [];
    const response = await healthEndpoint(
      "1.2.3",
      async () => {
        throw failure;
      },
      (...args) => reports.push(args),
    )();
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body as string)).toEqual({ error: "ServiceUnavailable", message: "The database does not answer", version: "1.2.3" });
    expect(response.headers).toMatchObject({ "Cache-Control": "no-store", "Retry-After": "5", "Content-Type": "application/json" });
    expect(reports).toEqual([["Health check failed: the database does not answer", failure]]);
  });
});

describe("SqliteDatabase.ping (the health check of the embedded engine)", () => {
  it("passes on an open database and throws once the connection is closed", async () => {
    const db = new SqliteDatabase(":memory:");
    expect(() => db.ping()).not.toThrow();
    await db.close();
    expect(() => db.ping()).toThrow();
  });
});
