import { availableParallelism } from "node:os";
import path from "node:path";
import { z } from "zod";
import { parseTrustedProxies, type TrustedProxies } from "./http/forwarded-address.ts";
import { DEFAULT_SIGN_IN_THROTTLE, type SignInThrottleOptions } from "./security/sign-in-throttle.ts";
import { DEFAULT_WRITE_BUDGET, type WriteBudgetSettings } from "./security/write-budget.ts";
import { DAY, HOUR, MINUTE, SECOND } from "./util/time.ts";
import { hasHiddenCharacters } from "./util/visible-text.ts";

const booleanFlag = z
  .enum(["", "0", "1", "false", "true", "off", "on", "no", "yes"])
  .default("")
  .transform((value) => ["1", "true", "on", "yes"].includes(value));

/** A boolean flag whose unset (or empty) value means "the default", decided later from other settings. */
const optionalFlag = z
  .enum(["", "0", "1", "false", "true", "off", "on", "no", "yes"])
  .default("")
  .transform((value) => (value === "" ? undefined : ["1", "true", "on", "yes"].includes(value)));

/** pino's levels, and `silent` (no logs at all). */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const logLevelVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const level = (value ?? "").trim().toLowerCase() || "info";
    if ((LOG_LEVELS as readonly string[]).includes(level)) return level as LogLevel;
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be one of ${LOG_LEVELS.join(", ")} (got ${JSON.stringify(value)})` });
    return z.NEVER;
  });

/** An optional whole number from the environment: unset or empty means the default; anything but digits is refused. */
function integerVar(name: string, min: number, max: number, fallback: number) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return fallback;
      const number = /^\d+$/.test(value.trim()) ? Number(value) : NaN;
      if (!Number.isSafeInteger(number) || number < min || number > max) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(value)})` });
        return z.NEVER;
      }
      return number;
    });
}

/** ATRIUM_WORKERS: how many server processes share the port (docs/decisions/0021); "auto": one per core. */
const MAX_WORKERS = 256;
const workersVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const text = value?.trim() ?? "";
    if (text === "") return 1;
    if (text === "auto") return Math.min(MAX_WORKERS, availableParallelism());
    const number = /^\d+$/.test(text) ? Number(text) : NaN;
    if (!Number.isSafeInteger(number) || number < 1 || number > MAX_WORKERS) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `ATRIUM_WORKERS must be "auto" or a whole number from 1 to ${MAX_WORKERS} (got ${JSON.stringify(value)})` });
      return z.NEVER;
    }
    return number;
  });

/** ATRIUM_TRUST_PROXY: off, a number of proxy hops, or the proxies' addresses (docs/decisions/0006). */
/** The largest count a budget's row holds: PostgreSQL's INTEGER (prisma/schema.prisma, RateLimit.count). */
const MAX_BUDGET_COUNT = 2 ** 31 - 1;

const trustProxyVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const parsed = parseTrustedProxies(value);
    if (parsed.ok) return parsed.trusted;
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: parsed.message });
    return z.NEVER;
  });

/** `text` as a URL, or undefined when it is not one. */
function parsedUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/**
 * An optional setting: unset or blank is undefined; otherwise `parse` gives its value, or why it is refused (a
 * phrase that starts with "must", which the start-up error puts after the variable's name).
 */
function optionalSetting<T>(parse: (text: string) => { value: T } | { refused: string }) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      const text = (value ?? "").trim();
      if (!text) return undefined;
      const parsed = parse(text);
      if ("value" in parsed) return parsed.value;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: parsed.refused });
      return z.NEVER;
    });
}

/**
 * A link the screens show for the operator (docs/decisions/0018): an absolute https URL (or, where `mailto` is
 * allowed, a mailto: address), without credentials; unset or empty means no link. Anything else is refused: a
 * javascript: or http: link on the sign-in screen is exactly what a phishing page would put there.
 */
function brandUrlVar(options: { mailto?: boolean } = {}) {
  return optionalSetting((text) => {
    const url = parsedUrl(text);
    const allowed = url && (url.protocol === "https:" || (options.mailto && url.protocol === "mailto:"));
    if (url && allowed && !url.username && !url.password && !/\s/.test(text)) return { value: url.href };
    return { refused: `must be an https URL${options.mailto ? " or a mailto: address" : ""}, without user or password (got ${JSON.stringify(text)})` };
  });
}

/**
 * ATRIUM_SMTP_URL (docs/decisions/0020): the operator's SMTP server for password-recovery email, smtp:// (STARTTLS
 * when the server offers it; add ?requireTLS=true to insist) or smtps:// (TLS from the start), with the user and
 * password URL-encoded. Unset or empty: no email, and the recovery screen says how to reach the operator.
 */
