import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  startAuthentication,
  WebAuthnAbortService,
  type PublicKeyCredentialRequestOptionsJSON,
} from "@simplewebauthn/browser";
import { useCallback, useEffect, useRef, useState } from "react";
import { useT } from "../ui/i18n";
import { linkStyle, secondaryButton } from "../ui/styles";
import { isAborted, passkeyErrorMessage, PasskeyServerError, postJson, withLanguage } from "./passkey-errors";

type Options = {
  /** Sign-in options from the page (a single-use challenge). */
  options: PublicKeyCredentialRequestOptionsJSON;
  /** Where the assertion is posted (JSON); answers {ok, next}. */
  postUrl: string;
  /** GET for fresh options after a failed attempt. */
  refreshUrl: string;
  /** Fields posted with the assertion (CSRF token, request_uri…). */
  fields: Record<string, string>;
  /** Offer the passkeys in the username field's autofill (conditional mediation). */
  autofill: boolean;
  /** The id of the "Stay signed in on this device" checkbox, whose state is posted as `stay_signed_in` (docs/decisions/0020). */
  staySignedInId?: string;
};

type Props = Options & {
  /** The button's words, idle and while waiting (default: signing in). */
  label?: string;
  busyLabel?: string;
  /** What to suggest after a failure (default: the password sign-in). */
  retryHint?: string;
};

/** How often autofill is offered again after failures before it waits for the button. */
const AUTOFILL_RETRIES = 3;

/** A passkey sign-in's state, for the button and the message that may follow it. */
export type PasskeyState = {
  /** undefined until the browser has been asked (after hydration): the button's place is kept meanwhile. */
  supported?: boolean;
  busy: boolean;
  error?: string;
  start(): void;
};

/**
 * Signing in with a passkey: the button's action, and the browser's autofill on the username field
 * (autocomplete="username webauthn"). The assertion is posted with `fields`; success goes to the `next` the server
 * names. Failure is kept as `error` (shown in an alert) and fresh options are fetched, so both the passkey and the
 * password stay usable. Without JavaScript, or without WebAuthn, there is nothing to show: the password form is all.
 */
