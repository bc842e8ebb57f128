/**
 * The account pages' words that the brand and the connected apps changed, in one place for a later translation
 * catalogue (whole sentences, named placeholders). The rest of the account pages' words are still in their
 * components.
 */
export const accountText = {
  skip: "Skip to content",
  account: "account",
  signedInAs: "Signed in as",
  signOut: "Sign out",
  nav: { overview: "Overview", apps: "Connected apps", sessions: "Signed-in browsers", passkeys: "Passkeys", password: "Password" },
  titles: { overview: "Your account", apps: "Connected apps", sessions: "Signed-in browsers", passkeys: "Passkeys", password: "Change your password", signIn: "Sign in to your account" },
  signInIntro: "See the apps you have allowed, your signed-in browsers and passkeys, and change your password.",
  newHere: "New here? Accounts are created by the server's operator.",
  aboutServer: "About this server",
  signIn: {
    identifier: "Handle or email",
    password: "Password",
    submit: "Sign in",
    enterIdentifier: "Enter your handle or email.",
    enterPassword: "Enter your password.",
    forgotPassword: "Forgot password?",
    addTitle: "Add another account",
    addIntro: "Sign in to another account. The accounts already signed in on this device stay signed in.",
    backToAccounts: "Back to your accounts",
  },
  /** "Stay signed in on this device" (docs/decisions/0020), on every sign-in form. */
  staySignedIn: {
    label: "Stay signed in on this device",
    hint: "Leave this off on a shared or public computer: you are then signed out when the browser closes, and after 12 hours at most.",
  },
  /** The account chooser (docs/decisions/0020). */
  chooser: {
    title: "Choose an account",
    intro: "These accounts are signed in on this device. Choose the one to manage.",
    continueAs: "Continue as {handle}",
    staysSignedIn: "Stays signed in on this device.",
    endsWithBrowser: "Signed in until the browser closes.",
    useAnother: "Use another account",
    signOutAll: "Sign out of all accounts",
  },
  /** The header's account menu: which account the pages act on, and the others signed in here. */
  switcher: {
    managing: "Managing {handle}",
    menu: "Accounts on this device",
    switchTo: "Switch to {handle}",
    addAccount: "Add another account",
    signOutOf: "Sign out of {handle}",
    signOutAll: "Sign out of all accounts",
  },
  apps: {
    intro: "These apps can act on your account within what you allowed. Revoking ends all of an app's access at once; it has to ask you again.",
    none: "No app has access to your account.",
    firstAllowed: "First allowed",
    lastUsed: "Last used",
    notYet: "Not yet",
    activeSignIns: "Active sign-ins",
    whatItCanDo: "What it can do",
    revoke: "Revoke",
    homepage: "Homepage",
    homepageOf: "of {name} (opens in a new tab)",
  },
  /** One-line confirmations after a form post (the address names one by key: nothing typed is echoed). */
  notices: {
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "signed-out-all": "Every account is signed out of this browser.",
    "account-switched": "Switched account.",
    revoked: "Access revoked. The app's tokens no longer work; it has to ask you again.",
    "session-ended": "That browser is signed out.",
    "others-ended": "Every other browser is signed out.",
    "passkey-added": "Passkey added. You can now sign in with it.",
    "passkey-renamed": "Passkey renamed.",
    "passkey-deleted": "Passkey deleted.",
    "password-changed": "Password changed. Every other browser was signed out.",
    "identity-confirmed": "Thanks, that's you. You can add a passkey now.",
    "secure-confirmed": "Thanks, that's you. You can secure your account now.",
    "account-secured": "Done: your passkeys are removed and every other browser is signed out. Connected apps keep their access.",
    "account-secured-apps": "Done: your passkeys are removed, every other browser is signed out and every app is disconnected.",
  },
};
