import { availableParallelism } from "node:os";
import { z } from "zod";
import { parseTrustedProxies } from "../http/forwarded-address.ts";
import { DEFAULT_SIGN_IN_THROTTLE } from "../security/sign-in-throttle.ts";
import { DEFAULT_WRITE_BUDGET } from "../security/write-budget.ts";
import { SECOND } from "../util/time.ts";
import { hasHiddenCharacters } from "../util/visible-text.ts";
import { booleanFlag, integerVar, optionalFlag, optionalSetting, optionalWholeNumber, parsedUrl, urlAllowed, wholeNumberIn } from "./parsers.ts";

/**
 * The environment a server reads (docs/configuration.md has a row for each setting), parsed and checked one variable
 * at a time with zod; loadConfig (config.ts) then checks what goes together and builds the Config.
 */

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



/** ATRIUM_WORKERS: how many server processes share the port (docs/decisions/0021); "auto": one per core. */
const MAX_WORKERS = 256;
const workersVar = z
  .string()
  .optional()
  .transform((value, ctx) => {
    const text = value?.trim() ?? "";
    if (text === "") return 1;
    if (text === "auto") return Math.min(MAX_WORKERS, availableParallelism());
    const number = wholeNumberIn(text, 1, MAX_WORKERS);
    if (number !== undefined) return number;
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: `ATRIUM_WORKERS must be "auto" or a whole number from 1 to ${MAX_WORKERS} (got ${JSON.stringify(value)})` });
    return z.NEVER;
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


/**
 * A link the screens show for the operator (docs/decisions/0018): an absolute https URL (or, where `mailto` is
 * allowed, a mailto: address), without credentials; unset or empty means no link. Anything else is refused: a
 * javascript: or http: link on the sign-in screen is exactly what a phishing page would put there.
 */
function brandUrlVar(options: { mailto?: boolean } = {}) {
  return optionalSetting((text) => {
    const url = urlAllowed(text, { mailto: options.mailto });
    if (url && !/\s/.test(text)) return { value: url.href };
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
      const url = urlAllowed(text, { http: "loopback", query: false, fragment: false, path: false });
      if (!url) {
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
export const SERVICE_REF = /^did:[a-z]+:[^#\s]+#[a-zA-Z0-9_-]+$/;

/** Where calls for a service go without resolving its DID (docs/decisions/0048): an http(s) base URL without credentials. */
const serviceUrlVar = optionalSetting((text) => {
  const url = urlAllowed(text, { http: "anywhere", query: false, fragment: false });
  if (url) return { value: url.href.replace(/\/+$/, "") };
  return { refused: `must be an https (or http) base URL without credentials, query or fragment (got ${JSON.stringify(text)})` };
});

/** The reference PDS installer's app view and report service (its PDS_BSKY_APP_VIEW_* and PDS_REPORT_SERVICE_*). */
export const DEFAULT_APPVIEW = { service: "did:web:api.bsky.app#bsky_appview", url: "https://api.bsky.app" };
export const DEFAULT_REPORT_SERVICE = { service: "did:plc:ar7c4by46qjdydhdevvrndac#atproto_labeler", url: "https://mod.bsky.app" };

/** The hCaptcha-compatible service's verify endpoint (docs/decisions/0052): https, or http on loopback (tests). */
export const DEFAULT_HCAPTCHA_VERIFY_URL = "https://api.hcaptcha.com/siteverify";

const captchaVerifyUrlVar = optionalSetting((text) => {
  const url = urlAllowed(text, { http: "loopback", fragment: false });
  if (url) return { value: url.href };
  return { refused: `must be an https URL (or http on a loopback host, for tests), without credentials (got ${JSON.stringify(text)})` };
});

/** ATRIUM_CONTACT_EMAIL: describeServer's contact address. */
const contactEmailVar = optionalSetting((text) =>
  z.string().email().safeParse(text).success ? { value: text } : { refused: `must be an email address (got ${JSON.stringify(text)})` },
);
/** 32 bytes as 64 hexadecimal digits: `openssl rand -hex 32`. */
const HEX_KEY = /^[0-9a-fA-F]{64}$/;


export const envSchema = z.object({
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
    const url = urlAllowed(text, { http: "loopback", query: false, fragment: false });
    if (url) return { value: url.href.replace(/\/+$/, "") };
    return { refused: `must be an https URL (or http on a loopback host, for development and tests), without credentials (got ${JSON.stringify(text)})` };
  }),
  ATRIUM_PLC_ROTATION_KEY: optionalSetting((text) =>
    HEX_KEY.test(text) ? { value: text.toLowerCase() } : { refused: "must be a secp256k1 private key written as 64 hexadecimal digits (make one with: openssl rand -hex 32)" },
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
  ATRIUM_METRICS_PORT: optionalWholeNumber(1, 65535, "a port number"),
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
  // docs/decisions/0056: the local IP-to-country file the new-sign-in emails name the network's country from.
  ATRIUM_COUNTRY_DATABASE: z.string().trim().min(1).optional(),
  // docs/decisions/0052: sign-up (the screens, prompt=create, com.atproto.server.createAccount) and invite codes.
  ATRIUM_SIGNUP: optionalFlag,
  ATRIUM_INVITE_REQUIRED: optionalFlag,
  ATRIUM_INVITE_INTERVAL_DAYS: optionalWholeNumber(1, 3650, "a whole number of days"),
  ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR: integerVar("ATRIUM_SIGNUP_PER_ADDRESS_PER_HOUR", 1, 1_000_000, 10),
  ATRIUM_HCAPTCHA_SITE_KEY: optionalSetting((text) => (/^[\w-]{1,200}$/.test(text) ? { value: text } : { refused: "must be the site key the captcha service gave you" })),
  ATRIUM_HCAPTCHA_SECRET: optionalSetting((text) => (/^[\x21-\x7e]{1,200}$/.test(text) ? { value: text } : { refused: "must be the secret the captcha service gave you" })),
  ATRIUM_HCAPTCHA_VERIFY_URL: captchaVerifyUrlVar,
  ATRIUM_CONTACT_EMAIL: contactEmailVar,
  // docs/decisions/0051: the operator's password (admin XRPC calls, pdsadmin, /admin).
  ATRIUM_ADMIN_PASSWORD: adminPasswordVar,
});

export type Environment = z.infer<typeof envSchema>;

export const DEFAULT_PLC_DIRECTORY_URL = "https://plc.directory";
