import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import { DEFAULT_LANGUAGE } from "../../../i18n/languages.ts";
import { fromAcceptLanguage } from "../../i18n/screen-language.ts";
import type { IssuedPasswordSession } from "../../accounts/password-sessions.ts";
import { bearerJwt } from "../../resource/resource-auth.ts";
import { DEACTIVATED } from "../../accounts/account-status.ts";
import type { ApiRequest } from "../../http/api-request.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { XrpcError } from "../xrpc-error.ts";

const createSessionInput = z.object({
  identifier: z.string().max(1024),
  password: z.string().max(4096),
  authFactorToken: z.string().max(64).optional(),
  // The reference answers a taken-down account a narrow session with it; there are no takedowns here.
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
      // The emailed code guards the account's own password only: an app password is what the person gave the app.
      if ("passwordHash" in credential) {
        const language = fromAcceptLanguage(request.headers.get("accept-language")) ?? DEFAULT_LANGUAGE;
        await services.emailAuthFactor.verify(account.did, input.authFactorToken, request.clientAddress, language);
      }
      const issued = await services.passwordSessions.create(account.did, credential, request.headers.get("user-agent") ?? undefined);
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
    ...(account.deactivatedAt === null ? { active: true } : { active: false, status: DEACTIVATED }),
  };
}