const smtpUrlVar = optionalSetting((text) => {
  const url = parsedUrl(text);
  if (url && (url.protocol === "smtp:" || url.protocol === "smtps:") && url.hostname) return { value: url.href };
  return { refused: "must be an smtp:// or smtps:// URL with a host, e.g. smtp://user:password@mail.example.com:587" };
});

/** ATRIUM_EMAIL_FROM: the sender of the recovery email, `address` or `Name <address>`. */
const emailFromVar = optionalSetting((text) => {
  const address = /<([^<>]+)>$/.exec(text)?.[1] ?? text;
  if (z.string().email().safeParse(address).success && !/[\r\n]/.test(text)) return { value: text };
  return { refused: `must be an email address or Name <address> (got ${JSON.stringify(text)})` };
});

/** The most characters of ATRIUM_SERVICE_NAME: it stands in every page's header and tab title. */
export const SERVICE_NAME_MAX_LENGTH = 60;

const serviceNameVar = optionalSetting((trimmed) => {
  const text = trimmed.replace(/\s+/g, " ");
  // The name is shown as the server's own voice: bidi controls or control characters could make it read as
  // something else (docs/decisions/0018), so they are refused rather than quietly removed.
  if (hasHiddenCharacters(text)) return { refused: "must not contain control or bidirectional formatting characters" };
  if ([...text].length > SERVICE_NAME_MAX_LENGTH) return { refused: `must be at most ${SERVICE_NAME_MAX_LENGTH} characters` };
  return { value: text };
});

/**
 * ATRIUM_CRAWLERS (docs/decisions/0029): relays told with requestCrawl after writes, comma-separated base URLs; https,
 * or http for a loopback host (a relay on this machine, tests).
 */
const crawlersVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const urls: string[] = [];
    for (const text of (value ?? "").split(",").map((part) => part.trim()).filter(Boolean)) {
      const url = parsedUrl(text);
      const allowed = url && (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname)));
      if (!url || !allowed || url.username || url.password || url.search || url.hash || (url.pathname !== "/" && url.pathname !== "")) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `ATRIUM_CRAWLERS must be relay base URLs (https, or http on loopback), comma-separated (got ${JSON.stringify(text)})` });
        return z.NEVER;
      }
      urls.push(url.origin);
    }
    return [...new Set(urls)];
  });

/** The fewest characters of ATRIUM_ADMIN_PASSWORD: `openssl rand -hex 16`, as the reference's installer makes it, has 32. */
export const ADMIN_PASSWORD_MIN_LENGTH = 16;

/**
 * ATRIUM_ADMIN_PASSWORD (docs/decisions/0051): the password of HTTP Basic `admin:<password>` for the admin /xrpc
 * methods and of the operator page, /admin. Unset (or empty): every admin call is refused. Taken as it is, spaces
 * included; shorter than ADMIN_PASSWORD_MIN_LENGTH, refused.
 */
const adminPasswordVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || value === "") return undefined;
    if (value.length < ADMIN_PASSWORD_MIN_LENGTH) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `ATRIUM_ADMIN_PASSWORD must be at least ${ADMIN_PASSWORD_MIN_LENGTH} characters (got ${value.length}): it opens every account's administration. Make one with openssl rand -hex 16`,
      });
      return z.NEVER;
    }
    return value;
  });
/** `did#service`, as atproto-proxy names a service (atproto XRPC, "Service Proxying"). */
const SERVICE_REF = /^did:[a-z]+:[^#\s]+#[a-zA-Z0-9_-]+$/;

/** Where calls for a service go without resolving its DID (docs/decisions/0048): an http(s) base URL without credentials. */
const serviceUrlVar = optionalSetting((text) => {
  const url = parsedUrl(text);
  if (url && (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password && !url.search && !url.hash) {
    return { value: url.href.replace(/\/+$/, "") };
  }
  return { refused: `must be an https (or http) base URL without credentials, query or fragment (got ${JSON.stringify(text)})` };
});

/** The reference PDS installer's app view and report service (its PDS_BSKY_APP_VIEW_* and PDS_REPORT_SERVICE_*). */
export const DEFAULT_APPVIEW = { service: "did:web:api.bsky.app#bsky_appview", url: "https://api.bsky.app" };
export const DEFAULT_REPORT_SERVICE = { service: "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler", url: "https://mod.bsky.app" };

/** The hCaptcha-compatible service's verify endpoint (docs/decisions/0052): https, or http on loopback (tests). */
export const DEFAULT_HCAPTCHA_VERIFY_URL = "https://api.hcaptcha.com/siteverify";

const captchaVerifyUrlVar = optionalSetting((text) => {
  const url = parsedUrl(text);
  const allowed = url && (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname)));
  if (url && allowed && !url.username && !url.password && !url.hash) return { value: url.href };
  return { refused: `must be an https URL (or http on a loopback host, for tests), without credentials (got ${JSON.stringify(text)})` };
});

