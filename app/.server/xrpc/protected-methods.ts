/**
 * Account management that must be done at this server directly: service proxying never forwards a call for one of
 * these methods, and com.atproto.server.getServiceAuth never mints a token for one. One list, checked before anything
 * is signed on both paths (docs/decisions/0048), so that no app can have another service act on the account with a
 * token of the account's own key.
 *
 * The reference PDS's list (its pipethrough.ts, PROTECTED_METHODS: "These endpoints are related to account
 * management and must be used directly, not proxied or service-authed"), and three of Atrium's own: the last step of
 * a PLC operation (its signature is what matters, and signPlcOperation is on the list, but a token for submitting
 * one is no better), account deletion (refused to OAuth apps here: xrpc/handlers/server.ts), and getServiceAuth
 * itself. Compared without regard to case, as the reference's LxmSet does: the router and getServiceAuth lower-case an
 * NSID's authority (repo/identifiers.ts) but not its name, and `com.atproto.admin.SENDEMAIL` must not get through
 * where a service routes names without regard to case.
 *
 * com.atproto.server.createAccount is not on it: a token for it at a new PDS is how an account moves (the reference's
 * getServiceAuth mints it too; xrpc/handlers/server.ts).
 */
const PROTECTED_METHODS: readonly string[] = [
  // The reference's.
  "com.atproto.admin.sendEmail",
  "com.atproto.identity.requestPlcOperationSignature",
  "com.atproto.identity.signPlcOperation",
  "com.atproto.identity.updateHandle",
  "com.atproto.server.activateAccount",
  "com.atproto.server.confirmEmail",
  "com.atproto.server.createAppPassword",
  "com.atproto.server.deactivateAccount",
  "com.atproto.server.getAccountInviteCodes",
  "com.atproto.server.getSession",
  "com.atproto.server.listAppPasswords",
  "com.atproto.server.requestAccountDelete",
  "com.atproto.server.requestEmailConfirmation",
  "com.atproto.server.requestEmailUpdate",
  "com.atproto.server.revokeAppPassword",
  "com.atproto.server.updateEmail",
  // Atrium's.
  "com.atproto.identity.submitPlcOperation",
  "com.atproto.server.deleteAccount",
  "com.atproto.server.getServiceAuth",
];

const PROTECTED_LOWER_CASE = new Set(PROTECTED_METHODS.map((nsid) => nsid.toLowerCase()));

/** Whether `nsid`, in any case, is one of the protected methods. */
export function isProtectedMethod(nsid: string): boolean {
  return PROTECTED_LOWER_CASE.has(nsid.toLowerCase());
}
