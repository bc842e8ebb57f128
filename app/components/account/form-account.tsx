import { createContext, useContext } from "react";

/**
 * The account a signed-in page was shown for (docs/decisions/0020). Every form of the page names it in a hidden
 * field, and the passkey requests send it too, so that a form shown for one account never acts on another that was
 * chosen meanwhile in another tab.
 */
const FormAccount = createContext<string | undefined>(undefined);

export function FormAccountProvider({ did, children }: { did: string; children: React.ReactNode }) {
  return <FormAccount.Provider value={did}>{children}</FormAccount.Provider>;
}

/** The DID of the account this page acts on (undefined outside a signed-in page). */
export function useFormAccount(): string | undefined {
  return useContext(FormAccount);
}

/** The hidden fields of every signed-in form: the CSRF token and the account it acts on. */
export function SignedInFormFields({ csrfToken }: { csrfToken: string }) {
  const did = useFormAccount();
  return (
    <>
      <input type="hidden" name="csrf_token" value={csrfToken} />
      {did ? <input type="hidden" name="account" value={did} /> : null}
    </>
  );
}
