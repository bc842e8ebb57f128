import { z } from "zod";
import { AtriumError } from "../errors/atrium-error.ts";
import { SECOND } from "../util/time.ts";

/**
 * The captcha sign-up on the screens may need (docs/decisions/0052): an hCaptcha-compatible service, off unless the
 * operator sets its site key and secret. The widget posts its answer as the form field `h-captcha-response`; the
 * server asks the service's verify endpoint whether it is good (https://docs.hcaptcha.com/#verify-the-user-response-server-side:
 * a form POST of `secret`, `response`, `remoteip` and `sitekey`, answered with JSON `{ "success": true|false, … }`).
 */
export type CaptchaSettings = { siteKey: string; secret: string; verifyUrl: string };

/** The form field the widget fills. */
export const CAPTCHA_FIELD = "h-captcha-response";

/** Where the widget's script comes from, and what the screens' CSP must allow for it (server/security-headers.ts). */
export const CAPTCHA_SCRIPT_URL = "https://js.hcaptcha.com/1/api.js";
export const CAPTCHA_SOURCES = ["https://hcaptcha.com", "https://*.hcaptcha.com"] as const;

const VERIFY_TIMEOUT = 10 * SECOND;
/** An answer is a token of a few kilobytes; anything far longer is not one. */
const MAX_TOKEN_LENGTH = 16 * 1024;

const verifyAnswer = z.object({ success: z.boolean() }).passthrough();

/** The service could not say (unreachable, slow, an answer that is not its own): nobody is signed up, nothing is stored. */
export class CaptchaUnavailableError extends AtriumError {
  constructor(cause: string) {
    super("captcha_unavailable", `The captcha service could not be asked (${cause}); try again in a moment`, {
      status: 502,
      messageKey: "errors:signUp.captchaUnavailable",
    });
  }
}

export class Captcha {
  constructor(private readonly settings: CaptchaSettings) {}

  get siteKey(): string {
    return this.settings.siteKey;
  }

  /** Whether the service accepts `token` (the widget's answer) from the person at `address`. */
  async verify(token: string, address: string | undefined): Promise<boolean> {
    if (!token || token.length > MAX_TOKEN_LENGTH) return false;
    const form = new URLSearchParams({ secret: this.settings.secret, response: token, sitekey: this.settings.siteKey });
    if (address) form.set("remoteip", address);
    let answer: Response;
    try {
      answer = await fetch(this.settings.verifyUrl, { method: "POST", body: form, redirect: "error", signal: AbortSignal.timeout(VERIFY_TIMEOUT) });
    } catch (error) {
      throw new CaptchaUnavailableError(error instanceof Error ? error.message : String(error));
    }
    if (answer.status !== 200) {
      await answer.body?.cancel();
      throw new CaptchaUnavailableError(`HTTP ${answer.status}`);
    }
    const parsed = verifyAnswer.safeParse(await answer.json().catch(() => undefined));
    if (!parsed.success) throw new CaptchaUnavailableError("its answer was not JSON with success");
    return parsed.data.success;
  }
}
