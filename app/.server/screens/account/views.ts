/**
 * View models of the account pages: plain data, safe to send to the
 * browser. Dates are ISO strings (the page formats them).
 */
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import type { PermissionGroups } from "../../oauth/scopes/scope-description.ts";
import type { ClientIdentityView } from "../client-identity.ts";

/** An account signed in in this browser (docs/decisions/0020). */
export type BrowserAccount = { handle: string; did: string; staySignedIn: boolean };

/**
 * What every signed-in page shows in its header: the account the page acts on (its forms name it in a hidden
 * field, so a form shown for one account never acts on another), and every account signed in here, to switch.
 */
export type SignedInBase = { account: { handle: string; did: string }; accounts: BrowserAccount[]; csrfToken: string; notice?: string };

export type SignInView = {
  kind: "sign-in";
  csrfToken: string;
  /** Where to go after signing in (a path of the account area). */
  next: string;
  /** Passkey sign-in, offered when any passkey is registered on this server. */
  passkey?: { options: PublicKeyCredentialRequestOptionsJSON };
  notice?: string;
  /** Accounts already signed in here: the form adds one ("Use another account"). */
  accounts: BrowserAccount[];
  /** People may create accounts here: the page links to the sign-up form (docs/decisions/0052). */
  signUpOpen: boolean;
};

/** "Choose an account": the accounts signed in in this browser, and "Use another account". */
export type ChooserView = { kind: "chooser"; csrfToken: string; next: string; accounts: BrowserAccount[]; notice?: string };

export type OverviewView = SignedInBase & {
  kind: "overview";
  email: string;
  /** The address is not confirmed yet: the overview offers to (docs/decisions/0052). */
  emailConfirmed: boolean;
  /** The account is deactivated: the overview says so first and offers reactivation (docs/decisions/0031). */
  deactivated: boolean;
  counts: { apps: number; sessions: number; passkeys: number };
};

/** An app with access: who it is (verified first, then its claims: screens/client-identity.ts), what it may do. */
export type ConnectedAppView = ClientIdentityView & {
  clientId: string;
  /** The app's own page (docs/decisions/0053): what it did, and its permissions one by one. */
  pagePath: string;
  clientUri?: string;
  scope: string;
  groups: PermissionGroups;
  /** The person unticked "Share your email address" for this app (docs/decisions/0032): the page says it was not given. */
  emailDeclined: boolean;
  firstAuthorizedAt: string;
  lastUsedAt?: string;
  activeGrants: number;
};

/**
 * `revoking`: the app whose Revoke was pressed (`?revoke=<client_id>`): the page asks to confirm first, naming the
 * app and what it loses, a second step that needs no JavaScript; Cancel is a link back to the list.
 */
export type AppsView = SignedInBase & {
  kind: "apps";
  apps: ConnectedAppView[];
  revoking?: ConnectedAppView;
  /** Apps signed in with the account's password or an app password (docs/decisions/0047). */
  passwordSessions: PasswordSessionView[];
  /** The one whose Sign out was pressed (`?sign-out=<id>`): the page asks to confirm first. */
  signingOut?: PasswordSessionView;
};

/** One permission an app holds (docs/decisions/0053): its text as the take-back form sends it, in plain words. */
export type PermissionItemView = {
  item: string;
  title: string;
  /** Taking it back cuts a wide reach: its button asks to confirm first. */
  broad: boolean;
  takenBack: boolean;
};

/** One line of what an app did (docs/decisions/0053): a kind of act on one target, how often and when last. */
export type ActivityLineView = {
  kind: "create" | "update" | "delete" | "blob" | "call";
  /** A collection, a media type or a method; "" for the acts past the day's cap of targets. */
  target: string;
  /** A call's service (`did#service`). */
  service?: string;
  count: number;
  lastAt: string;
  /** The permission it used, in plain words. */
  permission?: string;
  /** What taking this line's act back sends (permission-items.ts); undefined for the overflow line. */
  item?: string;
  takenBack: boolean;
};

/**
 * What an app's page shows of its history (docs/decisions/0053): the lines over the kept days, and the same day by day.
 * ATRIUM_APP_ACTIVITY off: `activityEnabled` false, nothing counted, and the page says so.
 */
export type HistoryViews = { activityEnabled: boolean; activity: ActivityLineView[]; days: Array<{ day: string; lines: ActivityLineView[] }> };

