import { deletionEmail, emailChangeEmails, emailConfirmationEmail, keyAddedEmail, plcOperationEmail, recoveryEmail, signInCodeEmail } from "./email/templates.ts";
import { AccountManager } from "./accounts/account-manager.ts";
import { HandleRules } from "./accounts/handle-rules.ts";
import { ConnectedApps } from "./accounts/connected-apps.ts";
import { PasskeyManager } from "./accounts/passkey-manager.ts";
import { SessionManager } from "./accounts/session-manager.ts";
import { SignIn } from "./accounts/sign-in.ts";
import { PasswordRecovery } from "./accounts/password-recovery.ts";
import { SmtpMailer } from "./email/mailer.ts";
import { SqlRecoveryStore } from "./stores/sql-recovery-store.ts";
import { AccountDeletion } from "./accounts/account-deletion.ts";
import { SqlAccountDeletionStore } from "./stores/sql-account-deletion-store.ts";
import { SqlTypedCodeStore } from "./stores/sql-typed-code-store.ts";
import { SqlEmailUpdateStore } from "./stores/sql-email-update-store.ts";
import { EmailUpdate } from "./accounts/email-update.ts";
import { MAX_CODE_GUESSES, TypedCodes, typedCodeKey } from "./accounts/typed-codes.ts";
import { HOUR, MINUTE } from "./util/time.ts";
import { RequestLimiter } from "./security/request-limiter.ts";
import { WriteBudget } from "./security/write-budget.ts";
import { SqlLimitStore } from "./stores/sql-limit-store.ts";
import { SignInThrottle } from "./security/sign-in-throttle.ts";
import type { Config } from "./config.ts";
import { openDatabase } from "./db/index.ts";
import type { Database } from "./db/sql.ts";
import { AuthorizeManager } from "./oauth/authorize/authorize-manager.ts";
import { ClientManager } from "./oauth/client/client-manager.ts";
import { DpopNonces } from "./oauth/dpop/dpop-nonce.ts";
import { DpopVerifier } from "./oauth/dpop/dpop-verifier.ts";
import { ParManager } from "./oauth/request/par-manager.ts";
import { AccessTokenVerifier } from "./oauth/token/access-token-verifier.ts";
import { TokenManager } from "./oauth/token/token-manager.ts";
import { SqlSecretStore } from "./stores/secrets.ts";
import { SqlSigningKeyStore } from "./stores/sql-signing-key-store.ts";
import { loadSigningKeys } from "./accounts/signing-key-setup.ts";
import type { SigningKeys } from "./accounts/signing-key.ts";
import { challengeMacKey, SignedChallengeStore } from "./stores/signed-challenge-store.ts";
import { SqlAccountStore } from "./stores/sql-account-store.ts";
import { AccountStatusManager } from "./accounts/account-status.ts";
import { SqlTakedownStore } from "./stores/sql-takedown-store.ts";
import { SqlAdminSessionStore } from "./stores/sql-admin-session-store.ts";
import { AdminAuth, DEFAULT_ADMIN_THROTTLE } from "./admin/admin-auth.ts";
import { AdminSessions } from "./admin/admin-sessions.ts";
import { hmacBase64url } from "./util/crypto.ts";
import { SqlAttemptStore } from "./stores/sql-attempt-store.ts";
import { SqlBlobStore } from "./stores/sql-blob-store.ts";
import { SqlBlobChunks } from "./stores/sql-blob-chunks.ts";
import { Blobs } from "./blobs/blobs.ts";
import { DiskBlobContent } from "./blobs/disk-blob-content.ts";
import { moveLegacyBlobBytes } from "./blobs/blob-bytes-migration.ts";
import type { ErrorReporter } from "./observability/report-error.ts";
import { SqlClientStore } from "./stores/sql-client-store.ts";
import { SqlConsentStore } from "./stores/sql-consent-store.ts";
import { SqlGrantStore } from "./stores/sql-grant-store.ts";
import { SqlPasskeyStore } from "./stores/sql-passkey-store.ts";
import { SqlPermissionSetCache } from "./stores/sql-permission-set-cache.ts";
import { SqlReplayStore } from "./stores/sql-replay-store.ts";
import { SqlRepoStore } from "./stores/sql-repo-store.ts";
import { SqlEventLog } from "./stores/sql-event-log.ts";
import { AppendSignal } from "./sync/append-signal.ts";
import { ExportWatch } from "./sync/export-watch.ts";
import { RepoExports } from "./sync/repo-exports.ts";
import { RepoWriter } from "./repo/repo-writer.ts";
import { migrateRepositories } from "./repo/repository-migration.ts";
import { SqlRequestStore } from "./stores/sql-request-store.ts";
import { SqlSessionStore } from "./stores/sql-session-store.ts";
import { DirectoryPermissionSetResolver } from "./oauth/scopes/permission-sets/directory-resolver.ts";
import { NetworkPermissionSetResolver } from "./oauth/scopes/permission-sets/network-resolver.ts";
import type { PermissionSetResolver } from "./oauth/scopes/permission-sets/permission-set-resolver.ts";
import { PlcDirectory } from "./identity/plc-directory.ts";
import { DidResolver } from "./identity/did-resolver.ts";
import { ServiceJwtVerifier } from "./identity/service-jwt-verifier.ts";
import { atprotoSigningKey } from "./identity/did-document.ts";
import { ServiceDirectory } from "./xrpc/proxy-target.ts";
import { UpstreamClient } from "./xrpc/upstream-client.ts";
import { SigningKeyCache } from "./accounts/signing-key-cache.ts";
import { PlcIdentity } from "./identity/plc-identity.ts";
import { PlcOperations } from "./identity/plc-operations.ts";
import { OwnKeys } from "./identity/own-keys.ts";
import { loadRotationKey } from "./identity/rotation-key.ts";
import { SILENT_LOGGER, type Logger } from "./observability/logger.ts";
import { NO_METRICS, type Metrics } from "./observability/metrics.ts";
import { errorReporter } from "./observability/report-error.ts";
import { testClock } from "./util/test-clock.ts";
import { setTestPasswordCost } from "./accounts/password.ts";
import { AppPasswords } from "./accounts/app-passwords.ts";
import { EmailAuthFactor } from "./accounts/email-auth-factor.ts";
import { PasswordSessions } from "./accounts/password-sessions.ts";
import { sessionJwtKeys } from "./accounts/session-jwt.ts";
import { serverDid } from "./config.ts";
import { SqlAppPasswordStore } from "./stores/sql-app-password-store.ts";
import { RepoImporter } from "./repo/repo-import.ts";
import { SqlRepoImportStore } from "./stores/sql-repo-import-store.ts";
import { MovingIn, publishedByDocument, publishedByPlc } from "./accounts/moving-in.ts";
import { SqlPasswordSessionStore } from "./stores/sql-password-session-store.ts";
import { InviteCodes } from "./accounts/invite-codes.ts";
import { SqlInviteStore } from "./stores/sql-invite-store.ts";
import { EmailConfirmation } from "./accounts/email-confirmation.ts";
import { SignUp } from "./accounts/sign-up.ts";
import { Captcha } from "./security/captcha.ts";
import { AppActivity } from "./activity/app-activity.ts";
import { SqlActivityStore } from "./stores/sql-activity-store.ts";
import { newAppEmail, newBrowserEmail } from "./email/templates.ts";
import { CountryDatabase, CountryDatabaseError } from "./notices/country-database.ts";
import { SignInNotices } from "./notices/sign-in-notices.ts";
import { SqlNoticeStore } from "./stores/sql-notice-store.ts";
import { ConfigError } from "./config.ts";

