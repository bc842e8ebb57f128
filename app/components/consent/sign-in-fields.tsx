import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { PasskeySignIn } from "../passkey/passkey-sign-in";
import { Field } from "../ui/field";

type Props = { view: ConsentView; formError?: string; identifier?: string };

/**
 * The sign-in part of the consent form: handle or email and password (works
 * without JavaScript), and a passkey when one is registered. A login_hint
 * fills and locks the identifier.
 */
export function SignInFields({ view, formError, identifier }: Props) {
  const describedBy = formError ? "form-error" : undefined;
  return (
    <fieldset className="flex flex-col gap-4">
      <legend className="mb-3 text-lg font-semibold">Sign in</legend>
      <Field
        id="identifier"
        name="identifier"
        label="Handle or email"
        autoComplete="username webauthn"
        required
        defaultValue={identifier ?? view.loginHint ?? view.account?.handle ?? ""}
        readOnly={Boolean(view.loginHint)}
        hint={view.loginHint ? "The app asked for this account." : undefined}
        describedBy={describedBy}
      />
      <Field id="password" name="password" label="Password" type="password" autoComplete="current-password" required invalid={Boolean(formError)} describedBy={describedBy} />
      {view.passkey ? (
        <PasskeySignIn
          options={view.passkey.options}
          postUrl="/oauth/passkey-auth"
          refreshUrl={`/oauth/passkey-auth?${new URLSearchParams({ client_id: view.clientId, request_uri: view.requestUri })}`}
          fields={{ request_uri: view.requestUri, client_id: view.clientId, csrf_token: view.csrfToken }}
          autofill
        />
      ) : null}
    </fieldset>
  );
}
