import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, unsafeConfigWarnings } from "./config.ts";

/** The keys an https issuer must be given (docs/decisions/0050): any 64 hex digits pass the settings' check. */
const PRODUCTION_KEYS = { ATRIUM_PLC_ROTATION_KEY: "1".repeat(64), ATRIUM_KEY_ENCRYPTION_KEY: "2".repeat(64) };

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("has development defaults for an empty environment", () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.host).toBe("127.0.0.1");
    expect(config.issuer).toBe("http://localhost:3000");
    expect(config.publicUrl.href).toBe("http://localhost:3000/");
    expect(config.database).toEqual({ engine: "sqlite", url: "file:./data/atrium.db", path: "./data/atrium.db" });
    expect(config.allowPrivateClients).toBe(false);
    expect(config.trustProxy).toEqual({ kind: "none" });
    expect(config.dpopMaxAgeMs).toBe(60_000);
    expect(config.dpopMaxFutureMs).toBe(10_000);
    expect(config.dpopNonceSecret).toBeUndefined();
    expect(config.lifetimes.accessToken).toBe(60 * 60_000);
  });

  it("derives the default issuer from PORT", () => {
    const config = loadConfig({ PORT: "8080" });
    expect(config.port).toBe(8080);
    expect(config.issuer).toBe("http://localhost:8080");
  });

  it("accepts an https PUBLIC_URL and uses its origin as the issuer", () => {
    expect(loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com" }).issuer).toBe("https://pds.example.com");
    expect(loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com/" }).issuer).toBe("https://pds.example.com");
    expect(loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://PDS.Example.com:8443" }).issuer).toBe("https://pds.example.com:8443");
  });

  it("accepts plain http for loopback hosts", () => {
    expect(loadConfig({ PUBLIC_URL: "http://127.0.0.1:3000" }).issuer).toBe("http://127.0.0.1:3000");
    expect(loadConfig({ PUBLIC_URL: "http://[::1]:3000" }).issuer).toBe("http://[::1]:3000");
    expect(loadConfig({ PUBLIC_URL: "http://127.0.0.2:3000" }).issuer).toBe("http://127.0.0.2:3000");
  });

  it.each(["http://pds.example.com", "http://10.0.0.5:3000", "http://localhost.example.com"])("refuses plain http on a non-loopback host: %s", (url) => {
    expect(configError({ PUBLIC_URL: url }).message).toMatch(/https/);
  });

  it.each(["https://pds.example.com/atrium", "https://pds.example.com/?x=1", "https://pds.example.com/#frag", "https://user:pw@pds.example.com"])(
    "refuses a PUBLIC_URL that is not an origin: %s",
    (url) => {
      expect(configError({ PUBLIC_URL: url }).message).toMatch(/origin/);
    },
  );

  it.each(["not a url", "ftp://pds.example.com", ""])("refuses an unusable PUBLIC_URL: %j", (url) => {
    configError({ PUBLIC_URL: url });
  });

  it.each(["abc", "70000", "-1", "3000.5"])("refuses PORT=%s with a message naming PORT", (port) => {
    const error = configError({ PORT: port });
    expect(error.message).toMatch(/Invalid configuration/);
    expect(error.message).toMatch(/PORT/);
  });

  it("does not turn an empty PORT into port 0 (issuer http://localhost:0)", () => {
    // PORT= (set but empty) is common in .env files and compose files.
    let config;
    try {
      config = loadConfig({ PORT: "" });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return;
    }
    expect(config.port).toBe(3000);
    expect(config.issuer).toBe("http://localhost:3000");
  });

  it("takes a PostgreSQL DATABASE_URL with its pool size, and refuses any other, saying what is expected", () => {
    expect(loadConfig({ DATABASE_URL: "postgresql://atrium:secret@db.internal:5432/atrium" }).database).toEqual({
      engine: "postgresql",
      url: "postgresql://atrium:secret@db.internal:5432/atrium",
      poolSize: 10,
      snapshotPoolSize: 8,
    });
    expect(loadConfig({ DATABASE_URL: "postgres://db/atrium", ATRIUM_DATABASE_POOL_SIZE: "25" }).database).toMatchObject({ engine: "postgresql", poolSize: 25 });
    expect(configError({ DATABASE_URL: "mysql://db/atrium" }).message).toMatch(/DATABASE_URL.*file:.*postgresql:/s);
    expect(configError({ DATABASE_URL: "postgres://db/atrium", ATRIUM_DATABASE_POOL_SIZE: "0" }).message).toMatch(/ATRIUM_DATABASE_POOL_SIZE/);
  });

  it("takes the repository exports' caps and times (docs/decisions/0042); their snapshots' pool is as large as their cap", () => {
    expect(loadConfig({}).repoExports).toEqual({ perAddress: 4, inAll: 8, idleMs: 60_000, maxMs: 900_000 });
    const config = loadConfig({
      DATABASE_URL: "postgres://db/atrium",
      ATRIUM_REPO_EXPORTS_PER_ADDRESS: "2",
      ATRIUM_REPO_EXPORTS_MAX: "5",
      ATRIUM_REPO_EXPORT_IDLE_SECONDS: "10",
      ATRIUM_REPO_EXPORT_MAX_SECONDS: "120",
    });
    expect(config.repoExports).toEqual({ perAddress: 2, inAll: 5, idleMs: 10_000, maxMs: 120_000 });
    expect(config.database).toMatchObject({ poolSize: 10, snapshotPoolSize: 5 });
    expect(configError({ ATRIUM_REPO_EXPORTS_MAX: "0" }).message).toMatch(/ATRIUM_REPO_EXPORTS_MAX/);
    expect(configError({ ATRIUM_REPO_EXPORT_IDLE_SECONDS: "soon" }).message).toMatch(/ATRIUM_REPO_EXPORT_IDLE_SECONDS/);
  });

  it("takes the sign-in throttle's first wait in seconds, and never caps the doubling below it", () => {
    expect(loadConfig({}).signInThrottle).toMatchObject({ baseDelayMs: 1_000, maxDelayMs: 15 * 60_000 });
    expect(loadConfig({ ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: "60" }).signInThrottle).toMatchObject({ baseDelayMs: 60_000, maxDelayMs: 15 * 60_000 });
    expect(configError({ ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: "0" }).message).toMatch(/ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS/);
  });

  it("warns when PostgreSQL is reached over the network without TLS, not when it is local or TLS is asked for", () => {
    const warningsFor = (url: string) => unsafeConfigWarnings(loadConfig({ DATABASE_URL: url, ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com" }));
    expect(warningsFor("postgresql://atrium@db.internal/atrium").join("\n")).toMatch(/db\.internal without TLS/);
    expect(warningsFor("postgresql://atrium@db.internal/atrium?sslmode=verify-full")).toEqual([]);
    expect(warningsFor("postgresql://atrium@127.0.0.1:5432/atrium")).toEqual([]);
    expect(warningsFor("postgresql://atrium@localhost/atrium")).toEqual([]);
  });

  it("refuses short secrets", () => {
    expect(configError({ ATRIUM_DPOP_NONCE_SECRET: "short" }).message).toMatch(/ATRIUM_DPOP_NONCE_SECRET/);
    expect(configError({ ATRIUM_COOKIE_SECRET: "short" }).message).toMatch(/ATRIUM_COOKIE_SECRET/);
  });

  it("ATRIUM_PLC_DIRECTORY_URL: https, or http on loopback with a warning; anything else refused at start", () => {
    expect(loadConfig({}).plc.directoryUrl).toBe("https://plc.directory");
    expect(loadConfig({ ATRIUM_PLC_DIRECTORY_URL: "https://plc.example.com/" }).plc.directoryUrl).toBe("https://plc.example.com");
    const local = loadConfig({ ATRIUM_PLC_DIRECTORY_URL: "http://127.0.0.1:2582" });
    expect(local.plc.directoryUrl).toBe("http://127.0.0.1:2582");
    expect(local.permissionSets.plcDirectoryUrl).toBe("http://127.0.0.1:2582"); // one setting for both
    expect(unsafeConfigWarnings(local).join("\n")).toMatch(/ATRIUM_PLC_DIRECTORY_URL is http:\/\/127\.0\.0\.1:2582/);
    for (const refused of ["http://plc.example.com", "ftp://127.0.0.1", "https://user:pass@plc.example.com", "not a url"]) {
      expect(configError({ ATRIUM_PLC_DIRECTORY_URL: refused }).message).toMatch(/ATRIUM_PLC_DIRECTORY_URL: must be an https URL/);
    }
  });

  it("ATRIUM_PLC_ROTATION_KEY: 64 hex digits or unset", () => {
    expect(loadConfig({}).plc.rotationKeyHex).toBeUndefined();
    expect(loadConfig({ ATRIUM_PLC_ROTATION_KEY: "AB".repeat(32) }).plc.rotationKeyHex).toBe("ab".repeat(32));
    expect(configError({ ATRIUM_PLC_ROTATION_KEY: "abc" }).message).toMatch(/ATRIUM_PLC_ROTATION_KEY: must be a secp256k1 private key/);
  });

  it("refuses an unknown boolean flag value", () => {
    expect(configError({ ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "maybe" }).message).toMatch(/ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS/);
  });

  it.each([
    ["1", true],
    ["true", true],
    ["yes", true],
    ["on", true],
    ["0", false],
    ["false", false],
    ["", false],
  ])("reads ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS=%j as %s", (value, expected) => {
    expect(loadConfig({ ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: value }).allowPrivateClients).toBe(expected);
  });

  it.each([
    ["", { kind: "none" }],
    ["off", { kind: "none" }],
    ["0", { kind: "none" }],
    ["true", { kind: "hops", hops: 1 }],
    ["1", { kind: "hops", hops: 1 }],
    ["2", { kind: "hops", hops: 2 }],
  ])("reads ATRIUM_TRUST_PROXY=%j as %j", (value, expected) => {
    expect(loadConfig({ ATRIUM_TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it("reads ATRIUM_TRUST_PROXY as a list of proxy addresses and CIDR ranges", () => {
    const trusted = loadConfig({ ATRIUM_TRUST_PROXY: "127.0.0.1, 10.0.0.0/8, fd00::/8" }).trustProxy;
    expect(trusted).toMatchObject({ kind: "addresses", ranges: ["127.0.0.1", "10.0.0.0/8", "fd00::/8"] });
  });

  it.each(["maybe", "10.0.0.0/33", "10.0.0.999", "11", "10.0.0.1,,10.0.0.2"])("refuses ATRIUM_TRUST_PROXY=%j, naming the variable and what it accepts", (value) => {
    const message = configError({ ATRIUM_TRUST_PROXY: value }).message;
    expect(message).toMatch(/Invalid configuration/);
    expect(message).toMatch(/ATRIUM_TRUST_PROXY/);
    expect(message).toMatch(/IP address|hops/);
  });

  it("reads the screens' request limit, 300 per minute by default", () => {
    expect(loadConfig({}).rateLimits.screenPerMinute).toBe(300);
    expect(loadConfig({ ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "20" }).rateLimits.screenPerMinute).toBe(20);
    expect(configError({ ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "0" }).message).toMatch(/ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE/);
  });

  it("reads the DPoP window in seconds", () => {
    const config = loadConfig({ ATRIUM_DPOP_MAX_AGE_SECONDS: "30", ATRIUM_DPOP_MAX_FUTURE_SECONDS: "0" });
    expect(config.dpopMaxAgeMs).toBe(30_000);
    expect(config.dpopMaxFutureMs).toBe(0);
    configError({ ATRIUM_DPOP_MAX_AGE_SECONDS: "0" });
    configError({ ATRIUM_DPOP_MAX_AGE_SECONDS: "601" });
  });

  it("has a blob quota of 1 GiB per account and an hour's grace for unreferenced blobs by default (docs/decisions/0008)", () => {
    const config = loadConfig({});
    expect(config.blobQuotaBytes).toBe(1024 ** 3);
    expect(config.blobUnreferencedGraceMs).toBe(3_600_000);
  });

  it("reads the blob quota in bytes and the grace period in seconds", () => {
    const config = loadConfig({ ATRIUM_BLOB_QUOTA_BYTES: "10485760", ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS: "2" });
    expect(config.blobQuotaBytes).toBe(10_485_760);
    expect(config.blobUnreferencedGraceMs).toBe(2_000);
  });

  it.each([
    ["ATRIUM_BLOB_QUOTA_BYTES", "lots"],
    ["ATRIUM_BLOB_QUOTA_BYTES", "-1"],
    ["ATRIUM_BLOB_QUOTA_BYTES", "1e9"],
    ["ATRIUM_BLOB_QUOTA_BYTES", String(2 ** 40 + 1)],
    ["ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS", "0"],
    ["ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS", "1.5"],
    ["ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS", String(30 * 24 * 3600 + 1)],
  ])("refuses %s=%s with a message naming it", (name, value) => {
    expect(configError({ [name]: value }).message).toContain(name);
  });

  it("keeps blob bytes in a folder beside the SQLite file, and in the database on PostgreSQL, unless ATRIUM_BLOB_DIRECTORY names a folder (docs/decisions/0043)", () => {
    expect(loadConfig({}).blobStore).toEqual({ kind: "disk", folder: path.resolve("data", "blobs") });
    expect(loadConfig({ DATABASE_URL: "file:/srv/atrium/atrium.db" }).blobStore).toEqual({ kind: "disk", folder: "/srv/atrium/blobs" });
    expect(loadConfig({ DATABASE_URL: "postgresql://atrium@localhost/atrium" }).blobStore).toEqual({ kind: "database" });
    expect(loadConfig({ DATABASE_URL: "postgresql://atrium@localhost/atrium", ATRIUM_BLOB_DIRECTORY: "/mnt/shared/blobs" }).blobStore).toEqual({ kind: "disk", folder: "/mnt/shared/blobs" });
    expect(loadConfig({ ATRIUM_BLOB_DIRECTORY: "relative/blobs" }).blobStore).toEqual({ kind: "disk", folder: path.resolve("relative/blobs") });
  });

  it("warns that a blob folder with PostgreSQL must be one every process sees; not the database store, nor a folder with SQLite", () => {
    const production = { PUBLIC_URL: "https://pds.example", ...PRODUCTION_KEYS };
    const shared = unsafeConfigWarnings(loadConfig({ ...production, DATABASE_URL: "postgresql://atrium@localhost/atrium", ATRIUM_BLOB_DIRECTORY: "/mnt/shared/blobs" }));
    expect(shared).toEqual([expect.stringMatching(/^ATRIUM_BLOB_DIRECTORY is \/mnt\/shared\/blobs with PostgreSQL: every server process, on every machine, must see this same folder/)]);
    expect(unsafeConfigWarnings(loadConfig({ ...production, DATABASE_URL: "postgresql://atrium@localhost/atrium" }))).toEqual([]);
    expect(unsafeConfigWarnings(loadConfig({ ...production, ATRIUM_BLOB_DIRECTORY: "/srv/blobs" }))).toEqual([]);
  });

  it("refuses a blob quota smaller than the largest blob: that blob could never be stored", () => {
    const message = configError({ ATRIUM_BLOB_MAX_BYTES: "4096", ATRIUM_BLOB_QUOTA_BYTES: "2048" }).message;
    expect(message).toMatch(/ATRIUM_BLOB_QUOTA_BYTES \(2048\).*ATRIUM_BLOB_MAX_BYTES \(4096\)/);
    expect(loadConfig({ ATRIUM_BLOB_MAX_BYTES: "4096", ATRIUM_BLOB_QUOTA_BYTES: "4096" }).blobQuotaBytes).toBe(4096);
  });
});

describe("loadConfig: each account's write budget (docs/decisions/0045)", () => {
  it("has the reference PDS's 5000 points an hour and 35000 a day, and 16 MiB and 64 MiB of records, by default", () => {
    expect(loadConfig({}).writeBudget).toEqual({ pointsPerHour: 5000, pointsPerDay: 35000, bytesPerHour: 16 * 2 ** 20, bytesPerDay: 64 * 2 ** 20 });
  });

  it("reads the four settings, and refuses a byte budget under 1 MiB (one request's body) or a day smaller than its hour", () => {
    const settings = { ATRIUM_WRITE_POINTS_PER_HOUR: "60", ATRIUM_WRITE_POINTS_PER_DAY: "600", ATRIUM_WRITE_BYTES_PER_HOUR: "1048576", ATRIUM_WRITE_BYTES_PER_DAY: "2097152" };
    expect(loadConfig(settings).writeBudget).toEqual({ pointsPerHour: 60, pointsPerDay: 600, bytesPerHour: 2 ** 20, bytesPerDay: 2 ** 21 });
    expect(configError({ ATRIUM_WRITE_BYTES_PER_HOUR: "1000" }).message).toMatch(/ATRIUM_WRITE_BYTES_PER_HOUR/);
    expect(configError({ ATRIUM_WRITE_POINTS_PER_HOUR: "0" }).message).toMatch(/ATRIUM_WRITE_POINTS_PER_HOUR/);
    expect(configError({ ATRIUM_WRITE_POINTS_PER_DAY: "4999" }).message).toMatch(/ATRIUM_WRITE_POINTS_PER_DAY \(4999\) must be at least ATRIUM_WRITE_POINTS_PER_HOUR \(5000\)/);
    expect(configError({ ATRIUM_WRITE_BYTES_PER_HOUR: String(2 ** 27) }).message).toMatch(/ATRIUM_WRITE_BYTES_PER_DAY \(67108864\) must be at least ATRIUM_WRITE_BYTES_PER_HOUR/);
  });
});

describe("loadConfig: logs and metrics (docs/decisions/0014)", () => {
  it("logs at info, with request lines off outside production and no metrics, by default", () => {
    const config = loadConfig({});
    expect(config.logLevel).toBe("info");
    expect(config.logRequests).toBe(false);
    expect(config.metrics).toBeUndefined();
  });

  it("turns request lines on by default when NODE_ENV is production", () => {
    expect(loadConfig({ NODE_ENV: "production" }).logRequests).toBe(true);
    expect(loadConfig({ NODE_ENV: "production", ATRIUM_LOG_REQUESTS: "" }).logRequests).toBe(true);
    expect(loadConfig({ NODE_ENV: "development" }).logRequests).toBe(false);
    expect(loadConfig({ NODE_ENV: "test" }).logRequests).toBe(false);
  });

  it.each([
    ["0", "production", false],
    ["off", "production", false],
    ["false", "production", false],
    ["1", undefined, true],
    ["on", "development", true],
    ["yes", "production", true],
  ])("reads ATRIUM_LOG_REQUESTS=%j (NODE_ENV %s) as %s: an explicit value wins over the default", (value, nodeEnv, expected) => {
    expect(loadConfig({ ATRIUM_LOG_REQUESTS: value, NODE_ENV: nodeEnv }).logRequests).toBe(expected);
  });

  it("offers password sessions unless ATRIUM_PASSWORD_SESSIONS turns them off (docs/decisions/0047)", () => {
    expect(loadConfig({}).passwordSessions).toBe(true);
    expect(loadConfig({ ATRIUM_PASSWORD_SESSIONS: "" }).passwordSessions).toBe(true);
    for (const off of ["0", "off", "false", "no"]) expect(loadConfig({ ATRIUM_PASSWORD_SESSIONS: off }).passwordSessions, off).toBe(false);
    expect(loadConfig({ ATRIUM_PASSWORD_SESSIONS: "on" }).passwordSessions).toBe(true);
    expect(configError({ ATRIUM_PASSWORD_SESSIONS: "maybe" }).message).toMatch(/ATRIUM_PASSWORD_SESSIONS/);
  });

  it("refuses an unknown ATRIUM_LOG_REQUESTS value", () => {
    expect(configError({ ATRIUM_LOG_REQUESTS: "sometimes" }).message).toMatch(/ATRIUM_LOG_REQUESTS/);
  });

  it.each(["fatal", "error", "warn", "info", "debug", "trace", "silent", "DEBUG", " warn "])("accepts ATRIUM_LOG_LEVEL=%j", (value) => {
    expect(loadConfig({ ATRIUM_LOG_LEVEL: value }).logLevel).toBe(value.trim().toLowerCase());
  });

  it("reads an empty ATRIUM_LOG_LEVEL as the default, info", () => {
    expect(loadConfig({ ATRIUM_LOG_LEVEL: "" }).logLevel).toBe("info");
  });

  it.each(["verbose", "warning", "10", "off"])("refuses ATRIUM_LOG_LEVEL=%j, naming the variable once and the levels", (value) => {
    const message = configError({ ATRIUM_LOG_LEVEL: value }).message;
    expect(message).toContain(`ATRIUM_LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got ${JSON.stringify(value)})`);
    expect(message.match(/ATRIUM_LOG_LEVEL/g)).toHaveLength(1);
  });

  it("serves metrics on ATRIUM_METRICS_PORT, on loopback unless ATRIUM_METRICS_HOST says otherwise", () => {
    expect(loadConfig({ ATRIUM_METRICS_PORT: "9464" }).metrics).toEqual({ port: 9464, host: "127.0.0.1" });
    expect(loadConfig({ ATRIUM_METRICS_PORT: "9464", ATRIUM_METRICS_HOST: "0.0.0.0" }).metrics).toEqual({ port: 9464, host: "0.0.0.0" });
    expect(loadConfig({ ATRIUM_METRICS_PORT: "" }).metrics).toBeUndefined();
    // A host without a port serves nothing.
    expect(loadConfig({ ATRIUM_METRICS_HOST: "0.0.0.0" }).metrics).toBeUndefined();
  });

  it.each(["0", "65536", "-1", "metrics", "9464.5"])("refuses ATRIUM_METRICS_PORT=%j, naming it once", (value) => {
    const message = configError({ ATRIUM_METRICS_PORT: value }).message;
    expect(message).toContain("ATRIUM_METRICS_PORT: must be a port number from 1 to 65535");
    expect(message.match(/ATRIUM_METRICS_PORT/g)).toHaveLength(1);
  });

  it("refuses a metrics port that is the public port: metrics are never served there", () => {
    expect(configError({ PORT: "8080", ATRIUM_METRICS_PORT: "8080" }).message).toMatch(/ATRIUM_METRICS_PORT \(8080\) must differ from PORT/);
    expect(configError({ ATRIUM_METRICS_PORT: "3000" }).message).toMatch(/must differ from PORT/);
  });

  it("refuses an empty ATRIUM_METRICS_HOST", () => {
    expect(configError({ ATRIUM_METRICS_PORT: "9464", ATRIUM_METRICS_HOST: " " }).message).toContain("ATRIUM_METRICS_HOST: must name an interface");
  });
});

describe("loadConfig: the firehose and crawlers (docs/decisions/0029)", () => {
  it("replays 72 hours, caps 8 connections and 30 upgrades a minute per address and 8 MiB of queue per subscriber, polls every 200 ms, tells no relay, by default", () => {
    const config = loadConfig({});
    expect(config.firehose).toEqual({ backfillMs: 72 * 3600 * 1000, maxConnectionsPerAddress: 8, upgradesPerMinute: 30, maxBufferedBytes: 8 * 1024 * 1024, pollIntervalMs: 200 });
    expect(config.crawlers).toEqual([]);
  });

  it("reads the settings and the relays' URLs (https, or http on loopback), once each", () => {
    const config = loadConfig({
      ATRIUM_FIREHOSE_BACKFILL_HOURS: "24",
      ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: "2",
      ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE: "5",
      ATRIUM_FIREHOSE_MAX_BUFFER_BYTES: "65536",
      ATRIUM_FIREHOSE_POLL_MS: "50",
      ATRIUM_CRAWLERS: "https://bsky.network, https://relay.example.com/,http://127.0.0.1:2470,https://bsky.network",
    });
    expect(config.firehose).toEqual({ backfillMs: 24 * 3600 * 1000, maxConnectionsPerAddress: 2, upgradesPerMinute: 5, maxBufferedBytes: 65536, pollIntervalMs: 50 });
    expect(config.crawlers).toEqual(["https://bsky.network", "https://relay.example.com", "http://127.0.0.1:2470"]);
  });

  it.each(["http://relay.example.com", "bsky.network", "https://relay.example.com/xrpc", "https://user:pw@relay.example.com"])("refuses %s as a crawler", (crawler) => {
    expect(() => loadConfig({ ATRIUM_CRAWLERS: crawler })).toThrow(/ATRIUM_CRAWLERS/);
  });

  it("refuses a backfill window of 0 hours, no upgrades at all, and a queue bound under 64 KiB", () => {
    expect(() => loadConfig({ ATRIUM_FIREHOSE_BACKFILL_HOURS: "0" })).toThrow(/ATRIUM_FIREHOSE_BACKFILL_HOURS/);
    expect(() => loadConfig({ ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE: "0" })).toThrow(/ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE/);
    expect(() => loadConfig({ ATRIUM_FIREHOSE_MAX_BUFFER_BYTES: "1000" })).toThrow(/ATRIUM_FIREHOSE_MAX_BUFFER_BYTES/);
  });
});

describe("loadConfig: service proxying (docs/decisions/0048)", () => {
  it("has the reference installer's app view and report service, at the installer's URLs, and a 10 MiB answer cap", () => {
    const config = loadConfig({});
    expect(config.appview).toBe("did:web:api.bsky.app#bsky_appview");
    expect(config.proxy).toEqual({
      reportService: "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler",
      pinned: { "did:web:api.bsky.app#bsky_appview": "https://api.bsky.app", "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler": "https://mod.bsky.app" },
      maxResponseBytes: 10 * 1024 * 1024,
    });
  });

  it("resolves another app view or report service from its DID document unless its URL is set; the proxy map overrides both", () => {
    const resolved = loadConfig({ ATRIUM_APPVIEW: "did:web:appview.example.com#bsky_appview", ATRIUM_REPORT_SERVICE: "did:plc:abcdefghijklmnopqrstuvwx#atproto_labeler" });
    expect(resolved.proxy.pinned).toEqual({});
    const pinned = loadConfig({
      ATRIUM_APPVIEW: "did:web:appview.example.com#bsky_appview",
      ATRIUM_APPVIEW_URL: "https://appview.internal.example.com/",
      ATRIUM_REPORT_SERVICE_URL: "https://mod.example.com",
      ATRIUM_PROXY_SERVICES: JSON.stringify({ "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler": "https://override.example.com/" }),
    });
    expect(pinned.proxy.pinned).toEqual({
      "did:web:appview.example.com#bsky_appview": "https://appview.internal.example.com",
      "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler": "https://override.example.com",
    });
  });

  it("refuses a service that is not did#service, a URL with credentials or another scheme, and a cap under 64 KiB", () => {
    expect(configError({ ATRIUM_REPORT_SERVICE: "did:plc:abcdefghijklmnopqrstuvwx" }).message).toMatch(/ATRIUM_REPORT_SERVICE must look like/);
    expect(configError({ ATRIUM_APPVIEW_URL: "https://user:pw@appview.example.com" }).message).toMatch(/ATRIUM_APPVIEW_URL: must be an https \(or http\) base URL/);
    expect(configError({ ATRIUM_REPORT_SERVICE_URL: "ftp://mod.example.com" }).message).toMatch(/ATRIUM_REPORT_SERVICE_URL/);
    expect(configError({ ATRIUM_PROXY_MAX_RESPONSE_BYTES: "1000" }).message).toMatch(/ATRIUM_PROXY_MAX_RESPONSE_BYTES/);
  });

  it("warns when a service's set URL is plain http to another machine", () => {
    const warnings = unsafeConfigWarnings(loadConfig({ PUBLIC_URL: "https://pds.example.com", ...PRODUCTION_KEYS, ATRIUM_APPVIEW_URL: "http://10.0.0.5:3000" }));
    expect(warnings).toEqual([expect.stringMatching(/did:web:api\.bsky\.app#bsky_appview go to http:\/\/10\.0\.0\.5:3000 over plain http/)]);
    expect(unsafeConfigWarnings(loadConfig({ PUBLIC_URL: "https://pds.example.com", ...PRODUCTION_KEYS, ATRIUM_APPVIEW_URL: "http://127.0.0.1:3000" }))).toEqual([]);
  });
});

describe("unsafeConfigWarnings", () => {
  it("warns loudly when private client documents are allowed", () => {
    const warnings = unsafeConfigWarnings(loadConfig({ ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "1", ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com" }));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS/);
    expect(warnings[0]).toMatch(/production/);
  });

  it("warns about a plain http issuer, and about the keys it generates into the database (docs/decisions/0050)", () => {
    const warnings = unsafeConfigWarnings(loadConfig({}));
    expect(warnings).toHaveLength(3);
    expect(warnings.find((warning) => warning.includes("http://localhost:3000"))).toBeDefined();
    expect(warnings.find((warning) => warning.startsWith("ATRIUM_PLC_ROTATION_KEY is not set"))).toMatch(/a copy of the database can/);
    expect(warnings.find((warning) => warning.startsWith("ATRIUM_KEY_ENCRYPTION_KEY is not set"))).toMatch(/signs as every account/);
    expect(unsafeConfigWarnings(loadConfig(PRODUCTION_KEYS))).toHaveLength(1);
  });

  it("has nothing to say about a production configuration", () => {
    expect(unsafeConfigWarnings(loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com" }))).toEqual([]);
  });
});

describe("the operator's brand (docs/decisions/0018)", () => {
  it("defaults to the issuer's host name and nothing else", () => {
    expect(loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com:8443" }).brand).toEqual({
      serviceName: "pds.example.com",
      logoUrl: undefined,
      primaryColor: undefined,
      termsUrl: undefined,
      privacyUrl: undefined,
      supportUrl: undefined,
    });
  });

  it("takes a name, https links, a mailto support address and a #rrggbb colour", () => {
    const { brand } = loadConfig({
      ATRIUM_SERVICE_NAME: "  Example   Social ",
      ATRIUM_LOGO_URL: "https://cdn.example.com/logo.svg",
      ATRIUM_PRIMARY_COLOR: "#0B6E4F",
      ATRIUM_TERMS_URL: "https://example.com/terms",
      ATRIUM_PRIVACY_URL: "https://example.com/privacy",
      ATRIUM_SUPPORT_URL: "mailto:help@example.com",
    });
    expect(brand).toEqual({
      serviceName: "Example Social",
      logoUrl: "https://cdn.example.com/logo.svg",
      primaryColor: "#0b6e4f",
      termsUrl: "https://example.com/terms",
      privacyUrl: "https://example.com/privacy",
      supportUrl: "mailto:help@example.com",
    });
  });

  it("treats empty values as unset", () => {
    const { brand } = loadConfig({ ATRIUM_SERVICE_NAME: " ", ATRIUM_LOGO_URL: "", ATRIUM_PRIMARY_COLOR: "", ATRIUM_SUPPORT_URL: "" });
    expect(brand.serviceName).toBe("localhost");
    expect(brand.logoUrl).toBeUndefined();
    expect(brand.primaryColor).toBeUndefined();
  });

  it.each([
    ["ATRIUM_LOGO_URL", "http://cdn.example.com/logo.svg"],
    ["ATRIUM_LOGO_URL", "/logo.svg"],
    ["ATRIUM_LOGO_URL", "data:image/svg+xml,<svg/>"],
    ["ATRIUM_TERMS_URL", "javascript:alert(1)"],
    ["ATRIUM_PRIVACY_URL", "https://user:pw@example.com/privacy"],
    ["ATRIUM_TERMS_URL", "mailto:legal@example.com"],
    ["ATRIUM_SUPPORT_URL", "http://example.com/help"],
  ])("refuses %s=%s", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.message).toContain(name);
    expect(error.message).toMatch(/https/);
  });

  it.each(["blue", "#fff", "#12345g", "0b6e4f", "#0b6e4f80"])("refuses ATRIUM_PRIMARY_COLOR=%s", (value) => {
    expect(configError({ ATRIUM_PRIMARY_COLOR: value }).message).toMatch(/ATRIUM_PRIMARY_COLOR.*#rrggbb/);
  });

  it("refuses a service name with bidi controls or one that is too long", () => {
    expect(configError({ ATRIUM_SERVICE_NAME: "Example\u202eSocial" }).message).toMatch(/ATRIUM_SERVICE_NAME.*bidirectional/);
    expect(configError({ ATRIUM_SERVICE_NAME: "x".repeat(61) }).message).toMatch(/ATRIUM_SERVICE_NAME.*at most 60/);
  });
});

describe("the keys that sign for every account (docs/decisions/0050)", () => {
  it("an https issuer without them does not start, and is told each missing one and how to make it", () => {
    const message = configError({ PUBLIC_URL: "https://pds.example.com" }).message;
    expect(message).toMatch(/^The issuer https:\/\/pds\.example\.com /);
    expect(message).toMatch(/ATRIUM_PLC_ROTATION_KEY: .*openssl rand -hex 32.*generated one into its database/);
    expect(message).toMatch(/ATRIUM_KEY_ENCRYPTION_KEY: .*openssl rand -hex 32/);
    const onlyOne = configError({ PUBLIC_URL: "https://pds.example.com", ATRIUM_PLC_ROTATION_KEY: "1".repeat(64) }).message;
    expect(onlyOne).toMatch(/ATRIUM_KEY_ENCRYPTION_KEY/);
    expect(onlyOne).not.toMatch(/ATRIUM_PLC_ROTATION_KEY:/);
  });

  it("plain http on loopback may go without them (generated, with the warnings above)", () => {
    expect(loadConfig({ PUBLIC_URL: "http://127.0.0.1:3000" }).keyEncryption).toEqual({ keyHex: undefined, previousKeysHex: [] });
  });

  it("reads the key, and the earlier keys without the current one among them", () => {
    const config = loadConfig({ ...PRODUCTION_KEYS, PUBLIC_URL: "https://pds.example.com", ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: ` ${"3".repeat(64)}, ${"A".repeat(64)},${"2".repeat(64)}` });
    expect(config.keyEncryption).toEqual({ keyHex: "2".repeat(64), previousKeysHex: ["3".repeat(64), "a".repeat(64)] });
  });

  it.each([
    [{ ATRIUM_KEY_ENCRYPTION_KEY: "abc" }, /ATRIUM_KEY_ENCRYPTION_KEY: must be 32 random bytes written as 64 hexadecimal digits \(make one with: openssl rand -hex 32\)/],
    [{ ATRIUM_KEY_ENCRYPTION_KEY: "2".repeat(64), ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: "not hex" }, /ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: must be keys of 64 hexadecimal digits/],
    [{ ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: "3".repeat(64) }, /ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS is set without ATRIUM_KEY_ENCRYPTION_KEY/],
    [{ ATRIUM_PLC_ROTATION_KEY: "xyz" }, /ATRIUM_PLC_ROTATION_KEY: must be a secp256k1 private key written as 64 hexadecimal digits/],
  ])("refuses %o", (env, message) => {
    expect(configError(env).message).toMatch(message);
  });
});