export type Services = Awaited<ReturnType<typeof createServices>>;

/** How often the exports in progress are checked for idling and for their deadline (their client's clock is `now`). */
const EXPORT_SWEEP_MS = 1_000;

/**
 * Password-recovery requests and resets (docs/decisions/0020), counted like sign-ins on counters of their own: three
 * emails per account at once (capped quietly), twelve requests per address (then a 429), then a growing wait from a
 * minute, remembered for an hour.
 */
const RECOVERY_THROTTLE = { freeAttempts: 3, baseDelayMs: MINUTE, maxDelayMs: HOUR, memoryMs: HOUR };

/** docs/architecture.md, "Scopes and the data server": include: scopes need a resolver; a directory of lexicons wins over the network when both are configured. */
export function permissionSetResolver(config: Config, db: Database, log: Logger = SILENT_LOGGER, didResolver?: DidResolver): PermissionSetResolver | undefined {
  const { directory, network, dnsServers, plcDirectoryUrl } = config.permissionSets;
  if (directory) return new DirectoryPermissionSetResolver(directory);
  if (network) {
    return new NetworkPermissionSetResolver({
      cache: new SqlPermissionSetCache(db),
      allowPrivate: config.allowPrivateClients,
      dnsServers,
      plcDirectoryUrl,
      didResolver,
      onStaleServed: (nsid, error) => log.warn({ nsid, err: error }, "Serving a cached permission set: refreshing it failed"),
    });
  }
  return undefined;
}

