import path from "node:path";
import { z } from "zod";
import { DEFAULT_SIGN_IN_THROTTLE } from "./security/sign-in-throttle.ts";
import { DAY, HOUR, MINUTE, SECOND } from "./util/time.ts";
import {
  DEFAULT_APPVIEW,
  DEFAULT_HCAPTCHA_VERIFY_URL,
  DEFAULT_PLC_DIRECTORY_URL,
  DEFAULT_REPORT_SERVICE,
  envSchema,
  SERVICE_REF,
  type Environment,
} from "./config/environment.ts";
import { isLoopbackHost, parsedUrl } from "./config/parsers.ts";
import type { BlobStoreSettings, Config } from "./config/types.ts";

/**
 * The server's settings (docs/configuration.md): `loadConfig` reads the environment (config/environment.ts, each
 * variable parsed by one of config/parsers.ts's shapes), refuses what cannot go together, and builds the Config
 * (config/types.ts); config/warnings.ts says loudly what is unsafe in production. The rest of the code imports them
 * from here.
 */
export type { BlobStoreSettings, Brand, Config, DatabaseSettings, SignUpSettings } from "./config/types.ts";
export { unsafeConfigWarnings } from "./config/warnings.ts";
export {
  ADMIN_PASSWORD_MIN_LENGTH,
  DEFAULT_APPVIEW,
  DEFAULT_HCAPTCHA_VERIFY_URL,
  DEFAULT_PLC_DIRECTORY_URL,
  DEFAULT_REPORT_SERVICE,
  LOG_LEVELS,
  SERVICE_NAME_MAX_LENGTH,
  type LogLevel,
} from "./config/environment.ts";
export { isLoopbackHost } from "./config/parsers.ts";

/** A setting that stops the start, with a message naming it. Named, so that it is known across module copies (Vite's development server). */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export function isConfigError(error: unknown): error is Error {
  return error instanceof Error && error.name === "ConfigError";
}

/** This server's own DID, as describeServer names it: the `aud` of its password sessions' tokens (docs/decisions/0047). */
export function serverDid(config: Pick<Config, "publicUrl">): string {
  return `did:web:${config.publicUrl.hostname}`;
}

function parseIssuer(raw: string | undefined, port: number): URL {
  const text = raw ?? `http://localhost:${port}`;
  const url = parsedUrl(text);
  if (!url) throw new ConfigError(`PUBLIC_URL is not a URL: ${JSON.stringify(text)}`);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ConfigError("PUBLIC_URL must use https (or http for a loopback host)");
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    throw new ConfigError(`PUBLIC_URL may use plain http only for a loopback host (got ${url.hostname}); use https`);
  }
  if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username || url.password) {
    throw new ConfigError("PUBLIC_URL must be an origin: no path, query, fragment or credentials");
  }
  return url;
}

