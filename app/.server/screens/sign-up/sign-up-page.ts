import type { CreatedAccount } from "../../accounts/account-manager.ts";
import { HANDLE_NAME_MAX, HANDLE_NAME_MIN, HandleError, withDot } from "../../accounts/handle-rules.ts";
import { randomInvitePart } from "../../accounts/invite-codes.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../accounts/password.ts";
import type { SignUpField, SignUpInput } from "../../accounts/sign-up.ts";
import { AtriumError } from "../../errors/atrium-error.ts";
import { requestClientAddress } from "../../http/browser.ts";
import { languageOf, type Translate } from "../../i18n/translate.ts";
import { CAPTCHA_FIELD } from "../../security/captcha.ts";
import type { Services } from "../../services.ts";
import { startSession, withCookies } from "../browser-session.ts";
import type { ClientIdentityView } from "../client-identity.ts";
import { errorPageOf, messageOf, redirectTo, view, type PageOutcome } from "../outcome.ts";
import { refusalOf } from "../account/handle-page.ts";

/**
 * The sign-up form (docs/decisions/0052), framework-free, for its two places: the account area (/account/sign-up) and
 * the OAuth flow (the consent screen's step under prompt=create or "Create an account"). Two steps that work without
 * JavaScript: the handle, checked against the rule and the accounts before the last step; then the email address,
 * the password, the invite code when one is needed, an optional recovery key, the captcha when one is set, and the
 * operator's terms. Each refusal stands beside its field; a handle taken meanwhile (two people at once) reopens the
 * handle's field on the last step, its message under it.
 */

/** Where the form stands: which place it is in, and what its links and hidden fields are there. */
export type SignUpFrame = {
  /** The path the form posts to. */
  action: string;
  /** The place's own hidden fields (the pushed request's, in the flow). */
  hidden: Record<string, string>;
  /** "Sign in instead". */
  signInHref: string;
  /** The handle step again, with what was typed. */
  handleStepHref: (values: { name: string; domain: string }) => string;
  /** In the OAuth flow: the app that asked, named as the consent screen names it. */
  client?: ClientIdentityView;
};

export type SignUpView = {
  kind: "sign-up";
  step: "handle" | "details";
  csrfToken: string;
  action: string;
  hidden: Record<string, string>;
  domains: string[];
  limits: { min: number; max: number };
  /** The handle chosen on the first step (the last step shows it, with a link back). */
  handle?: string;
  /** The last step reopens the handle's fields: it was refused there (taken meanwhile). */
  editHandle: boolean;
  /** What was typed (never the password), to fill the form again. */
  values: Partial<Record<"name" | "domain" | "email" | "inviteCode" | "recoveryKey", string>>;
  /** Field → message; "form" for what belongs to no single field. */
  errors: Record<string, string>;
  inviteRequired: boolean;
  /** What a code looks like here (the reference's format, with this server's host). */
  inviteExample: string;
  captchaSiteKey?: string;
  password: { min: number; max: number };
  links: { signIn: string; changeHandle: string; terms?: string; privacy?: string };
  serviceName: string;
  client?: ClientIdentityView;
};

type SignUpValues = SignUpView["values"];

/** The form's fields whose refusals it shows beside them (the domain's is the name's when there is one domain). */
const FIELD_OF: Record<SignUpField, string> = { handle: "name", email: "email", password: "password", inviteCode: "inviteCode", recoveryKey: "recoveryKey", captcha: "captcha" };

export function signUpView(services: Services, frame: SignUpFrame, csrfToken: string, state: { step: SignUpView["step"]; handle?: string; editHandle?: boolean; values?: SignUpValues; errors?: Record<string, string> }): SignUpView {
  const { config } = services;
  const domains = config.userDomains.map(withDot);
  const values = { domain: domains[0], ...state.values };
  return {
    kind: "sign-up",
    step: state.step,
    csrfToken,
    action: frame.action,
    hidden: frame.hidden,
    domains,
    limits: { min: HANDLE_NAME_MIN, max: HANDLE_NAME_MAX },
    handle: state.handle,
    editHandle: state.editHandle ?? false,
    values,
    errors: state.errors ?? {},
    inviteRequired: services.signUp.inviteRequired,
    inviteExample: `${config.publicUrl.hostname.replaceAll(".", "-")}-${randomInvitePart()}`,
    captchaSiteKey: services.signUp.captchaSiteKey,
    password: { min: PASSWORD_MIN_LENGTH, max: PASSWORD_MAX_LENGTH },
    links: { signIn: frame.signInHref, changeHandle: frame.handleStepHref({ name: values.name ?? "", domain: values.domain ?? "" }), terms: config.brand.termsUrl, privacy: config.brand.privacyUrl },
    serviceName: config.brand.serviceName,
    client: frame.client,
  };
}

/** The first step as a link shows it: the name and domain typed before ("Change" on the last step). */
export function firstStepValues(url: URL): SignUpValues {
  return { name: url.searchParams.get("name")?.slice(0, 64) ?? "", domain: url.searchParams.get("domain")?.slice(0, 253) ?? undefined };
}

/**
 * The form's two posts: `intent=sign-up-handle` (the first step: the handle checked, then the last step) and
 * `intent=sign-up` (the last: the account made, then `created` says where to go). Anything else is not this form's.
 */