/**
 * The one DID resolver (identity/did-resolver.ts) and service proxying's directory of services and HTTP client
 * (docs/decisions/0048), made once per process.
 */
function serviceProxying(config: Config, now: () => number, log: Logger, accounts: AccountManager) {
  const dids = new DidResolver({
    plcDirectoryUrl: config.plc.directoryUrl,
    allowPrivate: config.allowPrivateClients,
    now,
    onStaleServed: (did, error) => log.warn({ did, err: error }, "Serving a cached DID document: resolving it again failed"),
  });
  const upstreams = new UpstreamClient({ allowPrivate: config.allowPrivateClients, maxResponseBytes: config.proxy.maxResponseBytes });
  const proxyKeys = new SigningKeyCache((did) => accounts.signingKeypair(did), now);
  return { dids, upstreams, proxyKeys, serviceDirectory: new ServiceDirectory(config.proxy.pinned, dids, upstreams) };
}

/** The repositories' store and writer (docs/decisions/0027); the account CLI makes accounts with them too. */
export function repositories(config: Config, db: Database, signingKeys: SigningKeys, now: () => number) {
  // docs/decisions/0029: events are kept for the firehose's backfill window, then pruned lazily.
  const repo = new SqlRepoStore(db, { blobGraceMs: config.blobUnreferencedGraceMs, eventRetentionMs: config.firehose.backfillMs });
  // Tells this process's firehose of every commit at once (other processes' arrive by polling).
  const appended = new AppendSignal();
  const repoWriter = new RepoWriter(repo, signingKeys, now, () => appended.notify());
  return { repo, repoWriter, eventLog: new SqlEventLog(db, config.firehose.backfillMs), appended };
}

/**
 * The blobs (docs/decisions/0043): their metadata store, and the content store of their bytes that the settings name.
 * The account CLI deletes accounts, and their blobs' bytes, with the same.
 */
export function blobStorage(config: Config, db: Database, now: () => number, report: ErrorReporter) {
  const store = new SqlBlobStore(db, { quotaBytes: config.blobQuotaBytes, unreferencedGraceMs: config.blobUnreferencedGraceMs });
  const content = config.blobStore.kind === "disk" ? new DiskBlobContent(config.blobStore.folder) : new SqlBlobChunks(db);
  return { store, blobs: new Blobs(store, content, { maxBytes: config.blobMaxBytes, now, report }) };
}

/**
 * The accounts' did:plc identities at ATRIUM_PLC_DIRECTORY_URL, signed with the server's rotation key
 * (docs/decisions/0028a-plc-identity.md). The account CLI builds the same.
 */
export async function plcIdentity(config: Config, db: Database, now: number): Promise<PlcIdentity> {
  return new PlcIdentity(new PlcDirectory(config.plc.directoryUrl), await loadRotationKey(config.plc.rotationKeyHex, new SqlSecretStore(db), now), config.issuer);
}

/**
 * The accounts' signing keys, sealed under ATRIUM_KEY_ENCRYPTION_KEY (docs/decisions/0050): what a copy of the
 * database could read is sealed first, which is logged. The account CLI builds the same, with the same key.
 */
export async function accountSigningKeys(config: Config, db: Database, now: number, log: Logger = SILENT_LOGGER): Promise<SigningKeys> {
  return loadSigningKeys(config.keyEncryption, new SqlSecretStore(db), new SqlSigningKeyStore(db), now, ({ from, accounts }) =>
    log.info({ from, accounts }, from === "clear" ? "Sealed the signing keys stored in the clear" : "Sealed the signing keys of the database-kept key under ATRIUM_KEY_ENCRYPTION_KEY"),
  );
}