/** `env` is the environment, or any set of variables (tests name only those they set). */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const publicUrl = parseIssuer(e.PUBLIC_URL, e.PORT);
  if (e.ATRIUM_METRICS_PORT !== undefined && e.ATRIUM_METRICS_PORT === e.PORT) {
    throw new ConfigError(`ATRIUM_METRICS_PORT (${e.ATRIUM_METRICS_PORT}) must differ from PORT: metrics are never served on the public port`);
  }
  if (e.ATRIUM_BLOB_QUOTA_BYTES < e.ATRIUM_BLOB_MAX_BYTES) {
    throw new ConfigError(
      `ATRIUM_BLOB_QUOTA_BYTES (${e.ATRIUM_BLOB_QUOTA_BYTES}) must be at least ATRIUM_BLOB_MAX_BYTES (${e.ATRIUM_BLOB_MAX_BYTES}): otherwise a blob of the allowed size could never be stored`,
    );
  }
  for (const unit of ["POINTS", "BYTES"] as const) {
    const [hour, day] = [e[`ATRIUM_WRITE_${unit}_PER_HOUR`], e[`ATRIUM_WRITE_${unit}_PER_DAY`]];
    if (day < hour) throw new ConfigError(`ATRIUM_WRITE_${unit}_PER_DAY (${day}) must be at least ATRIUM_WRITE_${unit}_PER_HOUR (${hour}): a day holds the hour`);
  }
  const loopbackHttp = publicUrl.protocol === "http:" && isLoopbackHost(publicUrl.hostname);
  if (e.ATRIUM_TEST_CLOCK_FILE !== undefined && !loopbackHttp) {
    throw new ConfigError(
      `ATRIUM_TEST_CLOCK_FILE is set: it moves the server's clock and exists for the tests only. It is refused for any issuer but plain http on loopback (got ${publicUrl.origin}); never set it in production.`,
    );
  }
  if (e.ATRIUM_TEST_FAST_PASSWORD_HASHES && !loopbackHttp) {
    throw new ConfigError(
      `ATRIUM_TEST_FAST_PASSWORD_HASHES is set: it weakens new password hashes and exists for the tests only. It is refused for any issuer but plain http on loopback (got ${publicUrl.origin}); never set it in production.`,
    );
  }
  refuseMissingKeys(publicUrl, loopbackHttp, e);
  if ((e.ATRIUM_HCAPTCHA_SITE_KEY === undefined) !== (e.ATRIUM_HCAPTCHA_SECRET === undefined)) {
    throw new ConfigError("ATRIUM_HCAPTCHA_SITE_KEY and ATRIUM_HCAPTCHA_SECRET go together: the site key shows the captcha, the secret checks its answers");
  }
  if (e.ATRIUM_SMTP_URL && !e.ATRIUM_EMAIL_FROM) {
    throw new ConfigError("ATRIUM_EMAIL_FROM must be set with ATRIUM_SMTP_URL: the address the recovery email comes from, e.g. Atrium <no-reply@example.com>");
  }
  return {
    port: e.PORT,
    host: e.HOST,
    issuer: publicUrl.origin,
    publicUrl,
    database: e.DATABASE_URL.startsWith("file:")
      ? { engine: "sqlite", url: e.DATABASE_URL, path: e.DATABASE_URL.slice("file:".length) }
      : { engine: "postgresql", url: e.DATABASE_URL, poolSize: e.ATRIUM_DATABASE_POOL_SIZE, snapshotPoolSize: e.ATRIUM_REPO_EXPORTS_MAX },
    workers: e.ATRIUM_WORKERS,
    allowPrivateClients: e.ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS,
    testClockFile: e.ATRIUM_TEST_CLOCK_FILE,
    testFastPasswordHashes: e.ATRIUM_TEST_FAST_PASSWORD_HASHES,
    dpopNonceSecret: e.ATRIUM_DPOP_NONCE_SECRET,
    cookieSecret: e.ATRIUM_COOKIE_SECRET,
    dpopMaxAgeMs: e.ATRIUM_DPOP_MAX_AGE_SECONDS * SECOND,
    dpopMaxFutureMs: e.ATRIUM_DPOP_MAX_FUTURE_SECONDS * SECOND,
    trustProxy: e.ATRIUM_TRUST_PROXY,
    logLevel: e.ATRIUM_LOG_LEVEL,
    logRequests: e.ATRIUM_LOG_REQUESTS ?? e.NODE_ENV === "production",
    metrics: e.ATRIUM_METRICS_PORT === undefined ? undefined : { port: e.ATRIUM_METRICS_PORT, host: e.ATRIUM_METRICS_HOST },
    userDomains: e.ATRIUM_USER_DOMAINS.split(",").map((domain) => domain.trim()).filter(Boolean),
    appview: e.ATRIUM_APPVIEW,
    proxy: {
      reportService: e.ATRIUM_REPORT_SERVICE,
      pinned: {
        ...pinnedUrl(e.ATRIUM_APPVIEW, e.ATRIUM_APPVIEW_URL, DEFAULT_APPVIEW),
        ...pinnedUrl(e.ATRIUM_REPORT_SERVICE, e.ATRIUM_REPORT_SERVICE_URL, DEFAULT_REPORT_SERVICE),
        ...parseProxyServices(e.ATRIUM_PROXY_SERVICES),
      },
      maxResponseBytes: e.ATRIUM_PROXY_MAX_RESPONSE_BYTES,
    },
    blobMaxBytes: e.ATRIUM_BLOB_MAX_BYTES,
    blobQuotaBytes: e.ATRIUM_BLOB_QUOTA_BYTES,
    blobUnreferencedGraceMs: e.ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS * SECOND,
    blobStore: blobStoreSettings(e.ATRIUM_BLOB_DIRECTORY, e.DATABASE_URL),
    importMaxBytes: e.ATRIUM_IMPORT_MAX_BYTES,
    clientCache: { maxEntries: e.ATRIUM_CLIENT_CACHE_MAX_ENTRIES, maxBytes: e.ATRIUM_CLIENT_CACHE_MAX_BYTES },
    signInThrottle: {
      ...DEFAULT_SIGN_IN_THROTTLE,
      freeAttempts: e.ATRIUM_SIGN_IN_FREE_ATTEMPTS,
      baseDelayMs: e.ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS * SECOND,
      maxDelayMs: Math.max(DEFAULT_SIGN_IN_THROTTLE.maxDelayMs, e.ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS * SECOND),
    },
    rateLimits: {
      parPerMinute: e.ATRIUM_RATE_LIMIT_PAR_PER_MINUTE,
      tokenPerMinute: e.ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE,
      xrpcPerMinute: e.ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE,
      screenPerMinute: e.ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE,
    },
    parPendingPerAddress: e.ATRIUM_PAR_PENDING_PER_ADDRESS,
    writeBudget: {
      pointsPerHour: e.ATRIUM_WRITE_POINTS_PER_HOUR,
      pointsPerDay: e.ATRIUM_WRITE_POINTS_PER_DAY,
      bytesPerHour: e.ATRIUM_WRITE_BYTES_PER_HOUR,
      bytesPerDay: e.ATRIUM_WRITE_BYTES_PER_DAY,
    },
    requestTimeoutMs: e.ATRIUM_REQUEST_TIMEOUT_SECONDS * SECOND,
    permissionSets: {
      directory: e.ATRIUM_PERMISSION_SETS_DIR,
      network: e.ATRIUM_PERMISSION_SETS_NETWORK,
      dnsServers: e.ATRIUM_DNS_SERVERS?.split(",").map((server) => server.trim()).filter(Boolean),
      plcDirectoryUrl: e.ATRIUM_PLC_DIRECTORY_URL ?? DEFAULT_PLC_DIRECTORY_URL,
    },
    plc: { directoryUrl: e.ATRIUM_PLC_DIRECTORY_URL ?? DEFAULT_PLC_DIRECTORY_URL, rotationKeyHex: e.ATRIUM_PLC_ROTATION_KEY },
    keyEncryption: { keyHex: e.ATRIUM_KEY_ENCRYPTION_KEY, previousKeysHex: (e.ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS ?? []).filter((key) => key !== e.ATRIUM_KEY_ENCRYPTION_KEY) },
    brand: {
      serviceName: e.ATRIUM_SERVICE_NAME ?? publicUrl.hostname,
      logoUrl: e.ATRIUM_LOGO_URL,
      primaryColor: e.ATRIUM_PRIMARY_COLOR,
      termsUrl: e.ATRIUM_TERMS_URL,
      privacyUrl: e.ATRIUM_PRIVACY_URL,
      supportUrl: e.ATRIUM_SUPPORT_URL,
    },
    firehose: {
      backfillMs: e.ATRIUM_FIREHOSE_BACKFILL_HOURS * HOUR,
      maxConnectionsPerAddress: e.ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS,
      upgradesPerMinute: e.ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE,
      maxBufferedBytes: e.ATRIUM_FIREHOSE_MAX_BUFFER_BYTES,
      pollIntervalMs: e.ATRIUM_FIREHOSE_POLL_MS,
    },
    repoExports: {
      perAddress: e.ATRIUM_REPO_EXPORTS_PER_ADDRESS,
      inAll: e.ATRIUM_REPO_EXPORTS_MAX,
      idleMs: e.ATRIUM_REPO_EXPORT_IDLE_SECONDS * SECOND,
      maxMs: e.ATRIUM_REPO_EXPORT_MAX_SECONDS * SECOND,
    },
    crawlers: e.ATRIUM_CRAWLERS,
    adminPassword: e.ATRIUM_ADMIN_PASSWORD,
    email: e.ATRIUM_SMTP_URL && e.ATRIUM_EMAIL_FROM ? { smtpUrl: e.ATRIUM_SMTP_URL, from: e.ATRIUM_EMAIL_FROM } : undefined,
    passwordSessions: e.ATRIUM_PASSWORD_SESSIONS ?? true,
    signUp: {
      enabled: e.ATRIUM_SIGNUP ?? true,
      inviteRequired: e.ATRIUM_INVITE_REQUIRED ?? true,
      inviteIntervalMs: e.ATRIUM_INVITE_INTERVAL_DAYS === undefined ? undefined : e.ATRIUM_INVITE_INTERVAL_DAYS * DAY,
      perAddressPerHour: e.ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR,
      captcha:
        e.ATRIUM_HCAPTCHA_SITE_KEY && e.ATRIUM_HCAPTCHA_SECRET
          ? { siteKey: e.ATRIUM_HCAPTCHA_SITE_KEY, secret: e.ATRIUM_HCAPTCHA_SECRET, verifyUrl: e.ATRIUM_HCAPTCHA_VERIFY_URL ?? DEFAULT_HCAPTCHA_VERIFY_URL }
          : undefined,
    },
    contactEmail: e.ATRIUM_CONTACT_EMAIL,
    appActivity: e.ATRIUM_APP_ACTIVITY ?? true,
    countryDatabase: e.ATRIUM_COUNTRY_DATABASE,
    lifetimes: {
      requestUri: 5 * MINUTE,
      requestRetention: DAY,
      code: 5 * MINUTE,
      accessToken: 60 * MINUTE,
      refreshToken: 90 * DAY,
      grantPublic: e.ATRIUM_GRANT_LIFETIME_PUBLIC_DAYS * DAY,
      grantConfidential: e.ATRIUM_GRANT_LIFETIME_CONFIDENTIAL_DAYS * DAY,
      browserSession: 30 * DAY,
      clientMetadataCache: 10 * MINUTE,
      recoveryCode: 15 * MINUTE,
      typedCode: 15 * MINUTE,
    },
  };
}

