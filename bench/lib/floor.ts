import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";

/**
 * The floor: the least work a DPoP-authenticated request that touches the
 * database can do on this machine, measured in this process. One ES256
 * signature verification with a prepared KeyObject, one INSERT and one
 * SELECT by primary key (prepared statements, WAL, same pragmas as the app).
 * Returns CPU microseconds (user + system) per iteration: the median of
 * `batches` batches, like the server's figures (see measure.ts).
 */
export function measureFloor(iterations = 5000, batches = 5): { cpuMicros: number } {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  // A prepared KeyObject, as a server would have it after importing a JWK once.
  const key = createPublicKey({ key: publicKey.export({ format: "jwk" }), format: "jwk" });
  // A signing input the size of a DPoP proof's header.payload.
  const signingInput = Buffer.from(`${randomBytes(180).toString("base64url")}.${randomBytes(120).toString("base64url")}`);
  const signature = sign("sha256", signingInput, { key: privateKey, dsaEncoding: "ieee-p1363" });

  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-floor-"));
  const db = new Database(path.join(dir, "floor.db"));
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.exec("CREATE TABLE item (id TEXT PRIMARY KEY, value TEXT NOT NULL, created_at INTEGER NOT NULL)");
    const insert = db.prepare("INSERT INTO item (id, value, created_at) VALUES (?, ?, ?)");
    const select = db.prepare("SELECT id, value, created_at FROM item WHERE id = ?");
    const value = randomBytes(48).toString("base64url");

    let counter = 0;
    const once = () => {
      if (!verify("sha256", signingInput, { key, dsaEncoding: "ieee-p1363" }, signature)) throw new Error("floor: signature did not verify");
      const id = `item-${counter++}-${value.slice(0, 8)}`;
      insert.run(id, value, Date.now());
      if (!select.get(id)) throw new Error("floor: row not found");
    };

    for (let i = 0; i < Math.min(500, iterations); i++) once();
    const perBatch: number[] = [];
    const size = Math.ceil(iterations / batches);
    for (let batch = 0; batch < batches; batch++) {
      const before = process.cpuUsage();
      for (let i = 0; i < size; i++) once();
      const used = process.cpuUsage(before);
      perBatch.push((used.user + used.system) / size);
    }
    perBatch.sort((a, b) => a - b);
    return { cpuMicros: perBatch[Math.floor(batches / 2)]! };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
