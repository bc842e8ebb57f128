import { fill } from "../ui/fill";
import { Identifier } from "../ui/identifier";
import { linkStyle } from "../ui/styles";
import { slots, useT } from "../ui/i18n";

/**
 * The account that will grant access (named in a hidden field: Allow acts for exactly this account), and the ways
 * out when it is the wrong one: another account signed in here, or one more (docs/decisions/0020).
 */
export function SignedInAccount({ handle, did, otherAccounts, links }: { handle: string; did: string; otherAccounts: number; links?: { useAnother: string; choose: string } }) {
  const { t } = useT();
  const way = `${linkStyle} inline-flex min-h-11 items-center text-sm`;
  return (
    <div className="flex flex-wrap items-center justify-between gap-x-4 gap-y-1 rounded-lg bg-slate-100 px-3 py-1.5 dark:bg-slate-800">
      <input type="hidden" name="account" value={did} />
      <p>{fill(t("consent:signedInAs", slots("handle")), { handle: <Identifier text={`@${handle}`} className="font-semibold" /> })}</p>
      {/* With `links`, plain links to the same steps: no submit button before the form's own (Enter presses that one). */}
      {links ? (
        <div className="flex flex-wrap gap-x-4">
          {otherAccounts > 0 ? (
            <a href={links.choose} className={way}>
              {t("consent:chooseAnother")}
            </a>
          ) : null}
          <a href={links.useAnother} className={way}>
            {t("consent:notYou")}
          </a>
        </div>
      ) : (
        <div className="flex flex-wrap gap-x-4">
          {otherAccounts > 0 ? (
            <button type="submit" name="decision" value="choose" formNoValidate className={`${linkStyle} min-h-11 text-sm`}>
              {t("consent:chooseAnother")}
            </button>
          ) : null}
          {/* decision=switch_account shows the sign-in form; the accounts signed in here stay signed in. */}
          <button type="submit" name="decision" value="switch_account" formNoValidate className={`${linkStyle} min-h-11 text-sm`}>
            {t("consent:notYou")}
          </button>
        </div>
      )}
    </div>
  );
}

/** The account chooser: one button per account signed in here that may answer, and "Use another account". */
export function AccountChooser({ accounts, useAnother }: { accounts: { handle: string; did: string }[]; useAnother: string }) {
  const { t } = useT();
  return (
    <fieldset className="flex flex-col gap-2">
      <legend className="mb-2 text-lg font-semibold">{t("consent:chooserLegend")}</legend>
      {accounts.map((account) => (
        <button
          key={account.did}
          type="submit"
          name="choose_account"
          value={account.did}
          formNoValidate
          className="flex min-h-11 w-full items-center rounded-xl border border-slate-300 bg-white px-4 py-2 text-left font-semibold text-slate-900 hover:bg-slate-100 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100 dark:hover:bg-slate-800"
        >
          {/* One span: in a flex button, text beside an element loses its edge spaces. */}
          <span>{fill(t("consent:continueAs", slots("handle")), { handle: <Identifier text={`@${account.handle}`} /> })}</span>
        </button>
      ))}
      <a href={useAnother} className={`${linkStyle} mt-1 self-start`}>
        {t("consent:useAnotherAccount")}
      </a>
    </fieldset>
  );
}
