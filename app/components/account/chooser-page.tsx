import type { ChooserView } from "../../.server/screens/account/views";
import { fill } from "../ui/fill";
import { Identifier } from "../ui/identifier";
import { slots, useT } from "../ui/i18n";
import { SignedOutPage } from "./signed-out-page";
import { linkStyle, secondaryButton } from "../ui/styles";

/** /account with several accounts signed in on this device and none chosen (or ?choose=1): which one to manage. */
export function AccountChooser({ view }: { view: ChooserView }) {
  const { t } = useT();
  return (
    <SignedOutPage title={t("account:chooser.title")} intro={t("account:chooser.intro")} notice={view.notice}>
      <ul className="flex flex-col gap-2">
        {view.accounts.map((account) => (
          <li key={account.did}>
            <form method="post" action="/account">
              <input type="hidden" name="csrf_token" value={view.csrfToken} />
              <input type="hidden" name="intent" value="choose" />
              <input type="hidden" name="account" value={account.did} />
              <input type="hidden" name="next" value={view.next} />
              <button type="submit" className={`${secondaryButton} w-full flex-col items-start text-left`}>
                <span>{fill(t("account:chooser.continueAs", slots("handle")), { handle: <Identifier text={`@${account.handle}`} /> })}</span>
                <span className="text-sm font-normal text-slate-600 dark:text-slate-300">
                  {account.staySignedIn ? t("account:chooser.staysSignedIn") : t("account:chooser.endsWithBrowser")}
                </span>
              </button>
            </form>
          </li>
        ))}
      </ul>
      <a href="/account?add=1" className={linkStyle}>
        {t("account:chooser.useAnother")}
      </a>
      <form method="post" action="/account/sign-out">
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        <input type="hidden" name="all" value="1" />
        <button type="submit" className={`${linkStyle} min-h-11 text-sm`}>
          {t("account:chooser.signOutAll")}
        </button>
      </form>
    </SignedOutPage>
  );
}