/**
 * /account/apps/<client_id> (docs/decisions/0053): one app, what it did in the kept days with the permission each
 * line used, and every permission it holds, each with a control to take it back. `takingBack`: the broad permission
 * whose button was pressed (`?take-back=`), confirmed first.
 */
export type AppPageView = SignedInBase &
  HistoryViews & {
  kind: "app";
  app: ConnectedAppView;
  /** This page's stable address, which apps may link to. */
  address: string;
  permissions: PermissionItemView[];
  takingBack?: PermissionItemView;
};

/** An app signed in with a password (com.atproto.server.createSession, docs/decisions/0047). */
export type PasswordSessionView = {
  id: string;
  /** The app password it signed in with (its name, and its page's path); undefined: the account's own password. */
  appPasswordName?: string;
  appPasswordPagePath?: string;
  /** What the app said it was (its User-Agent), when it said. */
  userAgent?: string;
  createdAt: string;
  lastUsedAt: string;
};

/** An app password, and its page's path (/account/app-passwords/<id>). */
export type AppPasswordView = { id: string; pagePath: string; name: string; privileged: boolean; createdAt: string; lastUsedAt?: string };

/**
 * /account/app-passwords/<id> (docs/decisions/0053): one app password, what the apps signed in with it did in the kept
 * days, and Take back chat access when it is privileged.
 */
export type AppPasswordPageView = SignedInBase &
  HistoryViews & {
  kind: "app-password";
  appPassword: AppPasswordView;
  /** This page's stable address. */
  address: string;
};

/**
 * /account/app-passwords (docs/decisions/0047): the account's app passwords, the form that creates one (or "Confirm
 * it's you" first), and the emailed sign-in code of password sessions.
 */
export type AppPasswordsView = SignedInBase & {
  kind: "app-passwords";
  /** ATRIUM_PASSWORD_SESSIONS: off, nothing new is created; the list stays, to revoke. */
  enabled: boolean;
  appPasswords: AppPasswordView[];
  /** The one whose Revoke was pressed (`?revoke=<name>`): the page asks to confirm first. */
  revoking?: AppPasswordView;
  nameMaxLength: number;
  signInCode: { available: boolean; on: boolean; email: string };
  /** Present when creating one or changing the sign-in code first needs "Confirm it's you". */
  confirm?: ConfirmView;
};

/** An app password just created: shown once, in the answer to the form that created it. */
export type CreatedAppPasswordView = { kind: "app-password-created"; name: string; password: string; handle: string };

export type SessionView = {
  /** The SHA-256 of the session id (what the database stores): names it in forms without revealing it. */
  id: string;
  device: string;
  userAgent?: string;
  ipAddress?: string;
  createdAt: string;
  lastSeenAt: string;
  current: boolean;
};

export type SessionsView = SignedInBase & {
  kind: "sessions";
  sessions: SessionView[];
  /** "Email me when a new browser or app signs in" (docs/decisions/0056); `available`: this server can send email. */
  signInNotices: { available: boolean; on: boolean; email: string };
};

export type PasskeyView = { credentialId: string; name: string; createdAt: string; lastUsedAt?: string; backedUp: boolean };

/** Where "Confirm it's you" returns to (the pages whose actions need a recent authentication). */
export type ConfirmReturnPath =
  | "/account/passkeys"
  | "/account/password"
  | "/account/email"
  | "/account/deactivate"
  | "/account/handle"
  | "/account/app-passwords"
  | "/account/identity";

/**
 * "Confirm it's you" (docs/decisions/0007): shown instead of what needs a
 * recent authentication. The password form works without JavaScript; the
 * passkey, offered when the account has one, is bound to this browser session.
 */
export type ConfirmView = {
  /** Where a passkey's confirmation returns: a ConfirmReturnPath, or the consent screen's address (reactivating in the flow). */
  next: string;
  windowMinutes: number;
  passkeyOptions?: PublicKeyCredentialRequestOptionsJSON;
};

export type PasskeysView = SignedInBase & {
  kind: "passkeys";
  passkeys: PasskeyView[];
  nameMaxLength: number;
  /** Present when adding a passkey first needs "Confirm it's you". */
  confirm?: ConfirmView;
};