/**
 * The URL set for a default service: the one given, or the installer's for the installer's service. Another service
 * named without a URL is resolved from its DID document like any other (docs/decisions/0048).
 */
function pinnedUrl(service: string, url: string | undefined, installer: { service: string; url: string }): Record<string, string> {
  if (url) return { [service]: url };
  return service === installer.service ? { [service]: installer.url } : {};
}

/**
 * ATRIUM_BLOB_DIRECTORY, or the default of the engine (docs/decisions/0043): on SQLite a `blobs` folder beside the
 * database file, the data folder of a one-machine server; on PostgreSQL, whose processes may run on several machines,
 * the database itself, which every one of them reaches. A folder given with PostgreSQL must be one every process sees
 * (a shared file system): unsafeConfigWarnings says so.
 */
function blobStoreSettings(directory: string | undefined, databaseUrl: string): BlobStoreSettings {
  if (directory !== undefined) return { kind: "disk", folder: path.resolve(directory) };
  if (databaseUrl.startsWith("file:")) return { kind: "disk", folder: path.resolve(path.dirname(databaseUrl.slice("file:".length)), "blobs") };
  return { kind: "database" };
}

/**
 * docs/decisions/0050: the keys that sign for every account come from the environment on a server others use. An
 * https issuer does not start without them, and is told which are missing and how to make each; plain http on
 * loopback (development, tests) may go without, and they are generated into the database, with a warning.
 */