/** ATRIUM_CONTACT_EMAIL: describeServer's contact address. */
const contactEmailVar = optionalSetting((text) =>
  z.string().email().safeParse(text).success ? { value: text } : { refused: `must be an email address (got ${JSON.stringify(text)})` },
);
/** 32 bytes as 64 hexadecimal digits: `openssl rand -hex 32`. */
const HEX_KEY = /^[0-9a-fA-F]{64}$/;

const envSchema = z.object({
  PORT: integerVar("PORT", 0, 65535, 3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  PUBLIC_URL: z.string().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^(file:.+|postgres(ql)?:\/\/.+)$/, "DATABASE_URL must be file:./path/to.db (SQLite) or postgresql://user:password@host:5432/database (PostgreSQL)")
    .default("file:./data/atrium.db"),
  ATRIUM_DATABASE_POOL_SIZE: integerVar("ATRIUM_DATABASE_POOL_SIZE", 1, 1000, 10),
  ATRIUM_WORKERS: workersVar,
  ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: booleanFlag,
  // docs/decisions/0036: tests only; refused unless the issuer is plain http on loopback (loadConfig).
  ATRIUM_TEST_CLOCK_FILE: z.string().min(1).optional(),
  ATRIUM_TEST_FAST_PASSWORD_HASHES: booleanFlag,
  ATRIUM_DPOP_NONCE_SECRET: z.string().min(32, "ATRIUM_DPOP_NONCE_SECRET must be at least 32 characters").optional(),
  ATRIUM_COOKIE_SECRET: z.string().min(32, "ATRIUM_COOKIE_SECRET must be at least 32 characters").optional(),
  ATRIUM_DPOP_MAX_AGE_SECONDS: integerVar("ATRIUM_DPOP_MAX_AGE_SECONDS", 1, 600, 60),
  ATRIUM_DPOP_MAX_FUTURE_SECONDS: integerVar("ATRIUM_DPOP_MAX_FUTURE_SECONDS", 0, 120, 10),
  ATRIUM_TRUST_PROXY: trustProxyVar,
  ATRIUM_SIGN_IN_FREE_ATTEMPTS: integerVar("ATRIUM_SIGN_IN_FREE_ATTEMPTS", 1, 1000, DEFAULT_SIGN_IN_THROTTLE.freeAttempts),
  ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: integerVar("ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS", 1, 900, DEFAULT_SIGN_IN_THROTTLE.baseDelayMs / SECOND),
  ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: integerVar("ATRIUM_RATE_LIMIT_PAR_PER_MINUTE", 1, 1_000_000, 300),
  // docs/decisions/0022: how many pushed requests of one address may wait for an answer at once.
  ATRIUM_PAR_PENDING_PER_ADDRESS: integerVar("ATRIUM_PAR_PENDING_PER_ADDRESS", 1, 1_000_000, 500),
  ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: integerVar("ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE", 1, 1_000_000, 600),
  ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: integerVar("ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE", 1, 10_000_000, 6000),
  ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: integerVar("ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE", 1, 1_000_000, 300),
  ATRIUM_REQUEST_TIMEOUT_SECONDS: integerVar("ATRIUM_REQUEST_TIMEOUT_SECONDS", 1, 600, 30),
  // docs/decisions/0045: each account's repository writes, in the reference PDS's points and in bytes of records.
  ATRIUM_WRITE_POINTS_PER_HOUR: integerVar("ATRIUM_WRITE_POINTS_PER_HOUR", 1, 100_000_000, DEFAULT_WRITE_BUDGET.pointsPerHour),
  ATRIUM_WRITE_POINTS_PER_DAY: integerVar("ATRIUM_WRITE_POINTS_PER_DAY", 1, 100_000_000, DEFAULT_WRITE_BUDGET.pointsPerDay),
  // At most PostgreSQL's INTEGER: the budgets are counted in the RateLimit rows' "count", and a larger limit, bound
  // beside it, made every write a 500 there (out of range for type integer).
  ATRIUM_WRITE_BYTES_PER_HOUR: integerVar("ATRIUM_WRITE_BYTES_PER_HOUR", 2 ** 20, MAX_BUDGET_COUNT, DEFAULT_WRITE_BUDGET.bytesPerHour),
  ATRIUM_WRITE_BYTES_PER_DAY: integerVar("ATRIUM_WRITE_BYTES_PER_DAY", 2 ** 20, MAX_BUDGET_COUNT, DEFAULT_WRITE_BUDGET.bytesPerDay),
  ATRIUM_USER_DOMAINS: z.string().default(".test"),
  // docs/decisions/0048: service proxying's default services, resolved from their DID documents unless a URL is set.
  ATRIUM_APPVIEW: z.string().regex(SERVICE_REF, "ATRIUM_APPVIEW must look like did:web:api.bsky.app#bsky_appview").default(DEFAULT_APPVIEW.service),
  ATRIUM_APPVIEW_URL: serviceUrlVar,
  ATRIUM_REPORT_SERVICE: z.string().regex(SERVICE_REF, "ATRIUM_REPORT_SERVICE must look like did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler").default(DEFAULT_REPORT_SERVICE.service),
  ATRIUM_REPORT_SERVICE_URL: serviceUrlVar,
  ATRIUM_PROXY_SERVICES: z.string().default("{}"),
  ATRIUM_PROXY_MAX_RESPONSE_BYTES: integerVar("ATRIUM_PROXY_MAX_RESPONSE_BYTES", 64 * 1024, 1024 * 1024 * 1024, 10 * 1024 * 1024),
  ATRIUM_BLOB_MAX_BYTES: integerVar("ATRIUM_BLOB_MAX_BYTES", 1024, 100 * 1024 * 1024, 5 * 1024 * 1024),
  // docs/decisions/0008: why 1 GiB per account and an hour's grace for unreferenced blobs.
  ATRIUM_BLOB_QUOTA_BYTES: integerVar("ATRIUM_BLOB_QUOTA_BYTES", 1024, 2 ** 40, 2 ** 30),
  ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS: integerVar("ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS", 1, 30 * 24 * 3600, 3600),
  // docs/decisions/0055: the largest repository CAR com.atproto.repo.importRepo takes (the reference has no default cap).
  ATRIUM_IMPORT_MAX_BYTES: integerVar("ATRIUM_IMPORT_MAX_BYTES", 1024 * 1024, 64 * 1024 * 1024 * 1024, 1024 * 1024 * 1024),
  // docs/decisions/0043: where the blobs' bytes are kept.
  ATRIUM_BLOB_DIRECTORY: z.string().trim().min(1).optional(),
  ATRIUM_CLIENT_CACHE_MAX_ENTRIES: integerVar("ATRIUM_CLIENT_CACHE_MAX_ENTRIES", 1, 10_000_000, 5_000),
  ATRIUM_CLIENT_CACHE_MAX_BYTES: integerVar("ATRIUM_CLIENT_CACHE_MAX_BYTES", 64 * 1024, 1024 * 1024 * 1024, 32 * 1024 * 1024),
  ATRIUM_GRANT_LIFETIME_PUBLIC_DAYS: integerVar("ATRIUM_GRANT_LIFETIME_PUBLIC_DAYS", 1, 3650, 90),
  ATRIUM_GRANT_LIFETIME_CONFIDENTIAL_DAYS: integerVar("ATRIUM_GRANT_LIFETIME_CONFIDENTIAL_DAYS", 1, 3650, 730),
  ATRIUM_PERMISSION_SETS_DIR: z.string().min(1).optional(),
  ATRIUM_PERMISSION_SETS_NETWORK: booleanFlag,
  ATRIUM_DNS_SERVERS: z.string().optional(),
  // docs/decisions/0028a-plc-identity.md: one directory for the accounts' DIDs and the permission sets' authorities.
  ATRIUM_PLC_DIRECTORY_URL: optionalSetting((text) => {
    const url = parsedUrl(text);
    const allowed = url && (url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname)));
    if (url && allowed && !url.username && !url.password && !url.search && !url.hash) return { value: url.href.replace(/\/+$/, "") };
    return { refused: `must be an https URL (or http on a loopback host, for development and tests), without credentials (got ${JSON.stringify(text)})` };
  }),
  ATRIUM_PLC_ROTATION_KEY: optionalSetting((text) =>
    /^[0-9a-fA-F]{64}$/.test(text) ? { value: text.toLowerCase() } : { refused: "must be a secp256k1 private key written as 64 hexadecimal digits (make one with: openssl rand -hex 32)" },
  ),
  // docs/decisions/0050: the key that seals the accounts' signing keys in the database, and the keys it replaced.
  ATRIUM_KEY_ENCRYPTION_KEY: optionalSetting((text) =>
    HEX_KEY.test(text) ? { value: text.toLowerCase() } : { refused: "must be 32 random bytes written as 64 hexadecimal digits (make one with: openssl rand -hex 32)" },
  ),
  ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: optionalSetting((text) => {
    const keys = text.split(",").map((key) => key.trim()).filter(Boolean);
    if (keys.every((key) => HEX_KEY.test(key))) return { value: [...new Set(keys.map((key) => key.toLowerCase()))] };
    return { refused: "must be keys of 64 hexadecimal digits, separated by commas: the earlier values of ATRIUM_KEY_ENCRYPTION_KEY" };
  }),
  NODE_ENV: z.string().optional(),
  ATRIUM_LOG_LEVEL: logLevelVar,
  ATRIUM_LOG_REQUESTS: optionalFlag,
  // docs/decisions/0014: metrics on a port of their own, on loopback unless told otherwise.
  ATRIUM_METRICS_PORT: z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return undefined;
      const number = /^\d+$/.test(value.trim()) ? Number(value) : NaN;
      if (!Number.isSafeInteger(number) || number < 1 || number > 65535) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a port number from 1 to 65535 (got ${JSON.stringify(value)})` });
        return z.NEVER;
      }
      return number;
    }),
  ATRIUM_METRICS_HOST: z.string().trim().min(1, "must name an interface, e.g. 127.0.0.1").default("127.0.0.1"),
  // docs/decisions/0018: the operator's brand on every screen.
  ATRIUM_SERVICE_NAME: serviceNameVar,
  ATRIUM_LOGO_URL: brandUrlVar(),
  ATRIUM_PRIMARY_COLOR: optionalSetting((text) =>
    /^#[0-9a-fA-F]{6}$/.test(text) ? { value: text.toLowerCase() } : { refused: `must be a colour written #rrggbb, e.g. #0b6e4f (got ${JSON.stringify(text)})` },
  ),
  ATRIUM_TERMS_URL: brandUrlVar(),
  ATRIUM_PRIVACY_URL: brandUrlVar(),
  ATRIUM_SUPPORT_URL: brandUrlVar({ mailto: true }),
  // docs/decisions/0029: the firehose (com.atproto.sync.subscribeRepos) and the relays told of new events.
  ATRIUM_FIREHOSE_BACKFILL_HOURS: integerVar("ATRIUM_FIREHOSE_BACKFILL_HOURS", 1, 24 * 365, 72),
  ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: integerVar("ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS", 1, 100_000, 8),
  // docs/decisions/0044: subscriptions an address may open per minute, counted in the database across processes.
  ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE: integerVar("ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE", 1, 1_000_000, 30),
  ATRIUM_FIREHOSE_MAX_BUFFER_BYTES: integerVar("ATRIUM_FIREHOSE_MAX_BUFFER_BYTES", 64 * 1024, 1024 * 1024 * 1024, 8 * 1024 * 1024),
  ATRIUM_FIREHOSE_POLL_MS: integerVar("ATRIUM_FIREHOSE_POLL_MS", 10, 60_000, 200),
  ATRIUM_CRAWLERS: crawlersVar,
  // docs/decisions/0047: com.atproto.server.createSession and app passwords, on unless turned off.
  ATRIUM_PASSWORD_SESSIONS: optionalFlag,
  ATRIUM_APP_ACTIVITY: optionalFlag,
  // docs/decisions/0042: repository exports (getRepo, getBlocks, a record's proof from a snapshot).
  ATRIUM_REPO_EXPORTS_PER_ADDRESS: integerVar("ATRIUM_REPO_EXPORTS_PER_ADDRESS", 1, 10_000, 4),
  ATRIUM_REPO_EXPORTS_MAX: integerVar("ATRIUM_REPO_EXPORTS_MAX", 1, 10_000, 8),
  ATRIUM_REPO_EXPORT_IDLE_SECONDS: integerVar("ATRIUM_REPO_EXPORT_IDLE_SECONDS", 1, 3600, 60),
  ATRIUM_REPO_EXPORT_MAX_SECONDS: integerVar("ATRIUM_REPO_EXPORT_MAX_SECONDS", 1, 24 * 3600, 900),
  // docs/decisions/0020: password recovery by email.
  ATRIUM_SMTP_URL: smtpUrlVar,
  ATRIUM_EMAIL_FROM: emailFromVar,
  // docs/decisions/0052: sign-up (the screens, prompt=create, com.atproto.server.createAccount) and invite codes.
  ATRIUM_SIGNUP: optionalFlag,
  ATRIUM_INVITE_REQUIRED: optionalFlag,
  ATRIUM_INVITE_INTERVAL_DAYS: optionalSetting((text) =>
    /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 3650 ? { value: Number(text) } : { refused: `must be a whole number of days from 1 to 3650 (got ${JSON.stringify(text)})` },
  ),
  ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR: integerVar("ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR", 1, 1_000_000, 10),
  ATRIUM_HCAPTCHA_SITE_KEY: optionalSetting((text) => (/^[\w-]{1,200}$/.test(text) ? { value: text } : { refused: "must be the site key the captcha service gave you" })),
  ATRIUM_HCAPTCHA_SECRET: optionalSetting((text) => (/^[\x21-\x7e]{1,200}$/.test(text) ? { value: text } : { refused: "must be the secret the captcha service gave you" })),
  ATRIUM_HCAPTCHA_VERIFY_URL: captchaVerifyUrlVar,
  ATRIUM_CONTACT_EMAIL: contactEmailVar,
  // docs/decisions/0051: the operator's password (admin XRPC calls, pdsadmin, /admin).
  ATRIUM_ADMIN_PASSWORD: adminPasswordVar,
});

