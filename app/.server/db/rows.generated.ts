// GENERATED FILE: do not edit. Written from prisma/schema.prisma by scripts/generate-row-types.ts
// (`npm run db:types`, which `npm run migration:new` runs too; a test fails when it is stale). One row type per
// model, each column as both engines deliver it (times: epoch milliseconds; bytes: a plain Uint8Array), and the
// table's row shape, which the driver checks statements against (docs/decisions/0034).
import { table } from "./row-shape.ts";

/** A row of "Account". */
export type AccountRow = {
  did: string;
  handle: string;
  email: string;
  passwordHash: string;
  emailConfirmedAt: number | null;
  signingKey: string;
  signingKeyEncryptedWith: string | null;
  deactivatedAt: number | null;
  takendownAt: number | null;
  takedownRef: string | null;
  lastSignInAt: number | null;
  emailAuthFactor: boolean;
  invitesDisabled: boolean;
  signInNotices: boolean;
  firstBrowserAt: number | null;
  createdAt: number;
  updatedAt: number;
};

/** A row of "BrowserSession". */
export type BrowserSessionRow = {
  idHash: string;
  accountDid: string;
  userAgent: string | null;
  ipAddress: string | null;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  authenticatedAt: number | null;
  staySignedIn: boolean;
  deviceHash: string | null;
};

/** A row of "Client". */
export type ClientRow = {
  clientId: string;
  metadata: string;
  size: number;
  fetchedAt: number;
  expiresAt: number;
};

/** A row of "AuthorizationRequest". */
export type AuthorizationRequestRow = {
  idHash: string;
  clientId: string;
  parameters: string | null;
  wayBack: string | null;
  shownTo: string | null;
  pushedFrom: string | null;
  dpopJkt: string;
  clientKeyId: string | null;
  clientKeyAlg: string | null;
  clientKeyJkt: string | null;
  createdAt: number;
  expiresAt: number;
  purgeAt: number;
  consumedAt: number | null;
};

/** A row of "AuthorizationCode". */
export type AuthorizationCodeRow = {
  codeHash: string;
  clientId: string;
  accountDid: string;
  redirectUri: string;
  scope: string;
  codeChallenge: string;
  dpopJkt: string;
  clientKeyId: string | null;
  clientKeyAlg: string | null;
  clientKeyJkt: string | null;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
  grantId: string | null;
};

/** A row of "Grant". */
export type GrantRow = {
  id: string;
  clientId: string;
  accountDid: string;
  scope: string;
  dpopJkt: string;
  clientKeyId: string | null;
  clientKeyAlg: string | null;
  clientKeyJkt: string | null;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number;
  endsAt: number;
  withdrawn: string;
};

/** A row of "AccessToken". */
export type AccessTokenRow = {
  tokenHash: string;
  grantId: string;
  scope: string | null;
  createdAt: number;
  expiresAt: number;
};

/** A row of "RefreshToken". */
export type RefreshTokenRow = {
  tokenHash: string;
  grantId: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
};

/** A row of "ReplayRecord". */
export type ReplayRecordRow = {
  key: string;
  expiresAt: number;
};

/** A row of "ServerSecret". */
export type ServerSecretRow = {
  name: string;
  value: string;
  createdAt: number;
};

/** A row of "Record". */
export type RecordRow = {
  did: string;
  collection: string;
  rkey: string;
  cid: string;
  value: string;
  repoRev: string | null;
  takedownRef: string | null;
  createdAt: number;
  updatedAt: number;
};

/** A row of "RepoRoot". */
export type RepoRootRow = {
  did: string;
  cid: string;
  rev: string;
  updatedAt: number;
};

/** A row of "RepoBlock". */
export type RepoBlockRow = {
  did: string;
  cid: string;
  repoRev: string;
  content: Uint8Array;
};

/** A row of "RepoImport". */
export type RepoImportRow = {
  id: string;
  did: string;
  expiresAt: number;
};

/** A row of "RepoImportBlock". */
export type RepoImportBlockRow = {
  importId: string;
  cid: string;
  content: Uint8Array;
};

/** A row of "RepoImportNode". */
export type RepoImportNodeRow = {
  importId: string;
  cid: string;
};

/** A row of "RepoImportRecord". */
export type RepoImportRecordRow = {
  importId: string;
  collection: string;
  rkey: string;
  cid: string;
  value: string;
};

/** A row of "RepoImportBlobRef". */
export type RepoImportBlobRefRow = {
  importId: string;
  collection: string;
  rkey: string;
  blobCid: string;
};