export function usePasskeySignIn({ options, postUrl, refreshUrl, fields, autofill, staySignedInId }: Options): PasskeyState {
  const { t, language } = useT();
  const [supported, setSupported] = useState<boolean>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const current = useRef(options);
  const autofillRetries = useRef(0);

  const refresh = useCallback(async () => {
    try {
      const response = await fetch(withLanguage(refreshUrl, language), { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (response.ok) current.current = (await response.json()) as PublicKeyCredentialRequestOptionsJSON;
    } catch {
      // Keep the old options: the next attempt reports what went wrong.
    }
  }, [refreshUrl, language]);

  const autofillOn = useRef(false);

  const attempt = useCallback(
    async (useBrowserAutofill: boolean): Promise<void> => {
      let signedIn = false;
      try {
        const response = await startAuthentication({ optionsJSON: current.current, useBrowserAutofill });
        setBusy(true);
        setError(undefined);
        const staySignedIn = staySignedInId ? (document.getElementById(staySignedInId) as HTMLInputElement | null)?.checked === true : undefined;
        const answer = await postJson(withLanguage(postUrl, language), staySignedIn === undefined ? { ...fields, response } : { ...fields, stay_signed_in: staySignedIn, response });
        signedIn = true;
        window.location.assign(typeof answer.next === "string" ? answer.next : window.location.href);
      } catch (failure) {
        // Replaced by another attempt (the button aborts the autofill request): not a failure.
        if (isAborted(failure)) return;
        // The browser's own autofill failing is not something the person did: stay quiet.
        if (useBrowserAutofill && !(failure instanceof PasskeyServerError)) return;
        setError(passkeyErrorMessage(failure, "sign-in", t));
        // The challenge may be spent: get a new one before anything else.
        await refresh();
        if (autofillOn.current && autofillRetries.current < AUTOFILL_RETRIES) {
          autofillRetries.current += 1;
          void attempt(true);
        }
      } finally {
        if (!signedIn) setBusy(false);
      }
    },
    [fields, postUrl, refresh, language, t, staySignedInId],
  );

  useEffect(() => {
    if (!browserSupportsWebAuthn()) {
      setSupported(false);
      return;
    }
    setSupported(true);
    let cancelled = false;
    if (autofill) {
      void browserSupportsWebAuthnAutofill().then((available) => {
        if (!available || cancelled) return;
        autofillOn.current = true;
        void attempt(true);
      });
    }
    return () => {
      cancelled = true;
      WebAuthnAbortService.cancelCeremony();
    };
    // Start once per page: `attempt` reads the latest options from a ref.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return { supported, busy, error, start: () => void attempt(false) };
}

/**
 * "Sign in with a passkey": a full-width button, and its message under it. Rendered only once JavaScript runs and
 * the browser supports WebAuthn; meanwhile its place is kept, so the page does not jump when it appears.
 */
export function PasskeySignIn({ label, busyLabel, retryHint, ...options }: Props) {
  const { t } = useT();
  const passkey = usePasskeySignIn(options);
  return (
    <div className="flex flex-col gap-3">
      {passkey.supported ? (
        <button type="button" className={`${secondaryButton} w-full`} disabled={passkey.busy} onClick={passkey.start}>
          <KeyIcon />
          {passkey.busy ? (busyLabel ?? t("passkey:signingIn")) : (label ?? t("passkey:signIn"))}
        </button>
      ) : passkey.supported === undefined ? (
        // The button's place, kept while JavaScript starts, so that it does not push the page down when it appears
        // (issue 19). Only where scripts run: without them no button comes, and nothing is kept.
        <div aria-hidden="true" className="hidden min-h-11 [@media(scripting:enabled)]:block" />
      ) : null}
      <div role="alert">{passkey.error ? <PasskeyErrorText error={passkey.error} retryHint={retryHint} /> : null}</div>
    </div>
  );
}

/**
 * "Use a passkey" as a link-sized button for the line of the username's label (issue 28, item 18: a full-width
 * button and its kept place made the consent screen 68 px taller once the server had a passkey). Until JavaScript
 * has asked the browser, an invisible copy holds its exact place, wrapped as it will wrap, where scripts run.
 */
export function PasskeyInlineButton({ passkey, label }: { passkey: PasskeyState; label: string }) {
  const { t } = useT();
  const look = `${linkStyle} inline-flex items-center gap-1 text-sm`;
  const content = (
    <>
      <KeyIcon className="size-4" />
      {passkey.busy ? t("passkey:signingIn") : label}
    </>
  );
  if (passkey.supported) {
    return (
      // The padding widens the target to 44 px without making the label's line taller (WCAG 2.5.8).
      <button type="button" className={`${look} -my-2.5 py-2.5`} disabled={passkey.busy} onClick={passkey.start}>
        {content}
      </button>
    );
  }
  if (passkey.supported === false) return null;
  return (
    <span aria-hidden="true" className={`${look} invisible hidden [@media(scripting:enabled)]:inline-flex`}>
      {content}
    </span>
  );
}

/** A failed passkey sign-in, said where the person looks (inserted with its text, so it is announced). */
export function PasskeyError({ passkey, retryHint }: { passkey: PasskeyState; retryHint?: string }) {
  if (!passkey.error) return null;
  return (
    <div role="alert">
      <PasskeyErrorText error={passkey.error} retryHint={retryHint} />
    </div>
  );
}

function PasskeyErrorText({ error, retryHint }: { error: string; retryHint?: string }) {
  const { t } = useT();
  return (
    <p className="rounded-lg border border-red-300 bg-red-50 p-3 text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">
      {error} {retryHint ?? t("passkey:retry")}
    </p>
  );
}

export function KeyIcon({ className = "size-5" }: { className?: string }) {
  return (
    <svg aria-hidden="true" viewBox="0 0 24 24" className={`${className} shrink-0`} fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
      <circle cx="7.5" cy="15.5" r="4.5" />
      <path d="m10.7 12.3 9.3-9.3" />
      <path d="m17 6 3 3" />
      <path d="m14 9 2 2" />
    </svg>
  );
}
