import type { T } from "../ui/i18n";

/** Turns a WebAuthn failure into words a person can act on, in the page's language. */
export function passkeyErrorMessage(error: unknown, during: "sign-in" | "registration", t: T): string {
  const name = error instanceof Error ? error.name : "";
  if (error instanceof PasskeyServerError) return error.message || t("passkey:errors.serverAnswered", { status: error.status });
  if (name === "NotAllowedError") return during === "sign-in" ? t("passkey:errors.signInCancelled") : t("passkey:errors.addCancelled");
  if (name === "InvalidStateError") return t("passkey:errors.alreadyOnDevice");
  if (name === "SecurityError") return t("passkey:errors.refused");
  if (name === "NotSupportedError") return t("passkey:errors.unsuitable");
  if (error instanceof TypeError) return t("passkey:errors.unreachable");
  return during === "sign-in" ? t("passkey:errors.signInFailed") : t("passkey:errors.addFailed");
}

/**
 * Where the page's scripts post and fetch: with the page's language (`lng`), so the server's JSON refusals are
 * written in the language the page is in (the picker's choice wins there too, docs/decisions/0019).
 */
export function withLanguage(url: string, language: string): string {
  return `${url}${url.includes("?") ? "&" : "?"}${new URLSearchParams({ lng: language })}`;
}

/** The server refused the passkey answer; its message (already in the page's language) is shown as is. */
export class PasskeyServerError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "PasskeyServerError";
  }
}

/** A ceremony replaced by another one (e.g. autofill aborted by the button): not a failure. */
export function isAborted(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === "ERROR_CEREMONY_ABORTED" || (error instanceof Error && error.name === "AbortError");
}

/** POSTs JSON to one of our endpoints; returns the answer or throws PasskeyServerError with its description. */
export async function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!response.ok || answer.ok !== true) {
    throw new PasskeyServerError(typeof answer.error_description === "string" ? answer.error_description : "", response.status);
  }
  return answer;
}