export type DatabaseSettings =
  | { engine: "sqlite"; url: string; /** The file, as DATABASE_URL names it after "file:". */ path: string }
  | {
      engine: "postgresql";
      url: string;
      /** Connections each server process keeps open at most for its requests. */
      poolSize: number;
      /** And for the snapshots its repository exports hold, at most one each (docs/decisions/0042). */
      snapshotPoolSize: number;
    };

/**
 * The blob content store (docs/decisions/0043): a folder (an absolute path) of files, or the database's BlobChunk rows.
 */
export type BlobStoreSettings = { kind: "disk"; folder: string } | { kind: "database" };

/** The operator's brand (docs/decisions/0018): shown on every screen. */
export type Brand = {
  /** ATRIUM_SERVICE_NAME, or the issuer's host name. */
  serviceName: string;
  /** An https URL (img-src allows https: already, for the apps' logos); none: a neutral mark. */
  logoUrl?: string;
  /** #rrggbb; none: the screens' own blue. */
  primaryColor?: string;
  termsUrl?: string;
  privacyUrl?: string;
  supportUrl?: string;
};

/** Sign-up and invite codes (docs/decisions/0052). */
export type SignUpSettings = {
  /** ATRIUM_SIGNUP: people may create accounts (the screens, prompt=create, createAccount); off, only the operator's tools. */
  enabled: boolean;
  /** ATRIUM_INVITE_REQUIRED: a sign-up needs an invite code (the reference's default). */
  inviteRequired: boolean;
  /** ATRIUM_INVITE_INTERVAL_DAYS: each account earns an invite code this often; undefined, none. */
  inviteIntervalMs: number | undefined;
  /** ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR: accounts one client address (an IPv6 /64) may create per hour. */
  perAddressPerHour: number;
  /** ATRIUM_HCAPTCHA_*: the captcha sign-up on the screens needs; undefined, none. */
  captcha: { siteKey: string; secret: string; verifyUrl: string } | undefined;
};