/** ATRIUM_COUNTRY_DATABASE read into memory (docs/decisions/0056); a file it cannot use stops the start, naming why. */
export function countryDatabase(config: Config): CountryDatabase | undefined {
  if (config.countryDatabase === undefined) return undefined;
  try {
    return CountryDatabase.load(config.countryDatabase);
  } catch (error) {
    if (error instanceof CountryDatabaseError) throw new ConfigError(`ATRIUM_COUNTRY_DATABASE: ${error.message}`);
    throw error;
  }
}

/**
 * The keys' checks and the sealing of a start, on their own (the primary of several workers runs them before forking,
 * so that a missing or wrong key stops it with its message instead of a loop of workers that die): a ConfigError
 * names what is wrong.
 */
export async function prepareKeys(config: Config, log: Logger): Promise<void> {
  // The country file too: a worker would otherwise die on it, again and again.
  countryDatabase(config);
  const db = openDatabase(config.database);
  try {
    await accountSigningKeys(config, db, Date.now(), log);
    await plcIdentity(config, db, Date.now());
  } finally {
    await db.close();
  }
}

/**
 * Wires the provider from configuration: the one place that knows every
 * implementation. Called once by the entry (server.ts), which hands the result
 * to both the API handler and the screens (docs/decisions/0013); `close()`
 * releases the database at shutdown. The entry also hands over its logger and
 * metrics (docs/decisions/0014); scripts and tests get silence and no metrics.
 * The database must be migrated already (the entry does it first).
 */
