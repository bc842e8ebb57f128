import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import { DEFAULT_LANGUAGE } from "../../../i18n/languages.ts";
import { fromAcceptLanguage } from "../../i18n/screen-language.ts";
import type { IssuedPasswordSession, SessionCredential } from "../../accounts/password-sessions.ts";
import { bearerJwt } from "../../resource/resource-auth.ts";
import { accountStateOf, accountTakenDown, statusFields, TAKENDOWN } from "../../accounts/account-status.ts";
import type { ApiRequest } from "../../http/api-request.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { XrpcError } from "../xrpc-error.ts";

const createSessionInput = z.object({
  identifier: z.string().max(1024),
  password: z.string().max(4096),
  authFactorToken: z.string().max(64).optional(),
  // A taken-down account's person asks for its takedown-only session with it (docs/decisions/0051).
  allowTakendown: z.boolean().optional(),
});

/** The reference's answer to any wrong identifier or password, the same for all (its auth.test.ts checks that too). */
const wrongCredentials = () => new XrpcError(401, "AuthenticationRequired", "Invalid identifier or password");

/**
 * Password sessions (docs/decisions/0047): com.atproto.server.createSession, refreshSession and deleteSession, as the
 * reference PDS answers them, so that `@atproto/api`'s AtpAgent (login, resumeSession, refresh on expiry, logout)
 * works unchanged. getSession is the one of serverMethods, for every kind of caller.
 */
export const passwordSessionMethods: XrpcMethods = {
  "com.atproto.server.createSession": {
    type: "procedure",
    auth: "none",
    input: "json",
    handler: async ({ services, request }, body) => {
      const input = createSessionInput.parse(body);
      services.passwordSessions.requireEnabled();
      let signedIn;
      try {
        signedIn = await services.signIn.forPasswordSession(input.identifier, input.password, request.clientAddress);
      } catch (error) {
        if (hasCode(error, "sign_in_failed")) throw wrongCredentials();
        throw error;
      }
      const { account, credential } = signedIn;
      const takenDown = (await services.accountStatus.stateOf(account.did)) === TAKENDOWN;
      if (takenDown) refuseTakenDown(credential, input.allowTakendown === true);
      // The emailed code guards the account's own password only: an app password is what the person gave the app.
      if ("passwordHash" in credential) {
        const language = fromAcceptLanguage(request.headers.get("accept-language")) ?? DEFAULT_LANGUAGE;
        await services.emailAuthFactor.verify(account.did, input.authFactorToken, request.clientAddress, language);
      }
      const issued = await services.passwordSessions.create(account.did, credential, request.headers.get("user-agent") ?? undefined, { takedownOnly: takenDown });
      // The password changed, or the app password was revoked, while this sign-in was being checked.
      if (!issued) throw wrongCredentials();
      return sessionAnswer(issued);
    },
  },

  /** The refresh JWT is the credential (Authorization: Bearer), as the reference's refresh verifier reads it. */
  "com.atproto.server.refreshSession": {
    type: "procedure",
    auth: "none",
    input: "none",
    handler: async ({ services, request }) => sessionAnswer(await services.passwordSessions.refresh(refreshToken(request))),
  },

  /** Ends the session of the refresh JWT presented, expired or spent ones too; an unknown one is no error (the reference's). */
  "com.atproto.server.deleteSession": {
    type: "procedure",
    auth: "none",
    input: "none",
    handler: async ({ services, request }) => {
      await services.passwordSessions.end(refreshToken(request));
      return {};
    },
  },
};

/**
 * A taken-down account (docs/decisions/0051), its password right: AccountTakedown, as the reference answers, unless
 * the person asks for the takedown-only session (allowTakendown), which only the account's own password opens here:
 * an app password is what the person gave an app, and the takedown-only session can move the account away.
 */
function refuseTakenDown(credential: SessionCredential, allowTakendown: boolean): void {
  if (!allowTakendown || "appPassword" in credential) throw accountTakenDown();
}

function refreshToken(request: ApiRequest): string {
  const authorization = request.headers.get("Authorization");
  if (!authorization) throw new XrpcError(401, "AuthMissing", "Authentication Required");
  const token = bearerJwt(authorization);
  if (token === undefined) throw new XrpcError(400, "InvalidToken", "Token could not be verified");
  return token;
}

/** createSession's and refreshSession's output (their lexicons): the tokens and what getSession says of the account. */
function sessionAnswer({ accessJwt, refreshJwt, did, account }: IssuedPasswordSession) {
  return {
    accessJwt,
    refreshJwt,
    did,
    handle: account.handle,
    email: account.email,
    emailConfirmed: account.emailConfirmedAt !== null,
    emailAuthFactor: account.emailAuthFactor,
    ...statusFields(accountStateOf(account)),
  };
}
