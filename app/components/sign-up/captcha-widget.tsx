import { useRouteLoaderData } from "@remix-run/react";
import { useT } from "../ui/i18n";
import { mutedText } from "../ui/styles";

/** Where the widget's script comes from (the screens' CSP allows it only while a captcha is set: server/security-headers.ts). */
const CAPTCHA_SCRIPT_URL = "https://js.hcaptcha.com/1/api.js";

/**
 * The captcha of the sign-up form (docs/decisions/0052), an hCaptcha-compatible widget shown only when the operator set
 * one: its script (with this answer's CSP nonce) fills the div with the challenge and, once solved, puts its answer in
 * the form as `h-captcha-response`, which the server verifies. Without JavaScript there is no widget: the page says so.
 */
export function CaptchaWidget({ siteKey, error }: { siteKey: string; error?: string }) {
  const { t } = useT();
  const nonce = (useRouteLoaderData("root") as { cspNonce?: string } | undefined)?.cspNonce;
  return (
    <fieldset className="flex flex-col gap-2" aria-describedby={error ? "captcha-error" : undefined}>
      <legend className="mb-1 font-medium">{t("account:signUp.captcha")}</legend>
      <div className="h-captcha min-h-20" data-sitekey={siteKey} />
      <noscript>
        <p className={`text-sm ${mutedText}`}>{t("account:signUp.captchaNeedsJavaScript")}</p>
      </noscript>
      {error ? (
        <p id="captcha-error" className="text-sm font-medium text-red-700 dark:text-red-300">
          {error}
        </p>
      ) : null}
      {/* Browsers hide a nonce from the DOM once the page loaded: the hydrated attribute differs, on purpose. */}
      <script src={CAPTCHA_SCRIPT_URL} nonce={nonce} async defer suppressHydrationWarning />
    </fieldset>
  );
}
