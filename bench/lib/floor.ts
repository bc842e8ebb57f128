import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { processCpuTicks } from "./cpu.ts";
import { median } from "./stats.ts";

/** An ES256 key pair, a signing input the size of a DPoP proof's header.payload, and its signature. */
function verification() {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  // A prepared KeyObject, as a server would have it after importing a JWK once.
  const key = createPublicKey({ key: publicKey.export({ format: "jwk" }), format: "jwk" });
  const signingInput = Buffer.from(`${randomBytes(180).toString("base64url")}.${randomBytes(120).toString("base64url")}`);
  const signature = sign("sha256", signingInput, { key: privateKey, dsaEncoding: "ieee-p1363" });
  return () => {
    if (!verify("sha256", signingInput, { key, dsaEncoding: "ieee-p1363" }, signature)) throw new Error("floor: signature did not verify");
  };
}

/**
 * The floor's work, once per call: one ES256 signature verification with a prepared KeyObject, one INSERT and one
 * SELECT by primary key (prepared statements, WAL, same pragmas as the app), on a database file in a folder of its
 * own. Also what the HTTP floor's server does per request (bench/http-floor.ts).
 */
export function sqliteFloorWork(): { once(): void; close(): void } {
  const verifyOnce = verification();
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-floor-"));
  const db = new Database(path.join(dir, "floor.db"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.exec("CREATE TABLE item (id TEXT PRIMARY KEY, value TEXT NOT NULL, created_at INTEGER NOT NULL)");
  const insert = db.prepare("INSERT INTO item (id, value, created_at) VALUES (?, ?, ?)");
  const select = db.prepare("SELECT id, value, created_at FROM item WHERE id = ?");
  const value = randomBytes(48).toString("base64url");
  let counter = 0;
  return {
    once() {
      verifyOnce();
      const id = `item-${counter++}-${value.slice(0, 8)}`;
      insert.run(id, value, Date.now());
      if (!select.get(id)) throw new Error("floor: row not found");
    },
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The floor: the least work a DPoP-authenticated request that touches the
 * database can do on this machine, measured in this process (sqliteFloorWork
 * in a loop). Returns CPU microseconds (user + system) per iteration: the
 * median of `batches` batches, like the server's figures (see measure.ts).
 */
export function measureFloor(iterations = 5000, batches = 5): { cpuMicros: number } {
  const work = sqliteFloorWork();
  try {
    for (let i = 0; i < Math.min(500, iterations); i++) work.once();
    const perBatch: number[] = [];
    const size = Math.ceil(iterations / batches);
    for (let batch = 0; batch < batches; batch++) {
      const before = process.cpuUsage();
      for (let i = 0; i < size; i++) work.once();
      const used = process.cpuUsage(before);
      perBatch.push((used.user + used.system) / size);
    }
    perBatch.sort((a, b) => a - b);
    return { cpuMicros: perBatch[Math.floor(batches / 2)]! };
  } finally {
    work.close();
  }
}

export type PostgresFloor = {
  /** CPU of this process (the client: verify, pg's protocol work, the event loop) per iteration, µs: the median batch's. */
  clientCpuMicros: number;
  /** CPU of the whole PostgreSQL cluster per iteration, µs (measured as the benchmark measures it per request): the median batch's. */
  postgresCpuMicros: number;
  /** CPU of the one backend serving this connection per iteration, µs: the median batch's. */
  backendCpuMicros: number;
  /** Wall time per iteration, µs (a durable commit waits for the disk): the median batch's. */
  wallMicros: number;
};

/**
 * The PostgreSQL floor: one ES256 verification, then one INSERT and one
 * SELECT by primary key through node-postgres as the server sends them (named
 * prepared statements through a pool, one autocommitted statement each), to
 * a database on the benchmark's cluster (durable commits). Client CPU from
 * process.cpuUsage(); PostgreSQL's from /proc around each batch: the cluster's
 * (`clusterTicks`) and the connection's backend alone. Each batch stops after 2 s
 * if it has not finished by then.
 */
export async function measurePostgresFloor(
  url: string,
  clusterTicks: () => number,
  ticksPerSecond: number,
  iterations = 1500,
  batches = 5,
): Promise<PostgresFloor> {
  const work = await postgresFloorWork(url);
  try {
    const backendPid = await work.backendPid();
    const once = () => work.once();

    for (let i = 0; i < Math.min(200, iterations); i++) await once();
    const size = Math.ceil(iterations / batches);
    const client: number[] = [];
    const postgres: number[] = [];
    const backend: number[] = [];
    const wall: number[] = [];
    const micros = (ticks: number) => (ticks * 1e6) / ticksPerSecond;
    for (let batch = 0; batch < batches; batch++) {
      const clusterBefore = clusterTicks();
      const backendBefore = processCpuTicks(backendPid);
      const started = performance.now();
      const before = process.cpuUsage();
      // At most 2 s a batch: the commits wait for the disk, which a busy machine can make slow.
      let done = 0;
      while (done < size && (done === 0 || performance.now() - started < 2000)) {
        await once();
        done++;
      }
      const used = process.cpuUsage(before);
      wall.push(((performance.now() - started) * 1000) / done);
      backend.push(micros(processCpuTicks(backendPid) - backendBefore) / done);
      postgres.push(micros(clusterTicks() - clusterBefore) / done);
      client.push((used.user + used.system) / done);
    }
    const mid = (values: number[]) => median([...values].sort((a, b) => a - b));
    return { clientCpuMicros: mid(client), postgresCpuMicros: mid(postgres), backendCpuMicros: mid(backend), wallMicros: mid(wall) };
  } finally {
    await work.close();
  }
}

/**
 * The PostgreSQL floor's work, once per call: one ES256 verification, then one INSERT and one SELECT by primary key
 * through node-postgres as the server sends them (named prepared statements through a pool of one connection, each
 * statement autocommitted: a durable commit for the INSERT), to the database `url` names. Also what the HTTP floor's
 * server does per request on PostgreSQL (bench/lib/http-floor.ts).
 */
export async function postgresFloorWork(url: string): Promise<{ once(): Promise<void>; backendPid(): Promise<number>; close(): Promise<void> }> {
  const verifyOnce = verification();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on("error", () => undefined);
  await pool.query("CREATE TABLE IF NOT EXISTS item (id TEXT PRIMARY KEY, value TEXT NOT NULL, created_at BIGINT NOT NULL)").catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  const insert = "INSERT INTO item (id, value, created_at) VALUES ($1, $2, $3)";
  const select = "SELECT id, value, created_at FROM item WHERE id = $1";
  const value = randomBytes(48).toString("base64url");
  const prefix = randomBytes(4).toString("hex");
  let counter = 0;
  return {
    async once() {
      verifyOnce();
      const id = `item-${prefix}-${counter++}`;
      await pool.query({ name: "floor_insert", text: insert, values: [id, value, Date.now()] });
      if (!(await pool.query({ name: "floor_select", text: select, values: [id] })).rows[0]) throw new Error("floor: row not found");
    },
    async backendPid() {
      return (await pool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    },
    close: () => pool.end(),
  };
}
