import { SignedInFormFields, useFormAccount } from "../account/form-account";
import { browserSupportsWebAuthn, startRegistration, type PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/browser";
import { useEffect, useRef, useState } from "react";
import { Field } from "../ui/field";
import { primaryButton } from "../ui/styles";
import { KeyIcon } from "./passkey-sign-in";
import { passkeyErrorMessage, PasskeyServerError, postJson } from "./passkey-errors";

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

  useEffect(() => {
    setHydrated(true);
    setSupported(browserSupportsWebAuthn());
  }, []);

  async function add(event: React.FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const chosen = String(new FormData(event.currentTarget).get("name") ?? "").trim();
    if (!chosen) {
      setError("Give the passkey a name, for example the device it is on.");
      input.current?.focus();
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const optionsUrl = account ? `/account/passkey-register?${new URLSearchParams({ account })}` : "/account/passkey-register";
      const response = await fetch(optionsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
      const options = (await response.json().catch(() => ({}))) as PublicKeyCredentialCreationOptionsJSON & { error_description?: string };
      if (!response.ok) throw new PasskeyServerError(options.error_description ?? `The server answered ${response.status}.`);
      const registration = await startRegistration({ optionsJSON: options });
      const answer = await postJson("/account/passkey-register", { csrf_token: csrfToken, account, name: chosen, response: registration });
      window.location.assign(typeof answer.next === "string" ? answer.next : "/account/passkeys");
    } catch (failure) {
      setError(passkeyErrorMessage(failure, "registration"));
      setBusy(false);
      input.current?.focus();
    }
  }

  return (
    <form method="post" onSubmit={hydrated && supported ? add : undefined} noValidate className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 className="text-lg font-semibold">Add a passkey</h2>
      <p className="text-slate-700 dark:text-slate-200">
        A passkey lets you sign in with this device&apos;s screen lock or a security key instead of your password. Give it a name so you can tell your passkeys apart.
      </p>
      <SignedInFormFields csrfToken={csrfToken} />
      <input type="hidden" name="intent" value="register" />
      <Field
        id="passkey-name"
        name="name"
        label="Passkey name"
        autoComplete="off"
        required
        maxLength={nameMaxLength}
        defaultValue={name}
        hint="For example: “Work laptop” or “Phone”."
        error={error}
        inputRef={input}
      />
      {!supported ? <p className="text-sm font-medium text-red-700 dark:text-red-300">This browser does not support passkeys.</p> : null}
      <button type="submit" className={`${primaryButton} self-start`} disabled={busy || !supported}>
        <KeyIcon />
        {busy ? "Waiting for your device…" : "Add a passkey"}
      </button>
      <div role="status" className="sr-only">
        {busy ? "Follow your browser's instructions to create the passkey." : ""}
      </div>
    </form>
  );
}
