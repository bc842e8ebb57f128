import { z } from "zod";
import { AccountError } from "../../accounts/account-errors.ts";
import { HandleError } from "../../accounts/handle-rules.ts";
import { EmailConfirmationError } from "../../accounts/email-confirmation.ts";
import { AtriumError } from "../../errors/atrium-error.ts";
import { DEFAULT_LANGUAGE } from "../../../i18n/languages.ts";
import { fromAcceptLanguage } from "../../i18n/screen-language.ts";
import { serverDid } from "../../config.ts";
import type { ApiRequest } from "../../http/api-request.ts";
import type { XrpcContext, XrpcMethods } from "../xrpc-method.ts";
import { bearerJwt } from "../../resource/resource-auth.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";
import { HANDLE_ERROR_NAMES } from "./identity.ts";

/**
 * com.atproto.server.createAccount for new accounts, describeServer, and the email confirmation
 * (requestEmailConfirmation, confirmEmail), as the reference PDS answers them (docs/decisions/0052).
 */

const text = (max: number) => z.string().max(max);

const createAccountInput = z.object({
  handle: text(1024),
  email: text(1024).optional(),
  password: text(4096).optional(),
  inviteCode: text(1024).optional(),
  recoveryKey: text(1024).optional(),
  did: text(2048).optional(),
  plcOp: z.unknown().optional(),
  verificationCode: text(1024).optional(),
  verificationPhone: text(1024).optional(),
});

const confirmEmailInput = z.object({ email: text(1024), token: text(64) });

/** The reference's upper bound on a new password (its NEW_PASSWORD_MAX_LENGTH). */
const NEW_PASSWORD_MAX_LENGTH = 256;

function languageOf(request: ApiRequest) {
  return fromAcceptLanguage(request.headers.get("accept-language")) ?? DEFAULT_LANGUAGE;
}

/** A refusal of the sign-up rule, with the reference's error name (its createAccount's and the lexicon's). */
function createAccountError(error: unknown): unknown {
  if (error instanceof HandleError) return new XrpcError(400, HANDLE_ERROR_NAMES[error.reason], error.message);
  if (!(error instanceof AccountError)) return error;
  switch (error.code) {
    case "handle_taken":
      return new XrpcError(400, "HandleNotAvailable", error.message);
    case "email_invalid":
      return invalidRequest("This email address is not supported, please use a different email.");
    case "email_taken":
      return invalidRequest(error.message.replace(/^email (.*) is already in use$/, "Email already taken: $1"));
    case "password_invalid":
      return new XrpcError(400, "InvalidPassword", error.message);
    case "inviteCode_invalid":
      return new XrpcError(400, "InvalidInviteCode", error.message);
    case "did_taken":
      return new XrpcError(400, "AlreadyExists", error.message);
  }
  return invalidRequest(error.message);
}

