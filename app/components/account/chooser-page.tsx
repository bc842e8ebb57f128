import type { ChooserView } from "../../.server/screens/account/views";
import { BrandFooter, BrandHeader } from "../ui/brand";
import { Card } from "../ui/card";
import { fill } from "../ui/fill";
import { Identifier } from "../ui/identifier";
import { slots, useT } from "../ui/i18n";
import { Notice } from "../ui/messages";
import { linkStyle, secondaryButton } from "../ui/styles";

/** /account with several accounts signed in on this device and none chosen (or ?choose=1): which one to manage. */
export function AccountChooser({ view }: { view: ChooserView }) {
  const { t } = useT();
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-md flex-col gap-4 px-3 py-6 sm:justify-center sm:px-6">
      <BrandHeader className="px-2" />
      <main id="main">
        <Card className="flex flex-col gap-5">
          <div className="flex flex-col gap-1">
            <h1 className="text-2xl font-semibold">{t("account:chooser.title")}</h1>
            <p className="text-slate-700 dark:text-slate-200">{t("account:chooser.intro")}</p>
          </div>
          {view.notice ? <Notice>{view.notice}</Notice> : null}
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
        </Card>
      </main>
      <BrandFooter />
    </div>
  );
}