/** "Secure your account", offered on the page a password change returns to. */
export type SecureAccountView = {
  /** Shown now: right after a password change (or after confirming it's you for it). */
  offered: boolean;
  passkeys: number;
  apps: number;
  /** Present when the action first needs "Confirm it's you". */
  confirm?: ConfirmView;
};

export type PasswordView = SignedInBase & { kind: "password"; minLength: number; secure: SecureAccountView };

/**
 * Changing the email address (docs/decisions/0030): the current address, "Confirm it's you" when the last proof is
 * older than the window, the new address, and once a code is out, the form that takes it.
 */
export type EmailView = SignedInBase & {
  kind: "email";
  /** This server can send the code. */
  available: boolean;
  email: string;
  /** The new address a code was sent to, while that code may still be typed (the code form names it: issue 28, item 21). */
  pendingEmail?: string;
  minutes: number;
  serviceName: string;
  /** Present when asking for a code first needs "Confirm it's you". */
  confirm?: ConfirmView;
  /** The address is not confirmed yet: "Confirm your email address", and whether a code for it is out (docs/decisions/0052). */
  confirmation?: { codeSent: boolean };
};

/**
 * /account/deactivate (docs/decisions/0031): what deactivating means and its button, or, for a deactivated
 * account, since when and the button that reactivates it. `confirm` stands in for either button until the browser
 * has recently proved the password or a passkey.
 */
export type DeactivateView = SignedInBase & {
  kind: "deactivate";
  /** Deactivated since (ISO 8601), or undefined when the account is active. */
  deactivatedSince?: string;
  confirm?: ConfirmView;
};

/**
 * Deleting the account (docs/decisions/0030): without email here, how to reach the operator; otherwise the button
 * that emails a code and, once one is live, the form that takes it with the password.
 */
export type DeleteAccountView = SignedInBase & {
  kind: "delete";
  available: boolean;
  codeSent: boolean;
  /** This server's key is the DID's only rotation key: the form offers to end the DID too (docs/decisions/0050). */
  canEndIdentity: boolean;
  minutes: number;
  serviceName: string;
  supportUrl?: string;
};

/**
 * /account/handle: a name and one of this server's domains (ATRIUM_USER_DOMAINS, each with its leading dot), or
 * "Confirm it's you" first.
 */
export type HandleView = SignedInBase & { kind: "handle"; domains: string[]; limits: { min: number; max: number }; confirm?: ConfirmView };

export type AccountView = SignInView | ChooserView | OverviewView | AppsView | AppPageView | AppPasswordPageView | SessionsView | PasskeysView | PasswordView | DeactivateView | HandleView | AppPasswordsView;

/** "Forgot password?": ask for a link by email, or (no email here) how to reach the operator (docs/decisions/0020). */
export type RecoverView = {
  kind: "recover";
  csrfToken: string;
  /** This server can send the email. */
  available: boolean;
  /** A request was made: the same words whatever it named. */
  sent: boolean;
  /** Show "Enter the code from the email" (after a request, or asked for with ?code=1: docs/decisions/0030). */
  codeForm: boolean;
  /** What this browser typed when it asked, to fill in the code form ("" when nothing). */
  identifier: string;
  minutes: number;
  supportUrl?: string;
  serviceName: string;
  /** The sign-in request "Forgot password?" was pressed on (its screen's address), to go back to (issue 19). */
  returnTo?: string;
};

/** The link from the email: choose a new password for the account it names, or say the link no longer works. */
export type ResetView = { kind: "reset"; csrfToken: string; code: string; minLength: number; handle: string } | { kind: "reset-invalid" };

/**
 * /account/identity, "Keep a key of your own" (docs/decisions/0050): what the DID document says now, the keys of the
 * person's own in it, and the form that adds one. `state` undefined: the directory did not answer (or never saw the
 * DID). `confirm` stands in for the forms until the browser has recently proved the password or a passkey.
 */
export type IdentityKeysView = SignedInBase & {
  kind: "identity";
  state?: {
    control: "sole" | "shared" | "elsewhere" | "ended" | "unknown";
    handles: string[];
    pdsEndpoint?: string;
    /** The #atproto key is this account's signing key here. */
    signingKeyHere: boolean;
    rotationKeys: Array<{ didKey: string; server: boolean }>;
  };
  /** The PLC directory whose record the page shows. */
  directoryUrl: string;
  maxRotationKeys: number;
  confirm?: ConfirmView;
};