/** A row of "RepoEvent". */
export type RepoEventRow = {
  seq: number;
  did: string;
  type: string;
  body: Uint8Array;
  time: number;
};

/** A row of "Blob". */
export type BlobRow = {
  did: string;
  cid: string;
  declaredType: string;
  detectedType: string | null;
  mimeType: string;
  size: number;
  bytes: Uint8Array;
  createdAt: number;
  unreferencedSince: number | null;
  takedownRef: string | null;
};

/** A row of "BlobContent". */
export type BlobContentRow = {
  key: string;
  cid: string | null;
  state: string;
  dueAt: number | null;
};

/** A row of "BlobChunk". */
export type BlobChunkRow = {
  key: string;
  index: number;
  bytes: Uint8Array;
};

/** A row of "BlobRelease". */
export type BlobReleaseRow = {
  releasedAt: number;
  did: string;
  cid: string;
};

/** A row of "RecordBlob". */
export type RecordBlobRow = {
  did: string;
  collection: string;
  rkey: string;
  blobCid: string;
};

/** A row of "Preferences". */
export type PreferencesRow = {
  did: string;
  value: string;
  updatedAt: number;
};

/** A row of "PermissionSetCache". */
export type PermissionSetCacheRow = {
  nsid: string;
  document: string;
  fetchedAt: number;
  expiresAt: number;
};

/** A row of "Passkey". */
export type PasskeyRow = {
  credentialId: string;
  accountDid: string;
  name: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string | null;
  deviceType: string;
  backedUp: boolean;
  createdAt: number;
  lastUsedAt: number | null;
};

/** A row of "AuthorizedClient". */
export type AuthorizedClientRow = {
  accountDid: string;
  clientId: string;
  scope: string;
  declined: string;
  withdrawn: string;
  createdAt: number;
  updatedAt: number;
};

/** A row of "AppActivity". */
export type AppActivityRow = {
  accountDid: string;
  app: string;
  dayStart: number;
  kind: string;
  target: string;
  count: number;
  lastAt: number;
};

/** A row of "RateLimit". */
export type RateLimitRow = {
  key: string;
  count: number;
  windowEndsAt: number;
  lastAttemptAt: number | null;
};

/** A row of "TypedCode". */
export type TypedCodeRow = {
  accountDid: string;
  purpose: string;
  codeHash: string;
  detail: string | null;
  guesses: number;
  createdAt: number;
  expiresAt: number;
};

/** A row of "EndLink". */
export type EndLinkRow = {
  tokenHash: string;
  accountDid: string;
  kind: string;
  target: string;
  label: string;
  since: number | null;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
};

/** A row of "RecoveryCode". */
export type RecoveryCodeRow = {
  codeHash: string;
  accountDid: string;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
};

/** A row of "AdminSession". */
export type AdminSessionRow = {
  idHash: string;
  passwordTag: string;
  createdAt: number;
  expiresAt: number;
};

/** A row of "AppPassword". */
export type AppPasswordRow = {
  id: string;
  accountDid: string;
  name: string;
  passwordHash: string;
  privileged: boolean;
  createdAt: number;
  lastUsedAt: number | null;
};

/** A row of "PasswordSession". */
export type PasswordSessionRow = {
  id: string;
  accountDid: string;
  appPasswordId: string | null;
  scope: string;
  userAgent: string | null;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number;
};

/** A row of "PasswordAccessToken". */
export type PasswordAccessTokenRow = {
  tokenHash: string;
  sessionId: string;
  expiresAt: number;
};

/** A row of "PasswordRefreshToken". */
export type PasswordRefreshTokenRow = {
  tokenHash: string;
  sessionId: string;
  expiresAt: number;
  usedAt: number | null;
};

/** A row of "InviteCode". */
export type InviteCodeRow = {
  code: string;
  availableUses: number;
  usedCount: number;
  disabled: boolean;
  forAccount: string;
  createdBy: string;
  createdAt: number;
};

/** A row of "InviteCodeUse". */
export type InviteCodeUseRow = {
  code: string;
  usedBy: string;
  usedAt: number;
};

