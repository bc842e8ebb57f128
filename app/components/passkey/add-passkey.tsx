import { SignedInFormFields, useFormAccount } from "../account/form-account";
import { browserSupportsWebAuthn, startRegistration, type PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/browser";
import { useEffect, useRef, useState } from "react";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { primaryButton } from "../ui/styles";
import { KeyIcon } from "./passkey-sign-in";
import { passkeyErrorMessage, PasskeyServerError, postJson, withLanguage } from "./passkey-errors";

type Props = { csrfToken: string; nameMaxLength: number; error?: string; name?: string };

/**
 * Adds a passkey: GET options → the browser creates the key → POST the
 * answer with its name. A plain form underneath: without JavaScript it posts
 * and the server explains that passkeys need JavaScript.
 */
export function AddPasskey({ csrfToken, nameMaxLength, error: serverError, name }: Props) {
  const [supported, setSupported] = useState(true);
  const [hydrated, setHydrated] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(serverError);
  const input = useRef<HTMLInputElement>(null);
  const account = useFormAccount();
  const { t, language } = useT();

  useEffect(() => {
    setHydrated(true);
    setSupported(browserSupportsWebAuthn());
  }, []);

  async function add(event: React.FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const chosen = String(new FormData(event.currentTarget).get("name") ?? "").trim();
    if (!chosen) {
      setError(t("passkey:add.nameMissing"));
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const endpoint = withLanguage("/account/passkey-register", language);
      const optionsUrl = account ? withLanguage(`/account/passkey-register?${new URLSearchParams({ account })}`, language) : endpoint;
      const response = await fetch(optionsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
      const options = (await response.json().catch(() => ({}))) as PublicKeyCredentialCreationOptionsJSON & { error_description?: string };
      if (!response.ok) throw new PasskeyServerError(options.error_description ?? "", response.status);
      const registration = await startRegistration({ optionsJSON: options });
      const answer = await postJson(endpoint, { csrf_token: csrfToken, account, name: chosen, response: registration });
      window.location.assign(typeof answer.next === "string" ? answer.next : "/account/passkeys");
    } catch (failure) {
      setError(passkeyErrorMessage(failure, "registration", t));
      setBusy(false);
      input.current?.focus();
    }
  }

  return (
    <form method="post" onSubmit={hydrated && supported ? add : undefined} noValidate className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 className="text-lg font-semibold">{t("passkey:add.title")}</h2>
      <p className="text-slate-700 dark:text-slate-200">{t("passkey:add.intro")}</p>
      <SignedInFormFields csrfToken={csrfToken} />
      <input type="hidden" name="intent" value="register" />
      <Field
        id="passkey-name"
        name="name"
        label={t("passkey:add.name")}
        autoComplete="off"
        required
        maxLength={nameMaxLength}
        defaultValue={name}
        hint={t("passkey:add.hint")}
        error={error}
        inputRef={input}
      />
      {!supported ? <p className="text-sm font-medium text-red-700 dark:text-red-300">{t("passkey:add.unsupported")}</p> : null}
      <button type="submit" className={`${primaryButton} self-start`} disabled={busy || !supported}>
        <KeyIcon />
        {busy ? t("passkey:add.waiting") : t("passkey:add.submit")}
      </button>
      <div role="status" className="sr-only">
        {busy ? t("passkey:add.follow") : ""}
      </div>
    </form>
  );
}
