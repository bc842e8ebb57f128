import { createContext, useContext } from "react";
import { dangerButton, linkStyle } from "../ui/styles";

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

/** A signed-in form's hidden fields beyond the signed-in ones (the intent, what it acts on). */
function HiddenFields({ fields }: { fields: Record<string, string> }) {
  return (
    <>
      {Object.entries(fields).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
    </>
  );
}

/**
 * A control that acts at once: a signed-in form posting `fields` (CSRF-checked), its one button described by what it
 * acts on. No JavaScript needed.
 */
export function PostButton({ csrfToken, fields, label, className, describedBy }: { csrfToken: string; fields: Record<string, string>; label: string; className: string; describedBy: string }) {
  return (
    <form method="post">
      <SignedInFormFields csrfToken={csrfToken} />
      <HiddenFields fields={fields} />
      <button type="submit" className={className} aria-describedby={describedBy}>
        {label}
      </button>
    </form>
  );
}

/**
 * A confirmation's answer (the second step of revoking, signing out, taking back): the list of what it does, which
 * its button is described by, anything more to say, then the signed-in post that does it and Cancel, a link back.
 * Both work without JavaScript.
 */
export function ConfirmForm(props: {
  csrfToken: string;
  fields: Record<string, string>;
  /** What answering yes does, one line each; `effectsId` names the list. */
  effects: string[];
  effectsId: string;
  note?: React.ReactNode;
  submit: string;
  cancel: string;
  cancelHref: string;
  /** Where it posts, when not to the page's own address. */
  action?: string;
}) {
  return (
    <>
      <ul id={props.effectsId} className="flex list-disc flex-col gap-1 pl-5">
        {props.effects.map((effect) => (
          <li key={effect}>{effect}</li>
        ))}
      </ul>
      {props.note}
      <form method="post" action={props.action} className="flex flex-wrap items-center gap-4">
        <SignedInFormFields csrfToken={props.csrfToken} />
        <HiddenFields fields={props.fields} />
        <button type="submit" className={dangerButton} aria-describedby={props.effectsId}>
          {props.submit}
        </button>
        <a href={props.cancelHref} className={linkStyle}>
          {props.cancel}
        </a>
      </form>
    </>
  );
}