export type Config = {
  port: number;
  host: string;
  /** The issuer: an origin, byte for byte, without trailing slash. */
  issuer: string;
  publicUrl: URL;
  /** Where the data lives (docs/decisions/0017): one SQLite file, or a PostgreSQL database shared by every process. */
  database: DatabaseSettings;
  /** Server processes sharing the port (ATRIUM_WORKERS): 1 runs in this process; more run under a primary (server/workers.ts). */
  workers: number;
  allowPrivateClients: boolean;
  /**
   * Tests only (docs/decisions/0036): a file holding milliseconds that the server adds to its clock, read at every
   * reading of the clock (app/.server/util/test-clock.ts). Undefined everywhere else.
   */
  testClockFile: string | undefined;
  /** Tests only (docs/decisions/0036): new password hashes at a test cost (app/.server/accounts/password.ts). */
  testFastPasswordHashes: boolean;
  dpopNonceSecret: string | undefined;
  cookieSecret: string | undefined;
  dpopMaxAgeMs: number;
  dpopMaxFutureMs: number;
  /** Which reverse proxies are believed when they name the client in X-Forwarded-For. */
  trustProxy: TrustedProxies;
  /** The least severe level logged (`silent`: nothing). */
  logLevel: LogLevel;
  /** One log line per request: ATRIUM_LOG_REQUESTS, on by default when NODE_ENV is production. */
  logRequests: boolean;
  /** Where `GET /metrics` is served (Prometheus text), never on the public port; undefined: no metrics at all. */
  metrics: { port: number; host: string } | undefined;
  /** Handle suffixes advertised by describeServer. */
  userDomains: string[];
  /** The app view that app.bsky.* and chat.bsky.* calls go to without an atproto-proxy header: `did#service`. */
  appview: string;
  /** Service proxying (docs/decisions/0048). */
  proxy: {
    /** Where com.atproto.moderation.createReport goes without an atproto-proxy header: `did#service`. */
    reportService: string;
    /**
     * Services whose calls go to a set base URL instead of their DID document's endpoint (`did#service` → URL):
     * ATRIUM_PROXY_SERVICES, over the app view's and the report service's URL settings.
     */
    pinned: Record<string, string>;
    /** The largest upstream answer passed on; a larger one is cut off (502 when its length says so at once). */
    maxResponseBytes: number;
  };
  blobMaxBytes: number;
  /** Blob bytes one account may store, unreferenced blobs in their grace period included. */
  blobQuotaBytes: number;
  /** How long an uploaded or dereferenced blob may stay unreferenced before it is deleted. */
  blobUnreferencedGraceMs: number;
  /** Where the blobs' bytes are kept (docs/decisions/0043): files under a folder, or chunks in the database. */
  blobStore: BlobStoreSettings;
  /** The largest CAR com.atproto.repo.importRepo reads (docs/decisions/0055): a longer body is refused with 413. */
  importMaxBytes: number;
  /** Bounds of the client metadata cache in the database (oldest entries evicted first). */
  clientCache: { maxEntries: number; maxBytes: number };
  signInThrottle: SignInThrottleOptions;
  /** Requests per client address per minute (docs/architecture.md, "Abuse limits"). */
  rateLimits: { parPerMinute: number; tokenPerMinute: number; xrpcPerMinute: number; screenPerMinute: number };
  /** Pushed requests one client address may have waiting for an answer at once (docs/decisions/0022). */
  parPendingPerAddress: number;
  /** What one account may write to its repository per hour and per day (docs/decisions/0045). */
  writeBudget: WriteBudgetSettings;
  requestTimeoutMs: number;
  permissionSets: { directory?: string; network: boolean; dnsServers?: string[]; plcDirectoryUrl: string };
  /**
   * The accounts' did:plc identities (docs/decisions/0028a-plc-identity.md): the directory (ATRIUM_PLC_DIRECTORY_URL,
   * the permission sets' too) and the rotation key's hex, or undefined: generated and kept in the database.
   */
  plc: { directoryUrl: string; rotationKeyHex: string | undefined };
  /**
   * The key that seals the accounts' signing keys in the database (docs/decisions/0050): ATRIUM_KEY_ENCRYPTION_KEY's
   * hex, or undefined (plain http on loopback only: generated and kept in the database); and the earlier keys, which
   * open what they sealed until `npm run account -- rotate-key-encryption` seals it again.
   */
  keyEncryption: { keyHex: string | undefined; previousKeysHex: string[] };
  brand: Brand;
  /** com.atproto.sync.subscribeRepos (docs/decisions/0029). */
  firehose: {
    /** How far back a cursor replays; the event log keeps (at least) this much. */
    backfillMs: number;
    /** Open subscriptions per client address (an IPv6 /64: limitBucketOf), per process. */
    maxConnectionsPerAddress: number;
    /** Subscriptions a client address (an IPv6 /64) may open per minute, across processes (docs/decisions/0044). */
    upgradesPerMinute: number;
    /** A subscriber whose unsent bytes would pass this is cut off (ConsumerTooSlow). */
    maxBufferedBytes: number;
    /** How often each process reads the log for events other processes appended, while it has subscribers. */
    pollIntervalMs: number;
  };
  /**
   * Repository exports (com.atproto.sync.getRepo, getBlocks, a record's proof read from a snapshot): each holds a
   * database snapshot while its client reads (docs/decisions/0042).
   */
  repoExports: {
    /** At once per client address (IPv6: per /64), in this process. */
    perAddress: number;
    /** At once in this process, all addresses together. */
    inAll: number;
    /** An export whose client took no byte for this long is ended. */
    idleMs: number;
    /** An export is ended this long after it began, however it goes; its snapshot cannot be held longer. */
    maxMs: number;
  };
  /** Relays told with requestCrawl after writes, at most every 20 minutes each (ATRIUM_CRAWLERS). */
  crawlers: string[];
  /**
   * The operator's password (ATRIUM_ADMIN_PASSWORD, docs/decisions/0051): HTTP Basic admin:<password> on the admin
   * /xrpc methods (invite codes among them: docs/decisions/0052), and the operator page's sign-in. Undefined: both refused.
   */
  adminPassword: string | undefined;
  /** Where password-recovery email goes out (docs/decisions/0020); undefined: no email is sent. */
  email: { smtpUrl: string; from: string } | undefined;
  /** Sign-up and invite codes (docs/decisions/0052). */
  signUp: SignUpSettings;
  /** describeServer's contact address (ATRIUM_CONTACT_EMAIL). */
  contactEmail: string | undefined;
  /**
   * ATRIUM_PASSWORD_SESSIONS (docs/decisions/0047): apps may sign in with com.atproto.server.createSession and app
   * passwords, as with the reference PDS. Off: OAuth only, and those methods say so.
   */
  passwordSessions: boolean;
  /**
   * ATRIUM_APP_ACTIVITY (docs/decisions/0053): what each app did with its access is counted per day and shown on its
   * page in the account area. Off: nothing is counted, and the pages say so.
   */
  appActivity: boolean;
  /** Lifetimes (docs/configuration.md lists them), fixed except the grants' (docs/decisions/0010). */
  lifetimes: {
    requestUri: number;
    /** How long an expired or answered request whose screen was shown keeps its way back to the app (docs/decisions/0020, 0022). */
    requestRetention: number;
    code: number;
    accessToken: number;
    refreshToken: number;
    /** A grant's absolute lifetime for public clients... */
    grantPublic: number;
    /** ...and for confidential (private_key_jwt) ones. */
    grantConfidential: number;
    browserSession: number;
    clientMetadataCache: number;
    /** A password-recovery link (docs/decisions/0020). */
    recoveryCode: number;
    /** A code a person types from an email: recovery, a new email address, deleting the account (docs/decisions/0030). */
    typedCode: number;
  };
};

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

