import { AtriumError } from "../errors/atrium-error.ts";
import type { Translate } from "../i18n/translate.ts";

/**
 * What a screen's server side decides, framework-free: a view to render
 * (with the headers to send, e.g. a CSRF cookie), a redirect (after a
 * successful form post: post/redirect/get), or an error page; and, for the
 * screens' small JSON endpoints (the passkey ceremonies), a JSON answer.
 * The routes turn these into Remix responses (screens/respond.ts). Shared by
 * the consent screen and the account pages. Every text in them is in the
 * screen's language: controllers and renderers take its `t`
 * (docs/decisions/0019).
 */

/**
 * `action`: one link onwards that a person may follow by clicking it (a way back to an app, docs/decisions/0022).
 * `detail`: what only the app's developers need (protocol words), folded on the page under its own summary.
 */
export type ErrorView = { kind: "error"; status: number; title: string; message: string; action?: { href: string; label: string }; detail?: string };

export type PageOutcome<V> =
  | { kind: "view"; view: V; status?: number; headers: Headers }
  | { kind: "redirect"; location: string; headers: Headers }
  | { kind: "error"; error: ErrorView; headers: Headers };

/** Field errors of one form, each tied to its field by name; `form` says which form (a page may have several). */
export type FormErrors = {
  kind: "form-errors";
  form: string;
  /** Field name → message. The key "form" is for errors that belong to no single field. */
  errors: Record<string, string>;
  /** What the person typed (never passwords), to fill the form again. */
  values?: Record<string, string>;
};

/** A JSON answer of the screens' passkey endpoints (fetched by the pages' own scripts); Set-Cookie may hold several. */
export type JsonOutcome = { status: number; body: unknown; headers?: Record<string, string | readonly string[]> };

export function view<V>(value: V, headers = new Headers(), status?: number): PageOutcome<V> {
  return { kind: "view", view: value, headers, status };
}

export function redirectTo<V>(location: string, headers = new Headers()): PageOutcome<V> {
  return { kind: "redirect", location, headers };
}

export function errorOutcome<V>(status: number, title: string, message: string, headers = new Headers(), detail?: string): PageOutcome<V> {
  return { kind: "error", error: { kind: "error", status, title, message, ...(detail ? { detail } : {}) }, headers };
}

export function formErrors<V>(form: string, errors: Record<string, string>, values?: Record<string, string>, status = 400, headers = new Headers()): PageOutcome<V | FormErrors> {
  return { kind: "view", view: { kind: "form-errors", form, errors, values }, status, headers };
}

/** The answer to a form post that failed the Origin or CSRF check. */
export function forbiddenForm<V>(t: Translate): PageOutcome<V> {
  return errorOutcome(403, t("errors:page.forbiddenForm.title"), t("errors:page.forbiddenForm.message"));
}

/**
 * An error's message in the screen's language: its catalogue key when it has one (the English message is the
 * fallback), else the message as it is (an error nobody gave words to yet reads in English).
 */
export function messageOf(error: AtriumError, t: Translate): string {
  if (!error.messageKey) return error.message;
  return t(error.messageKey as never, { ...error.messageValues, defaultValue: error.message }) as string;
}

/** Headers an error's answer carries besides its body (Retry-After for 429). */
function errorHeaders(error: AtriumError): Headers {
  const headers = new Headers();
  if (error.retryAfterSeconds !== undefined) headers.set("Retry-After", String(error.retryAfterSeconds));
  return headers;
}

const PAGE_TITLES = [400, 403, 404, 429, 502] as const;

function titleOf(error: AtriumError, t: Translate): string {
  if (error.titleKey) return t(error.titleKey as never, { ...error.messageValues, defaultValue: error.title }) as string;
  if (error.title) return error.title;
  const status = PAGE_TITLES.find((known) => known === error.status);
  return status === undefined ? t("errors:page.titles.other") : t(`errors:page.titles.${status}`);
}

/**
 * The technical detail of an error whose message is in plain words: the catalogue entry beside its message
 * ("errors:authorize.otherClient.detail" beside "….message"), when there is one. Error pages fold it for
 * developers, so the words a person reads carry no protocol names (issue 19).
 */
function detailOf(error: AtriumError, t: Translate): string | undefined {
  if (!error.messageKey?.endsWith(".message")) return undefined;
  const key = `${error.messageKey.slice(0, -".message".length)}.detail`;
  const detail = t(key as never, { ...error.messageValues, defaultValue: "" }) as string;
  return detail && detail !== key ? detail : undefined;
}

/** The page renderer of the one error model: an error, as an error page in the screen's language (with `action`, a link onwards). */
export function errorPageOf<V>(error: AtriumError, t: Translate, action?: ErrorView["action"]): PageOutcome<V> {
  const page = errorOutcome<V>(error.status, titleOf(error, t), messageOf(error, t), errorHeaders(error), detailOf(error, t));
  if (action && page.kind === "error") page.error.action = action;
  return page;
}

/**
 * A refusal a person can act on (a wrong password, a wait, a taken handle:
 * any error of the model below 500), shown on the form it answers: tied to the
 * error's own field when it names one in `fields`, else to `field`. Anything
 * else is thrown on, to become an error page.
 */
export function formErrorOf<V>(
  thrown: unknown,
  t: Translate,
  form: string,
  field: string,
  values?: Record<string, string>,
  fields: readonly string[] = [],
): PageOutcome<V | FormErrors> {
  if (!(thrown instanceof AtriumError) || thrown.status >= 500) throw thrown;
  const error = thrown;
  const key = error.field && fields.includes(error.field) ? error.field : field;
  return formErrors(form, { [key]: messageOf(error, t) }, values, error.status, errorHeaders(error));
}

/** A JSON error of the screens' endpoints, in the OAuth shape `{error, error_description}`. */
export function jsonError(status: number, error: string, description: string, headers?: Record<string, string>): JsonOutcome {
  return { status, body: { error, error_description: description }, headers };
}

/**
 * An error of the model, as the screens' JSON error answer: its code, its page title and message in one sentence
 * pair, its Retry-After. Anything else is thrown on, to Remix's error handler (it logs it).
 */
export function jsonErrorOf(thrown: unknown, t: Translate): JsonOutcome {
  if (!(thrown instanceof AtriumError)) throw thrown;
  const error = thrown;
  const headers = error.retryAfterSeconds === undefined ? undefined : { "Retry-After": String(error.retryAfterSeconds) };
  const message = messageOf(error, t);
  return jsonError(error.status, error.code, error.title ? `${titleOf(error, t)}. ${message}` : message, headers);
}