export const signUpMethods: XrpcMethods = {
  /** What apps ask before a sign-up: the truth of this server's settings. */
  "com.atproto.server.describeServer": {
    type: "query",
    auth: "none",
    handler: ({ services }) => {
      const { config } = services;
      return {
        did: serverDid(config),
        availableUserDomains: config.userDomains.map((domain) => (domain.startsWith(".") ? domain : `.${domain}`)),
        inviteCodeRequired: services.signUp.inviteRequired,
        phoneVerificationRequired: false,
        links: { ...(config.brand.termsUrl ? { termsOfService: config.brand.termsUrl } : {}), ...(config.brand.privacyUrl ? { privacyPolicy: config.brand.privacyUrl } : {}) },
        contact: config.contactEmail ? { email: config.contactEmail } : {},
      };
    },
  },

  /**
   * A new account under a new did:plc, or, with `did`, an account moving here under the DID it has (docs/decisions/0055):
   * created deactivated once a service token of that DID's key allows it. Refused with the reference's errors,
   * answered with a password session as the reference answers (createSession's tokens; none when the operator turned
   * password sessions off), which the rest of the move (importRepo, uploadBlob, activateAccount) is made with.
   */
  "com.atproto.server.createAccount": {
    type: "procedure",
    auth: "none",
    input: "json",
    handler: async ({ services, request }, body) => {
      const input = createAccountInput.parse(body);
      if (input.plcOp !== undefined) throw invalidRequest('Unsupported input: "plcOp"');
      if (input.password === undefined) throw new XrpcError(400, "InvalidPassword", "A password is required");
      if (input.password.length > NEW_PASSWORD_MAX_LENGTH) throw invalidRequest(`Password too long. Maximum length is ${NEW_PASSWORD_MAX_LENGTH} characters.`);
      if (!input.email) throw invalidRequest("Email is required");
      const movingIn = input.did === undefined ? undefined : await provenDid(services, request, input.did);
      let account;
      try {
        account = await services.signUp.create(
          { handle: input.handle, email: input.email, password: input.password, inviteCode: input.inviteCode, recoveryKey: input.recoveryKey },
          { address: request.clientAddress, language: languageOf(request) },
          movingIn,
        );
      } catch (error) {
        throw createAccountError(error);
      }
      // The reference answers with the DID document as the directory has it now (resolved afresh; left out if that fails):
      // a client moving an account in reads its service endpoint there. The account stands either way.
      const didDoc = await services.dids.resolve(account.did, { fresh: true }).catch(() => undefined);
      const answer = { handle: account.handle, did: account.did, ...(didDoc ? { didDoc } : {}) };
      if (!services.passwordSessions.enabled) return answer;
      const issued = await services.passwordSessions.create(account.did, account.proof, request.headers.get("user-agent") ?? undefined);
      // The password changed between the account's creation and here (a reset by its owner): the account stands.
      if (!issued) return answer;
      return { accessJwt: issued.accessJwt, refreshJwt: issued.refreshJwt, ...answer };
    },
  },

  /** account:email?action=manage for OAuth tokens (the reference's rule), any password session; counted per account and address. */
  "com.atproto.server.requestEmailConfirmation": {
    type: "procedure",
    auth: "required",
    input: "none",
    handler: async ({ services, caller, request }) => {
      caller.requireEmailManagement();
      await services.emailConfirmation.request(caller.did, languageOf(request), request.clientAddress).catch(refusedConfirmation);
      return {};
    },
  },

  "com.atproto.server.confirmEmail": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireEmailManagement();
      const { email, token } = confirmEmailInput.parse(body);
      await services.emailConfirmation.confirm(caller.did, token, email).catch(refusedConfirmation);
      return {};
    },
  },
};

/**
 * createAccount's `did`, once `Authorization: Bearer` holds a service token that DID signed for this method and this
 * server (the reference's userServiceAuthOptional, then its check that the token's issuer is the DID): the old PDS
 * mints it with com.atproto.server.getServiceAuth, signed with the `#atproto` key of the DID document
 * (identity/service-jwt-verifier.ts). Without one, the reference's 401.
 */
async function provenDid(services: XrpcContext["services"], request: ApiRequest, did: string): Promise<{ did: string }> {
  const missing = () => new XrpcError(401, "AuthenticationRequired", `Missing auth to create account with did: ${did}`);
  const token = bearerJwt(request.headers.get("Authorization"));
  if (token === undefined) throw missing();
  const claims = await services.serviceJwts.verify(token, { audience: serverDid(services.config), lxm: "com.atproto.server.createAccount" });
  if (claims.iss !== did) throw missing();
  return { did };
}

/** A refused confirmation with the reference's names and words (its message: "Token is invalid"). */
function refusedConfirmation(error: unknown): never {
  if (error instanceof EmailConfirmationError) {
    const words = { code: "Token is invalid", email: "invalid email", unavailable: "This server cannot send email: ask its operator to confirm the address" }[error.reason];
    throw new AtriumError(error.code, words, { status: 400, xrpcName: error.xrpcName });
  }
  throw error;
}