function refuseMissingKeys(publicUrl: URL, loopbackHttp: boolean, e: Pick<Environment, "ATRIUM_PLC_ROTATION_KEY" | "ATRIUM_KEY_ENCRYPTION_KEY" | "ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS">): void {
  if (e.ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS?.length && !e.ATRIUM_KEY_ENCRYPTION_KEY) {
    throw new ConfigError("ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS is set without ATRIUM_KEY_ENCRYPTION_KEY: the previous keys only open what they sealed; the current key seals (docs/decisions/0050)");
  }
  if (loopbackHttp) return;
  const missing: string[] = [];
  if (!e.ATRIUM_PLC_ROTATION_KEY) {
    missing.push(
      "  ATRIUM_PLC_ROTATION_KEY: the secp256k1 key that signs the accounts' DID operations. Make one with `openssl rand -hex 32`; " +
        "but if this server ran before and generated one into its database, set that one instead (docs/data-server.md, \"Identity\", says how to read it): " +
        "the DIDs registered with it can be changed only with it.",
    );
  }
  if (!e.ATRIUM_KEY_ENCRYPTION_KEY) {
    missing.push(
      "  ATRIUM_KEY_ENCRYPTION_KEY: the key that seals the accounts' signing keys in the database, so that a copy of it signs nothing. " +
        "Make one with `openssl rand -hex 32` and keep a copy apart from the database's backups.",
    );
  }
  if (missing.length === 0) return;
  throw new ConfigError(
    `The issuer ${publicUrl.origin} is not plain http on loopback, and the keys that sign for every account must then come from the environment, not the database. Missing:\n${missing.join("\n")}`,
  );
}

const proxyServicesSchema = z.record(
  z.string().regex(SERVICE_REF, "keys must be did#service"),
  z.string().url("values must be base URLs"),
);

function parseProxyServices(raw: string): Record<string, string> {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError("ATRIUM_PROXY_SERVICES must be a JSON object mapping did#service to a base URL");
  }
  const parsed = proxyServicesSchema.safeParse(json);
  if (!parsed.success) throw new ConfigError(`ATRIUM_PROXY_SERVICES: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return Object.fromEntries(Object.entries(parsed.data).map(([service, url]) => [service, url.replace(/\/$/, "")]));
}