export async function answerSignUp(
  services: Services,
  request: Request,
  form: (name: string) => string,
  t: Translate,
  frame: SignUpFrame,
  csrfToken: string,
  created: (account: CreatedAccount) => Promise<PageOutcome<SignUpView>>,
): Promise<PageOutcome<SignUpView>> {
  services.signUp.requireEnabled();
  const values: SignUpValues = { name: form("name").slice(0, 64), domain: form("domain").slice(0, 253) };
  const refused = (step: SignUpView["step"], errors: Record<string, string>, extra: { handle?: string; editHandle?: boolean; values?: SignUpValues } = {}, status = 400, headers = new Headers()) =>
    view(signUpView(services, frame, csrfToken, { step, errors, ...extra, values: { ...values, ...extra.values } }), headers, status);

  const chosen = chosenHandle(services, values, t);
  if (form("intent") === "sign-up-handle") {
    if ("errors" in chosen) return refused("handle", chosen.errors);
    try {
      const handle = await services.signUp.checkHandle(chosen.handle);
      return view(signUpView(services, frame, csrfToken, { step: "details", handle, values }));
    } catch (error) {
      return refused("handle", handleRefusal(error, chosen.handle, values.name ?? "", t));
    }
  }

  const details: SignUpValues = { ...values, email: form("email").trim().slice(0, 254), inviteCode: form("invite_code").trim().slice(0, 128), recoveryKey: form("recovery_key").trim().slice(0, 256) };
  if ("errors" in chosen) return refused("details", chosen.errors, { editHandle: true, values: details });
  const input: SignUpInput = { handle: chosen.handle, email: details.email!, password: form("password"), inviteCode: details.inviteCode || undefined, recoveryKey: details.recoveryKey || undefined };
  const errors = fieldErrorsOf(services.signUp.fieldErrors(input), input, values.name ?? "", t);
  if (!details.email) errors.email = t("errors:emailChange.invalid");
  if (Object.keys(errors).length) return refused("details", errors, { handle: chosen.handle, editHandle: "name" in errors || "domain" in errors, values: details });
  const captchaToken = services.signUp.captchaSiteKey ? form(CAPTCHA_FIELD) : undefined;
  let account: CreatedAccount;
  try {
    account = await services.signUp.create(input, { address: requestClientAddress(request), language: languageOf(t), captchaToken });
  } catch (error) {
    // The captcha service unreachable is said on the form (nothing was made); other failures of the server are pages.
    if (!(error instanceof AtriumError) || (error.status >= 500 && error.code !== "captcha_unavailable")) throw error;
    if (error.code === "sign_up_closed") return errorPageOf(error, t);
    const fieldErrors = fieldErrorsOf({ [fieldOf(error)]: error }, input, values.name ?? "", t);
    const headers = new Headers();
    if (error.retryAfterSeconds !== undefined) headers.set("Retry-After", String(error.retryAfterSeconds));
    return refused("details", fieldErrors, { handle: chosen.handle, editHandle: "name" in fieldErrors || "domain" in fieldErrors, values: details }, error.status, headers);
  }
  return created(account);
}

/** The handle the fields name, or why not (nothing typed, a domain not served here). */
function chosenHandle(services: Services, values: SignUpValues, t: Translate): { handle: string } | { errors: Record<string, string> } {
  const name = (values.name ?? "").normalize("NFKC").trim().replace(/^@/, "").toLowerCase();
  const domain = services.config.userDomains.map(withDot).find((known) => known === (values.domain ?? "").trim().toLowerCase());
  if (!name) return { errors: { name: t("errors:form.handleEnter") } };
  if (!domain) return { errors: { domain: t("errors:form.handleDomain") } };
  return { handle: `${name}${domain}` };
}

/** A refused handle, in the words of the field it concerns. */
function handleRefusal(error: unknown, handle: string, name: string, t: Translate): Record<string, string> {
  if (error instanceof HandleError) return refusalOf(error.reason, name, t);
  if (error instanceof AtriumError && error.code === "handle_taken") return { name: t("errors:form.handleTaken", { handle }) };
  throw error;
}

/** Which field an error of the sign-up belongs to. */
function fieldOf(error: AtriumError): SignUpField | "form" {
  if (error.field && error.field in FIELD_OF) return error.field as SignUpField;
  if (error.code.startsWith("handle_")) return "handle";
  if (error.code === "captcha_refused") return "captcha";
  return "form";
}

/** Each refusal in the screen's words, under the form's field names. */
function fieldErrorsOf(errors: Partial<Record<SignUpField | "form", AtriumError>>, input: SignUpInput, name: string, t: Translate): Record<string, string> {
  const words: Record<string, string> = {};
  for (const [field, error] of Object.entries(errors) as [SignUpField | "form", AtriumError][]) {
    if (!error) continue;
    if (field === "handle") Object.assign(words, handleRefusal(error, input.handle, name, t));
    else if (field === "email") words.email = error.code === "email_taken" ? t("errors:signUp.emailTaken") : t("errors:emailChange.invalid");
    else if (field === "password") words.password = input.password.length > PASSWORD_MAX_LENGTH ? t("errors:form.passwordTooLong") : t("errors:form.passwordTooShort", { count: PASSWORD_MIN_LENGTH });
    else if (field === "inviteCode") words.inviteCode = input.inviteCode ? t("errors:signUp.inviteInvalid") : t("errors:signUp.inviteMissing");
    else if (field === "recoveryKey") words.recoveryKey = t("errors:signUp.recoveryKey");
    else if (field === "captcha") words.captcha = t("errors:signUp.captcha");
    else words.form = messageOf(error, t);
  }
  return words;
}

/** After a sign-up: the new account signed in in this browser (its first session), then where `next` says. */
export async function signedUp(services: Services, request: Request, account: CreatedAccount, next: string): Promise<PageOutcome<SignUpView>> {
  const cookies = await startSession(services, request, account, false, "sign-up");
  return redirectTo(next, withCookies(new Headers(), cookies));
}
