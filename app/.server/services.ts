import { AccountLockdown } from "./accounts/account-lockdown.ts";
import { AccountManager } from "./accounts/account-manager.ts";
import { ConnectedApps } from "./accounts/connected-apps.ts";
import { PasskeyManager } from "./accounts/passkey-manager.ts";
import { SessionManager } from "./accounts/session-manager.ts";
import { SignIn } from "./accounts/sign-in.ts";
import { SignInThrottle } from "./security/sign-in-throttle.ts";
import type Database from "better-sqlite3";
import type { Config } from "./config.ts";
import { openDatabase } from "./db/index.ts";
import { AuthorizeManager } from "./oauth/authorize/authorize-manager.ts";
import { ClientManager } from "./oauth/client/client-manager.ts";
import { DpopNonces } from "./oauth/dpop/dpop-nonce.ts";
import { DpopVerifier } from "./oauth/dpop/dpop-verifier.ts";
import { ParManager } from "./oauth/request/par-manager.ts";
import { SqliteReplayStore } from "./oauth/replay/replay-store.ts";
import { AccessTokenVerifier } from "./oauth/token/access-token-verifier.ts";
import { TokenManager } from "./oauth/token/token-manager.ts";
import { PrismaClientStore } from "./stores/prisma-client-store.ts";
import { loadOrCreateSecret } from "./stores/secrets.ts";
import { challengeMacKey, SignedChallengeStore } from "./stores/signed-challenge-store.ts";
import { SqliteAttemptStore } from "./stores/sqlite-attempt-store.ts";
import { SqliteGrantStore } from "./stores/sqlite-grant-store.ts";
import { DirectoryPermissionSetResolver } from "./oauth/scopes/permission-sets/directory-resolver.ts";
import { NetworkPermissionSetResolver } from "./oauth/scopes/permission-sets/network-resolver.ts";
import type { PermissionSetResolver } from "./oauth/scopes/permission-sets/permission-set-resolver.ts";
import { SqlitePermissionSetCache } from "./stores/sqlite-permission-set-cache.ts";
import { SqliteBlobStore } from "./stores/sqlite-blob-store.ts";
import { SqliteRepoStore } from "./stores/sqlite-repo-store.ts";
import { SqliteRequestStore } from "./stores/sqlite-request-store.ts";
import { databaseCheck } from "./observability/health.ts";
import { SILENT_LOGGER, type Logger } from "./observability/logger.ts";
import { NO_METRICS, type Metrics } from "./observability/metrics.ts";
import { errorReporter } from "./observability/report-error.ts";

export type Services = ReturnType<typeof createServices>;

/** docs/architecture.md, "Scopes and the data server": include: scopes need a resolver; a directory of lexicons wins over the network when both are configured. */
export function permissionSetResolver(config: Config, sqlite: Database.Database, log: Logger = SILENT_LOGGER): PermissionSetResolver | undefined {
  const { directory, network, dnsServers, plcDirectoryUrl } = config.permissionSets;
  if (directory) return new DirectoryPermissionSetResolver(directory);
  if (network) {
    return new NetworkPermissionSetResolver({
      cache: new SqlitePermissionSetCache(sqlite),
      allowPrivate: config.allowPrivateClients,
      dnsServers,
      plcDirectoryUrl,
      onStaleServed: (nsid, error) => log.warn({ nsid, err: error }, "Serving a cached permission set: refreshing it failed"),
    });
  }
  return undefined;
}

/**
 * Wires the provider from configuration: the one place that knows every
 * implementation. Called once by the entry (server.ts), which hands the result
 * to both the API handler and the screens (docs/decisions/0013); `close()`
 * releases the database at shutdown. The entry also hands over its logger and
 * metrics (docs/decisions/0014); scripts and tests get silence and no metrics.
 */
export function createServices(config: Config, observability: { log?: Logger; metrics?: Metrics } = {}, now: () => number = Date.now) {
  const log = observability.log ?? SILENT_LOGGER;
  const metrics = observability.metrics ?? NO_METRICS;
  const database = openDatabase(config);
  const { prisma, sqlite } = database;
  // One clock for every component that reads time (tests of the components pass their own).
  const replay = new SqliteReplayStore(sqlite, now);
  const requests = new SqliteRequestStore(sqlite);
  const grants = new SqliteGrantStore(sqlite);
  const atomically = <T>(fn: () => T): T => sqlite.transaction(fn).immediate();

  const nonces = new DpopNonces(config.dpopNonceSecret ?? loadOrCreateSecret(sqlite, "dpop_nonce"), undefined, now);
  const cookieSecret = config.cookieSecret ?? loadOrCreateSecret(sqlite, "cookie");
  const dpop = new DpopVerifier(nonces, replay, { maxAgeMs: config.dpopMaxAgeMs, maxFutureMs: config.dpopMaxFutureMs, now });
  const clients = new ClientManager(new PrismaClientStore(prisma, config.clientCache), replay, {
    issuer: config.issuer,
    allowPrivate: config.allowPrivateClients,
    cacheTtlMs: config.lifetimes.clientMetadataCache,
    assertionMaxAgeMs: config.dpopMaxAgeMs,
    assertionMaxFutureMs: config.dpopMaxFutureMs,
    now,
  });
  const accounts = new AccountManager(prisma);
  const passkeys = new PasskeyManager(prisma, new SignedChallengeStore(challengeMacKey(cookieSecret), replay, now), config.issuer, now);
  const blobs = new SqliteBlobStore(sqlite, { quotaBytes: config.blobQuotaBytes, unreferencedGraceMs: config.blobUnreferencedGraceMs });

  return {
    config,
    /** The clock of every component here; the data-server handlers read it too. */
    now,
    log,
    metrics,
    /** Logs an unexpected error with its stack (and counts it when the database raised it). */
    reportError: errorReporter(log, metrics),
    /** Throws when the database does not answer (GET /xrpc/_health). */
    checkDatabase: databaseCheck(sqlite),
    cookieSecret,
    nonces,
    dpop,
    clients,
    accounts,
    sessions: new SessionManager(prisma, config.lifetimes.browserSession, now),
    par: new ParManager(clients, requests, {
      requestUriLifetimeMs: config.lifetimes.requestUri,
      permissionSets: permissionSetResolver(config, sqlite, log),
      now,
    }),
    authorize: new AuthorizeManager(config.issuer, clients, requests, grants, atomically, {
      requestUriLifetimeMs: config.lifetimes.requestUri,
      codeLifetimeMs: config.lifetimes.code,
      now,
    }),
    tokens: new TokenManager(
      clients,
      grants,
      {
        accessTokenMs: config.lifetimes.accessToken,
        refreshTokenMs: config.lifetimes.refreshToken,
        grantPublicMs: config.lifetimes.grantPublic,
        grantConfidentialMs: config.lifetimes.grantConfidential,
      },
      metrics,
      now,
    ),
    accessTokens: new AccessTokenVerifier(grants, dpop, now),
    repo: new SqliteRepoStore(sqlite, blobs),
    blobs,
    passkeys,
    signIn: new SignIn(accounts, passkeys, new SignInThrottle(new SqliteAttemptStore(sqlite), config.signInThrottle, now), metrics),
    connectedApps: new ConnectedApps(prisma, grants, now),
    lockdown: new AccountLockdown(sqlite, grants),
    close: () => database.close(),
  };
}
