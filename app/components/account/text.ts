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
};