export const DEFAULT_PLC_DIRECTORY_URL = "https://plc.directory";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
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
function refuseMissingKeys(publicUrl: URL, loopbackHttp: boolean, e: { ATRIUM_PLC_ROTATION_KEY?: string; ATRIUM_KEY_ENCRYPTION_KEY?: string; ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS?: string[] }): void {
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

/** Loud warnings for settings that are unsafe in production. */
export function unsafeConfigWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.allowPrivateClients) {
    warnings.push(
      "ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS is on: client metadata may be fetched over plain http and from loopback or private addresses. Never enable this in production.",
    );
  }
  if (config.testClockFile !== undefined) {
    warnings.push(`ATRIUM_TEST_CLOCK_FILE is set: this server's clock is moved by ${config.testClockFile}. A test setting; never set it in production.`);
  }
  if (config.testFastPasswordHashes) {
    warnings.push("ATRIUM_TEST_FAST_PASSWORD_HASHES is on: new password hashes are weak. A test setting; never set it in production.");
  }
  for (const [service, url] of Object.entries(config.proxy.pinned)) {
    const target = parsedUrl(url);
    if (target?.protocol === "http:" && !isLoopbackHost(target.hostname)) {
      warnings.push(`Calls for ${service} go to ${url} over plain http: the service tokens and what the apps read cross the network in clear. Use https unless that network is private to you.`);
    }
  }
  if (config.plc.rotationKeyHex === undefined) {
    warnings.push(
      "ATRIUM_PLC_ROTATION_KEY is not set: the rotation key that can rewrite every account's DID document is generated and kept in the database, so a copy of the database can. A development setting; an https issuer refuses to start without it.",
    );
  }
  if (config.keyEncryption.keyHex === undefined) {
    warnings.push(
      "ATRIUM_KEY_ENCRYPTION_KEY is not set: the key that seals the accounts' signing keys is generated and kept in the database beside them, so a copy of the database signs as every account. A development setting; an https issuer refuses to start without it.",
    );
  }
  if (config.plc.directoryUrl.startsWith("http:")) {
    warnings.push(`ATRIUM_PLC_DIRECTORY_URL is ${config.plc.directoryUrl}: a development PLC directory on loopback. Accounts registered there exist nowhere else on the network.`);
  }
  if (config.publicUrl.protocol === "http:") {
    warnings.push(`The issuer ${config.issuer} uses plain http: fine for local development only.`);
  }
  const smtp = config.email ? new URL(config.email.smtpUrl) : undefined;
  if (smtp && smtp.protocol === "smtp:" && !isLoopbackHost(smtp.hostname) && smtp.searchParams.get("requireTLS") !== "true") {
    warnings.push(
      `ATRIUM_SMTP_URL reaches ${smtp.hostname} with smtp:// and does not insist on TLS: the SMTP password and the recovery links cross the network in clear if STARTTLS is stripped. Use smtps:// or add ?requireTLS=true.`,
    );
  }
  const { signUp } = config;
  // A captcha guards the form only: com.atproto.server.createAccount asks for none, as the reference's (docs/decisions/0052).
  if (signUp.enabled && !signUp.inviteRequired) {
    const captcha = signUp.captcha ? "the captcha (ATRIUM_HCAPTCHA_SITE_KEY) guards the sign-up form only, not com.atproto.server.createAccount" : "no captcha is set";
    warnings.push(
      `Anyone may create accounts here: ATRIUM_INVITE_REQUIRED is off and ${captcha}. Only ${signUp.perAddressPerHour} per hour per client address hold back a script that makes accounts by the thousand. Require invite codes, or turn sign-up off (ATRIUM_SIGNUP=off).`,
    );
  }
  if (config.database.engine === "postgresql" && config.blobStore.kind === "disk") {
    warnings.push(
      `ATRIUM_BLOB_DIRECTORY is ${config.blobStore.folder} with PostgreSQL: every server process, on every machine, must see this same folder (a shared file system); a blob uploaded through a machine that keeps it elsewhere is missing on the others. Unset it to keep the blobs in the database, which every process reaches.`,
    );
  }
  const plaintextDatabase = plaintextDatabaseHost(config.database);
  if (plaintextDatabase) {
    warnings.push(
      `DATABASE_URL reaches PostgreSQL at ${plaintextDatabase} without TLS (no sslmode=require or verify-full): tokens' hashes and account data cross the network in clear. Add ?sslmode=verify-full (or require) unless that network is private to you.`,
    );
  }
  return warnings;
}

/** The host of a PostgreSQL URL that is not on this machine and does not ask for TLS; undefined otherwise. */
function plaintextDatabaseHost(database: DatabaseSettings): string | undefined {
  if (database.engine !== "postgresql") return undefined;
  const url = parsedUrl(database.url);
  if (!url) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const local = host === "" || host === "localhost" || host === "::1" || host.startsWith("127.") || url.searchParams.get("host")?.startsWith("/");
  const tls = ["require", "verify-ca", "verify-full"].includes(url.searchParams.get("sslmode") ?? "") || url.searchParams.get("ssl") === "true";
  return local || tls ? undefined : host;
}