export async function createServices(
  config: Config,
  observability: { log?: Logger; metrics?: Metrics } = {},
  // The real clock; a test server's moved by ATRIUM_TEST_CLOCK_FILE (docs/decisions/0036).
  now: () => number = config.testClockFile === undefined ? Date.now : testClock(config.testClockFile),
) {
  const log = observability.log ?? SILENT_LOGGER;
  const metrics = observability.metrics ?? NO_METRICS;
  if (config.testFastPasswordHashes) setTestPasswordCost();
  // Before the database opens: a file it cannot use stops the start with nothing to close.
  const countries = countryDatabase(config);
  const db = openDatabase(config.database, (error) => log.error({ err: error }, "An idle database connection failed"));
  // One clock for every component that reads time (tests of the components pass their own).
  const replay = new SqlReplayStore(db, now);
  const requests = new SqlRequestStore(db, config.lifetimes.requestRetention);
  const grants = new SqlGrantStore(db);

  const secrets = new SqlSecretStore(db);
  const nonces = new DpopNonces(config.dpopNonceSecret ?? (await secrets.loadOrCreate("dpop_nonce", now())), undefined, now);
  const cookieSecret = config.cookieSecret ?? (await secrets.loadOrCreate("cookie", now()));
  const dpop = new DpopVerifier(nonces, replay, { maxAgeMs: config.dpopMaxAgeMs, maxFutureMs: config.dpopMaxFutureMs, now });
  const clients = new ClientManager(new SqlClientStore(db, config.clientCache), replay, {
    issuer: config.issuer,
    allowPrivate: config.allowPrivateClients,
    cacheTtlMs: config.lifetimes.clientMetadataCache,
    assertionMaxAgeMs: config.dpopMaxAgeMs,
    assertionMaxFutureMs: config.dpopMaxFutureMs,
    now,
  });
  // Before anything signs: the keys a copy of the database could read are sealed (docs/decisions/0050).
  const signingKeys = await accountSigningKeys(config, db, now(), log);
  const { repo, repoWriter, eventLog, appended } = repositories(config, db, signingKeys, now);
  const takedowns = new SqlTakedownStore(db, config.firehose.backfillMs);
  const accountStore = new SqlAccountStore(db);
  // docs/decisions/0028a: a handle change is announced on the firehose as an #identity event (none once deleted).
  const announceIdentity = async (did: string) => {
    if (await repo.announceIdentity(did, now())) appended.notify();
  };
  const identity = await plcIdentity(config, db, now());
  const handleRules = new HandleRules(config.userDomains);
  const accounts = new AccountManager(accountStore, identity, { handles: handleRules, signingKeys, now, onIdentityChanged: announceIdentity, repositories: repoWriter });
  // docs/decisions/0027: accounts made before repositories existed get their first commit, after the SQL migrations.
  await migrateRepositories(repo, repoWriter, log);
  const passkeys = new PasskeyManager(new SqlPasskeyStore(db), new SignedChallengeStore(challengeMacKey(cookieSecret), replay, now), config.issuer, now, (credentialId) =>
    // WebAuthn: a counter that does not advance "is a signal that the authenticator may be cloned".
    log.warn({ credentialId }, "A passkey sign-in was refused: its signature counter did not advance (or it was removed meanwhile)"),
  );
  const reportError = errorReporter(log, metrics);
  const { store: blobStore, blobs } = blobStorage(config, db, now, reportError);
  // docs/decisions/0043: blobs stored before the content store get their bytes moved into it, after the SQL migrations.
  await moveLegacyBlobBytes(blobStore, blobs.content, now, log);
  const mailer = config.email ? new SmtpMailer(config.email.smtpUrl, config.email.from) : undefined;
  // docs/decisions/0030: codes a person types, keyed by a key derived from the cookie secret.
  const typedCodes = new TypedCodes(new SqlTypedCodeStore(db), typedCodeKey(cookieSecret), { lifetimeMs: config.lifetimes.typedCode, maxGuesses: MAX_CODE_GUESSES, now });
  const limiter = new RequestLimiter(new SqlLimitStore(db), { now, onFlushError: (error) => reportError("Writing the request counts failed", error) });
  const accountStatus = new AccountStatusManager(repo, takedowns, async (did) => (await accountStore.find("did", did))?.handle, now, () => appended.notify());
  // docs/decisions/0051: HTTP Basic admin:<ATRIUM_ADMIN_PASSWORD>, throttled per address and for the whole server.
  const adminAuth = new AdminAuth(config.adminPassword, new SqlAttemptStore(db), DEFAULT_ADMIN_THROTTLE, now);
  // docs/decisions/0047: app passwords and password sessions, whose JWT keys are derived from the cookie secret.
  const appPasswords = new AppPasswords(new SqlAppPasswordStore(db), now);
  const passwordSessions = new PasswordSessions(new SqlPasswordSessionStore(db), sessionJwtKeys(cookieSecret), {
    serviceDid: serverDid(config),
    enabled: config.passwordSessions,
    now,
  });
  // docs/decisions/0042: exports hold a snapshot while their clients read; capped, and ended when idle or too long.
  const exportWatch = new ExportWatch(config.repoExports, now, (ticket, ended) => log.info({ address: ticket.bucket, reason: ended.reason }, `A repository export was ended: ${ended.message}`));
  exportWatch.start(EXPORT_SWEEP_MS);
  metrics.watchRepoExports(() => exportWatch.state());
  const proxying = serviceProxying(config, now, log, accounts);
  const { signUp: signUpSettings } = config;
  // docs/decisions/0052: invite codes, the address's confirmation by a typed code, sign-up.
  const invites = new InviteCodes(new SqlInviteStore(db), { hostname: config.publicUrl.hostname, required: signUpSettings.inviteRequired, intervalMs: signUpSettings.inviteIntervalMs, now });
  const emailConfirmation = new EmailConfirmation(accounts, typedCodes, mailer, new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "email-confirmation"), {
    serviceName: config.brand.serviceName,
    email: emailConfirmationEmail,
    onSendError: (error) => reportError("Sending the email-confirmation code failed", error),
  });
  const signUp = new SignUp(
    accounts,
    handleRules,
    invites,
    new SqlLimitStore(db),
    emailConfirmation,
    signUpSettings.captcha ? new Captcha(signUpSettings.captcha) : undefined,
    { enabled: signUpSettings.enabled, perAddressPerHour: signUpSettings.perAddressPerHour },
    now,
  );
  const repoImports = new SqlRepoImportStore(db);
  const plcDirectory = new PlcDirectory(config.plc.directoryUrl);
  const signingDidKey = async (did: string) => (await accounts.signingKeypair(did))?.did();
  // What a DID says of its account now: a did:plc from the directory itself, never from a cache (the person has just
  // submitted an operation), a did:web from its document.
  const published = async (did: string) =>
    did.startsWith("did:plc:") ? publishedByPlc(await plcDirectory.lastOperation(did)) : publishedByDocument(await proxying.dids.resolve(did));
  const sessions = new SessionManager(new SqlSessionStore(db), config.lifetimes.browserSession, now);
  const connectedApps = new ConnectedApps(new SqlConsentStore(db), grants, now);
  // docs/decisions/0056: the emails of a new browser's sign-in and a new app, ended by the existing revocations.
  const signInNotices = new SignInNotices(new SqlNoticeStore(db), new SqlLimitStore(db), mailer, {
    issuer: config.issuer,
    serviceName: config.brand.serviceName,
    newBrowser: newBrowserEmail,
    newApp: newAppEmail,
    countries,
    ends: {
      browser: async (did, deviceHash) => {
        await sessions.destroyBrowser(did, deviceHash);
      },
      app: async (did, clientId, since) => {
        // The access that email told of: a consent given again after a disconnection is another.
        if ((await connectedApps.find(did, clientId))?.firstAuthorizedAt.getTime() === since) await connectedApps.revoke(did, clientId);
      },
    },
    now,
    onError: (message, error) => reportError(message, error),
    onBounded: (did) => log.warn({ did }, "A new-sign-in email was not sent: the account had its three this hour"),
  });

  return {
    config,
    /** The clock of every component here; the data-server handlers read it too. */
    now,
    log,
    metrics,
    db,
    /** Logs an unexpected error with its stack (and counts it when the database raised it). */
    reportError,
    /** Per-address request limits of the entry (server.ts), shared by every process on the database. */
    limiter,
    /** Throws when the database does not answer (GET /xrpc/_health). */
    checkDatabase: async () => db.ping(),
    cookieSecret,
    nonces,
    dpop,
    clients,
    accounts,
    /** Deactivation and reactivation (docs/decisions/0031), takedowns (docs/decisions/0051). */
    accountStatus,
    /** Takedowns of records and blobs, and the takedown state of each (docs/decisions/0051). */
    takedowns,
    /** The operator's credential (docs/decisions/0051). */
    adminAuth,
    /** The operator page's sign-in (docs/decisions/0051). */
    adminSessions: new AdminSessions(adminAuth, new SqlAdminSessionStore(db), hmacBase64url(cookieSecret, "admin-session-password-tag"), now),
    /** The operator's email (com.atproto.admin.sendEmail); undefined without ATRIUM_SMTP_URL. */
    mailer,
    /**
     * Service tokens other servers signed for an account, checked against the `#atproto` key of its DID document
     * (createAccount with `did`: docs/decisions/0055).
     */
    serviceJwts: new ServiceJwtVerifier(async (did, fresh) => atprotoSigningKey(await proxying.dids.resolve(did, { fresh })), now),
    /** checkAccountStatus, listMissingBlobs and activateAccount for an account moving here (docs/decisions/0055). */
    movingIn: new MovingIn({
      imports: repoImports,
      accountStatus,
      signingDidKey,
      published,
      rotationDidKey: (await loadRotationKey(config.plc.rotationKeyHex, secrets, now())).did(),
      pdsEndpoint: config.issuer,
    }),
    sessions,
    /** The emails of a new browser's sign-in and a new app, and their one-click links (docs/decisions/0056). */
    signInNotices,
    par: new ParManager(clients, requests, {
      requestUriLifetimeMs: config.lifetimes.requestUri,
      pendingPerAddress: config.parPendingPerAddress,
      permissionSets: permissionSetResolver(config, db, log, proxying.dids),
      now,
      signUp: config.signUp.enabled,
    }),
    authorize: new AuthorizeManager(config.issuer, clients, requests, {
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
    /** Other parties' DID documents, through the hardened fetch, cached within bounds (docs/decisions/0048). */
    dids: proxying.dids,
    /** Service proxying: where each service is, and the calls to it (docs/decisions/0048). */
    serviceDirectory: proxying.serviceDirectory,
    upstreams: proxying.upstreams,
    /** The accounts' signing keys for service tokens, kept a minute (docs/decisions/0048). */
    proxyKeys: proxying.proxyKeys,
    repo,
    /** getRepo, getBlocks and a record's proof, as CAR files read from snapshots (docs/decisions/0042). */
    repoExports: new RepoExports(repo, exportWatch, metrics, { maxHoldMs: config.repoExports.maxMs }),
    /** Commits to the accounts' repositories (docs/decisions/0027). */
    repoWriter,
    /** What each app did with its access, counted per day (docs/decisions/0053). */
    activity: new AppActivity(new SqlActivityStore(db), { enabled: config.appActivity, now }),
    /** Accounts moving here: importRepo, and what checkAccountStatus and listMissingBlobs read (docs/decisions/0055). */
    repoImports,
    repoImporter: new RepoImporter(
      {
        repo,
        imports: repoImports,
        signingKeypair: (did, stored) => signingKeys.keypair(did, stored),
        trustedKeys: async (did) => {
          const own = await signingDidKey(did);
          const here = own === undefined ? [] : [own];
          const named = (await published(did).catch(() => undefined))?.signingKey;
          return [...new Set([...(named === undefined ? [] : [named]), ...here])];
        },
        now,
      },
      { stagedForMs: HOUR },
    ),
    /** Each account's repository writes per hour and per day, decided in the database (docs/decisions/0045). */
    writeBudget: new WriteBudget(new SqlLimitStore(db), config.writeBudget, now),
    /** The sequencer's log, which subscribeRepos replays and tails. */
    eventLog,
    /** Signals this process's appends to its firehose (docs/decisions/0029). */
    appended,
    /** Uploads, downloads and the lazy sweep of the blobs' bytes (docs/decisions/0043). */
    blobs,
    passkeys,
    /** Codes emailed for a person to type (docs/decisions/0030). */
    typedCodes,
    /** Invite codes (docs/decisions/0052). */
    invites,
    /** Creating accounts: the screens and createAccount (docs/decisions/0052). */
    signUp,
    /** Confirming the account's email address with a mailed code (docs/decisions/0052). */
    emailConfirmation,
    signIn: new SignIn(accounts, passkeys, new SignInThrottle(new SqlAttemptStore(db), config.signInThrottle, now), metrics, appPasswords, async (did) => (await accountStatus.stateOf(did)) === "takendown"),
    appPasswords,
    /** com.atproto.server.createSession and the calls made with its tokens (docs/decisions/0047). */
    passwordSessions,
    /** The emailed code that password sessions on the account's own password may need (docs/decisions/0047). */
    emailAuthFactor: new EmailAuthFactor(accounts, typedCodes, mailer, new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "sign-in-code"), {
      serviceName: config.brand.serviceName,
      email: signInCodeEmail,
    }),
    recovery: new PasswordRecovery(accounts, new SqlRecoveryStore(db), new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "recovery"), mailer, {
      issuer: config.issuer,
      serviceName: config.brand.serviceName,
      lifetimeMs: config.lifetimes.recoveryCode,
      email: recoveryEmail,
      onSendError: (error) => reportError("Sending a password-recovery email failed", error),
      now,
    }, typedCodes),
    connectedApps,
    /** Deleting an account by emailed code and password (docs/decisions/0030). */
    accountDeletion: new AccountDeletion(accounts, typedCodes, new SqlAccountDeletionStore(db, config.firehose.backfillMs), identity, mailer, new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "deletion"), {
      serviceName: config.brand.serviceName,
      email: deletionEmail,
      onDeleted: () => appended.notify(),
      sweepBlobs: () => blobs.sweepAll(),
      now,
    }),
    /** The person's own operations on their DID, by emailed code (docs/decisions/0050). */
    plcOperations: new PlcOperations(identity, accounts, typedCodes, mailer, new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "plc-operation"), {
      serviceName: config.brand.serviceName,
      pdsEndpoint: config.issuer,
      email: plcOperationEmail,
      onIdentityChanged: announceIdentity,
    }),
    /** "Keep a key of your own": the person's did:key above this server's in the DID's rotation keys (docs/decisions/0050). */
    ownKeys: new OwnKeys(identity, mailer, {
      serviceName: config.brand.serviceName,
      addedEmail: keyAddedEmail,
      onIdentityChanged: announceIdentity,
      onSendError: (error) => reportError("Sending the notice of an added rotation key failed", error),
    }),
    /** Changing the account's email with a code sent to the new address (docs/decisions/0030). */
    emailUpdate: new EmailUpdate(accounts, new SqlEmailUpdateStore(db), typedCodes, mailer, new SignInThrottle(new SqlAttemptStore(db), RECOVERY_THROTTLE, now, "email-change"), {
      serviceName: config.brand.serviceName,
      emails: emailChangeEmails,
      onSendError: (error) => reportError("Sending the email-change notice failed", error),
    }),
    /** At shutdown: writes the request counts still in memory, then closes the database. */
    async close() {
      // Their snapshots go back before the database closes.
      exportWatch.close();
      try {
        await limiter.close();
      } catch (error) {
        reportError("Writing the request counts at shutdown failed", error);
      }
      mailer?.close();
      await db.close();
    },
  };
}