/** Every table's row shape: `get(tables.Account, …)`, `get(tables.Account.pick("did", "handle"), …)`. */
export const tables = {
  Account: table<AccountRow>("Account", {
    did: "string",
    handle: "string",
    email: "string",
    passwordHash: "string",
    emailConfirmedAt: "time?",
    signingKey: "string",
    signingKeyEncryptedWith: "string?",
    deactivatedAt: "time?",
    takendownAt: "time?",
    takedownRef: "string?",
    lastSignInAt: "time?",
    emailAuthFactor: "boolean",
    invitesDisabled: "boolean",
    signInNotices: "boolean",
    firstBrowserAt: "time?",
    createdAt: "time",
    updatedAt: "time",
  }),
  BrowserSession: table<BrowserSessionRow>("BrowserSession", {
    idHash: "string",
    accountDid: "string",
    userAgent: "string?",
    ipAddress: "string?",
    createdAt: "time",
    lastSeenAt: "time",
    expiresAt: "time",
    authenticatedAt: "time?",
    staySignedIn: "boolean",
    deviceHash: "string?",
  }),
  Client: table<ClientRow>("Client", {
    clientId: "string",
    metadata: "string",
    size: "integer",
    fetchedAt: "time",
    expiresAt: "time",
  }),
  AuthorizationRequest: table<AuthorizationRequestRow>("AuthorizationRequest", {
    idHash: "string",
    clientId: "string",
    parameters: "string?",
    wayBack: "string?",
    shownTo: "string?",
    pushedFrom: "string?",
    dpopJkt: "string",
    clientKeyId: "string?",
    clientKeyAlg: "string?",
    clientKeyJkt: "string?",
    createdAt: "time",
    expiresAt: "time",
    purgeAt: "time",
    consumedAt: "time?",
  }),
  AuthorizationCode: table<AuthorizationCodeRow>("AuthorizationCode", {
    codeHash: "string",
    clientId: "string",
    accountDid: "string",
    redirectUri: "string",
    scope: "string",
    codeChallenge: "string",
    dpopJkt: "string",
    clientKeyId: "string?",
    clientKeyAlg: "string?",
    clientKeyJkt: "string?",
    createdAt: "time",
    expiresAt: "time",
    usedAt: "time?",
    grantId: "string?",
  }),
  Grant: table<GrantRow>("Grant", {
    id: "string",
    clientId: "string",
    accountDid: "string",
    scope: "string",
    dpopJkt: "string",
    clientKeyId: "string?",
    clientKeyAlg: "string?",
    clientKeyJkt: "string?",
    createdAt: "time",
    lastUsedAt: "time",
    expiresAt: "time",
    endsAt: "time",
    withdrawn: "string",
  }),
  AccessToken: table<AccessTokenRow>("AccessToken", {
    tokenHash: "string",
    grantId: "string",
    scope: "string?",
    createdAt: "time",
    expiresAt: "time",
  }),
  RefreshToken: table<RefreshTokenRow>("RefreshToken", {
    tokenHash: "string",
    grantId: "string",
    createdAt: "time",
    expiresAt: "time",
    usedAt: "time?",
  }),
  ReplayRecord: table<ReplayRecordRow>("ReplayRecord", {
    key: "string",
    expiresAt: "time",
  }),
  ServerSecret: table<ServerSecretRow>("ServerSecret", {
    name: "string",
    value: "string",
    createdAt: "time",
  }),
  Record: table<RecordRow>("Record", {
    did: "string",
    collection: "string",
    rkey: "string",
    cid: "string",
    value: "string",
    repoRev: "string?",
    takedownRef: "string?",
    createdAt: "time",
    updatedAt: "time",
  }),
  RepoRoot: table<RepoRootRow>("RepoRoot", {
    did: "string",
    cid: "string",
    rev: "string",
    updatedAt: "time",
  }),
  RepoBlock: table<RepoBlockRow>("RepoBlock", {
    did: "string",
    cid: "string",
    repoRev: "string",
    content: "bytes",
  }),
  RepoImport: table<RepoImportRow>("RepoImport", {
    id: "string",
    did: "string",
    expiresAt: "time",
  }),
  RepoImportBlock: table<RepoImportBlockRow>("RepoImportBlock", {
    importId: "string",
    cid: "string",
    content: "bytes",
  }),
  RepoImportNode: table<RepoImportNodeRow>("RepoImportNode", {
    importId: "string",
    cid: "string",
  }),
  RepoImportRecord: table<RepoImportRecordRow>("RepoImportRecord", {
    importId: "string",
    collection: "string",
    rkey: "string",
    cid: "string",
    value: "string",
  }),
  RepoImportBlobRef: table<RepoImportBlobRefRow>("RepoImportBlobRef", {
    importId: "string",
    collection: "string",
    rkey: "string",
    blobCid: "string",
  }),
  RepoEvent: table<RepoEventRow>("RepoEvent", {
    seq: "integer",
    did: "string",
    type: "string",
    body: "bytes",
    time: "time",
  }),
  Blob: table<BlobRow>("Blob", {
    did: "string",
    cid: "string",
    declaredType: "string",
    detectedType: "string?",
    mimeType: "string",
    size: "integer",
    bytes: "bytes",
    createdAt: "time",
    unreferencedSince: "time?",
    takedownRef: "string?",
  }),
  BlobContent: table<BlobContentRow>("BlobContent", {
    key: "string",
    cid: "string?",
    state: "string",
    dueAt: "time?",
  }),
  BlobChunk: table<BlobChunkRow>("BlobChunk", {
    key: "string",
    index: "integer",
    bytes: "bytes",
  }),
  BlobRelease: table<BlobReleaseRow>("BlobRelease", {
    releasedAt: "time",
    did: "string",
    cid: "string",
  }),
  RecordBlob: table<RecordBlobRow>("RecordBlob", {
    did: "string",
    collection: "string",
    rkey: "string",
    blobCid: "string",
  }),
  Preferences: table<PreferencesRow>("Preferences", {
    did: "string",
    value: "string",
    updatedAt: "time",
  }),
  PermissionSetCache: table<PermissionSetCacheRow>("PermissionSetCache", {
    nsid: "string",
    document: "string",
    fetchedAt: "time",
    expiresAt: "time",
  }),
  Passkey: table<PasskeyRow>("Passkey", {
    credentialId: "string",
    accountDid: "string",
    name: "string",
    publicKey: "bytes",
    counter: "integer",
    transports: "string?",
    deviceType: "string",
    backedUp: "boolean",
    createdAt: "time",
    lastUsedAt: "time?",
  }),
  AuthorizedClient: table<AuthorizedClientRow>("AuthorizedClient", {
    accountDid: "string",
    clientId: "string",
    scope: "string",
    declined: "string",
    withdrawn: "string",
    createdAt: "time",
    updatedAt: "time",
  }),
  AppActivity: table<AppActivityRow>("AppActivity", {
    accountDid: "string",
    app: "string",
    dayStart: "time",
    kind: "string",
    target: "string",
    count: "integer",
    lastAt: "time",
  }),
  RateLimit: table<RateLimitRow>("RateLimit", {
    key: "string",
    count: "integer",
    windowEndsAt: "time",
    lastAttemptAt: "time?",
  }),
  TypedCode: table<TypedCodeRow>("TypedCode", {
    accountDid: "string",
    purpose: "string",
    codeHash: "string",
    detail: "string?",
    guesses: "integer",
    createdAt: "time",
    expiresAt: "time",
  }),
  EndLink: table<EndLinkRow>("EndLink", {
    tokenHash: "string",
    accountDid: "string",
    kind: "string",
    target: "string",
    label: "string",
    since: "time?",
    createdAt: "time",
    expiresAt: "time",
    usedAt: "time?",
  }),
  RecoveryCode: table<RecoveryCodeRow>("RecoveryCode", {
    codeHash: "string",
    accountDid: "string",
    createdAt: "time",
    expiresAt: "time",
    usedAt: "time?",
  }),
  AdminSession: table<AdminSessionRow>("AdminSession", {
    idHash: "string",
    passwordTag: "string",
    createdAt: "time",
    expiresAt: "time",
  }),
  AppPassword: table<AppPasswordRow>("AppPassword", {
    id: "string",
    accountDid: "string",
    name: "string",
    passwordHash: "string",
    privileged: "boolean",
    createdAt: "time",
    lastUsedAt: "time?",
  }),
  PasswordSession: table<PasswordSessionRow>("PasswordSession", {
    id: "string",
    accountDid: "string",
    appPasswordId: "string?",
    scope: "string",
    userAgent: "string?",
    createdAt: "time",
    lastUsedAt: "time",
    expiresAt: "time",
  }),
  PasswordAccessToken: table<PasswordAccessTokenRow>("PasswordAccessToken", {
    tokenHash: "string",
    sessionId: "string",
    expiresAt: "time",
  }),
  PasswordRefreshToken: table<PasswordRefreshTokenRow>("PasswordRefreshToken", {
    tokenHash: "string",
    sessionId: "string",
    expiresAt: "time",
    usedAt: "time?",
  }),
  InviteCode: table<InviteCodeRow>("InviteCode", {
    code: "string",
    availableUses: "integer",
    usedCount: "integer",
    disabled: "boolean",
    forAccount: "string",
    createdBy: "string",
    createdAt: "time",
  }),
  InviteCodeUse: table<InviteCodeUseRow>("InviteCodeUse", {
    code: "string",
    usedBy: "string",
    usedAt: "time",
  }),
};
