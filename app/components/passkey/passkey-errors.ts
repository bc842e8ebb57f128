/** Turns a WebAuthn failure into words a person can act on. */
export function passkeyErrorMessage(error: unknown, during: "sign-in" | "registration"): string {
  const name = error instanceof Error ? error.name : "";
  if (error instanceof PasskeyServerError) return error.message;
  if (name === "NotAllowedError") {
    return during === "sign-in"
      ? "The passkey sign-in was cancelled or timed out."
      : "Adding the passkey was cancelled or timed out.";
  }
  if (name === "InvalidStateError") return "This device already holds a passkey for your account.";
  if (name === "SecurityError") return "This browser refused to use a passkey for this address.";
  if (name === "NotSupportedError") return "This device cannot create a suitable passkey.";
  if (error instanceof TypeError) return "The server could not be reached. Check your connection.";
  return during === "sign-in" ? "The passkey sign-in did not work." : "The passkey could not be added.";
}

/** The server refused the passkey answer; its message is shown as is. */
export class PasskeyServerError extends Error {
  constructor(message: string) {
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
    throw new PasskeyServerError(typeof answer.error_description === "string" ? answer.error_description : `The server answered ${response.status}.`);
  }
  return answer;
}
