/**
 * The words of the consent screen and of an app's identity (also shown on the connected apps page), in one place
 * so that a translation catalogue can take them over as they are: whole sentences with named placeholders.
 */

import type { ClaimWarningReason } from "../../.server/screens/client-identity";
import type { ConsentStep } from "../../.server/screens/consent/consent-view";

/** Who is asking, and the cautions about it (consent screen and connected apps). */
export const identityText = {
  /** A loopback app, in a sentence ("Give {who} access…"). */
  thisDevice: "an app on this device",
  /** The same as a heading of its own (connected apps). */
  thisDeviceTitle: "An app on this device",
  /** The app's own name, labelled as its claim. */
  callsItself: "It calls itself “{name}”.",
  claimNote: "The name and logo come from the app; {service} checked only its address.",
  claimNoteNameOnly: "The name comes from the app; {service} checked only its address.",
  noName: "It gives no name.",
  webVerified: "Its details are published at {host}.",
  unicodeHost: "The address reads as “{unicode}” in other letters.",
  loopback: "A program on this computer, not a website.",
  loopbackReturnsTo: "It receives the answer at {uri}.",
  loopbackReturnsToAny: "It receives the answer at one of: {uris}.",
  caution: {
    title: "Caution: this app may not be what it claims",
    advice: "Allow it only if you opened this app yourself and you trust {who}.",
    reasons: {
      "service-name": {
        name: "Its name looks like the name of this server, {service}, but the app is not part of it.",
        address: "Its address looks like this server's, {service}, but it is a different site.",
      },
      official: {
        name: "Its name suggests Bluesky or an official app, but nothing confirms that: it comes from {who}.",
        address: "Its address contains “Bluesky” or “official”, but it is not one of Bluesky's own addresses.",
      },
      lookalike: {
        name: "Its name uses letters that imitate others (for example a Cyrillic “а” for a Latin “a”), a common way to pass for a known name.",
        address: "Its address uses letters that imitate others (for example a Cyrillic “а” for a Latin “a”), a common way to pass for a known site.",
      },
      "hidden-characters": {
        name: "Its name contained invisible characters that can change how text reads. They were removed.",
        address: "Its address contained invisible characters.",
      },
    } satisfies Record<ClaimWarningReason, { name: string; address: string }>,
  },
  links: { label: "About the app (links it provides)", homepage: "Homepage", terms: "Terms of service", privacy: "Privacy policy", newTab: "(opens in a new tab)" },
};

export const consentText = {
  /** Tab titles, by step. */
  pageTitle: { choose: "Choose an account", "sign-in": "Sign in", "sign-in-again": "Sign in again", allow: "Allow access", continue: "Continue" } satisfies Record<ConsentStep, string>,
  /** The heading names what was verified ({who}: the app's host, or "an app on this device"), for each step. */
  heading: {
    choose: "Choose an account to give {who} access",
    "sign-in": "Sign in to give {who} access to your account",
    "sign-in-again": "Sign in again to give {who} access to your account",
    allow: "Give {who} access to your account?",
    continue: "Continue to {who}?",
  } satisfies Record<ConsentStep, string>,
  returnsTo: "Afterwards you go back to {uri}.",
  remembered: "You have already allowed {who} this access. Press Allow to continue.",
  reviewPermissions: "Review what it can do",
  permissionsHeading: "What it will be able to do",
  permissionsHeadingRemembered: "What it can do",
  caution: "Caution:",
  whatThisIncludes: "What this includes",
  technicalDetails: "Technical details",
  scope: "Scope",
  clientId: "Client ID",
  redirectUri: "Redirect URI",
  signIn: "Sign in",
  identifier: "Handle or email",
  password: "Password",
  hintLocked: "The app asked for this account.",
  freshSignIn: "The app asked you to sign in again, even though this browser is signed in. Enter your password to confirm it's you.",
  freshSignInSignedOut: "The app asked for a fresh sign-in.",
  signedInAs: "Signed in as {handle}",
  notYou: "Not you? Use another account",
  /** The account chooser and several accounts in one browser (docs/decisions/0020). */
  chooserLegend: "Accounts signed in on this device",
  continueAs: "Continue as {handle}",
  useAnotherAccount: "Use another account",
  chooseAnother: "Choose another account",
  addingAccount: "Sign in to another account. The accounts already signed in on this device stay signed in.",
  backToAccounts: "Use an account that is signed in already.",
  chooseAllowOrDeny: "Choose Allow or Deny.",
  signInToAllow: "Sign in with your password to allow access.",
  forgotPassword: "Forgot password?",
  opensInNewTab: "(opens in a new tab)",
  allow: "Allow",
  deny: "Deny",
  actions: "Your answer",
  takeBack: "You can take access back at any time under {link}.",
  connectedApps: "Connected apps",
};

/** The words of a scope's families (consent screen and connected apps). */
export const permissionText = {
  caution: "Caution:",
  whatThisIncludes: "What this includes",
  records: "Records in your repository",
  recordsCaption: "Which kinds of records the app may create, change or delete",
  kindOfRecord: "Kind of record",
  create: "Create",
  change: "Change",
  delete: "Delete",
  yes: "Yes",
  yesCaution: "Yes (caution: deleting cannot be undone)",
  no: "No",
  anyRecord: "Posts, likes, follows, your profile and everything else",
  anyRecordLower: "records of any kind",
  canDelete: "it can delete your {kinds}. Deleting cannot be undone.",
  uploads: "Upload files",
  calls: "Use other services as you",
  anythingOn: "Anything on {service}",
  oneMethodOn: "One thing on {service}:",
  methodsOn: "{count} things on {service}:",
  account: "Your account",
  identity: "Your identity",
  other: "Other",
};
