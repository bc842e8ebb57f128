import type { TrustedProxies } from "../http/forwarded-address.ts";
import type { SignInThrottleOptions } from "../security/sign-in-throttle.ts";
import type { WriteBudgetSettings } from "../security/write-budget.ts";
import type { LogLevel } from "./environment.ts";

/** What a server runs with: the environment read and checked by loadConfig (config.ts), in the terms the code uses. */

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
  /**
   * ATRIUM_COUNTRY_DATABASE (docs/decisions/0056): the path of an IP-to-country CSV file (start_ip,end_ip,country_code),
   * read at start; the new-sign-in emails then name the country of the network a sign-in came from. Unset: they say
   * nothing of where.
   */
  countryDatabase?: string;
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
