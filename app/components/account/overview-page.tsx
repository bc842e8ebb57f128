import type { OverviewView } from "../../.server/screens/account/views";
import { useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { AccountShell } from "./account-shell";
import { SignedInFormFields } from "./form-account";
import { Warning } from "../ui/messages";
import { linkStyle, primaryButton } from "../ui/styles";

/** /account for a signed-in person: who they are and where to go. */
export function AccountOverview({ view }: { view: OverviewView }) {
  const { t } = useT();
  const { apps, sessions, passkeys } = view.counts;
  const cards = [
    { href: "/account/apps", title: t("account:nav.apps"), text: apps ? t("account:overview.apps", { count: apps }) : t("account:overview.appsNone") },
    { href: "/account/sessions", title: t("account:nav.sessions"), text: sessions ? t("account:overview.sessions", { count: sessions }) : t("account:overview.sessionsNone") },
    { href: "/account/passkeys", title: t("account:nav.passkeys"), text: passkeys ? t("account:overview.passkeys", { count: passkeys }) : t("account:overview.passkeysNone") },
    { href: "/account/password", title: t("account:nav.password"), text: t("account:overview.password") },
    { href: "/account/identity", title: t("account:titles.identity"), text: t("account:overview.identity") },
    // docs/decisions/0031: a deactivated account's way back is the notice above the cards instead.
    ...(view.deactivated ? [] : [{ href: "/account/deactivate", title: t("account:titles.deactivate"), text: t("account:overview.deactivate") }]),
  ];
  return (
    <AccountShell base={view} current="/account" title={t("account:titles.overview")}>
      {view.deactivated ? (
        <Warning>
          <form method="post" action="/account/deactivate" className="flex flex-col gap-3">
            <SignedInFormFields csrfToken={view.csrfToken} />
            <input type="hidden" name="intent" value="reactivate" />
            <p id="deactivated-notice">{t("account:overview.deactivated")}</p>
            <button type="submit" className={`${primaryButton} self-start`} aria-describedby="deactivated-notice">
              {t("account:deactivate.reactivate")}
            </button>
          </form>
        </Warning>
      ) : null}
      <section aria-labelledby="identity-heading" className="rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        <h2 id="identity-heading" className="sr-only">
          {t("account:overview.whoYouAre")}
        </h2>
        <dl className="grid gap-3 sm:grid-cols-[8rem_1fr]">
          <dt className="font-semibold">{t("account:overview.handle")}</dt>
          <dd className="flex flex-wrap items-baseline gap-x-3">
            <Identifier text={`@${view.account.handle}`} />
            <a href="/account/handle" className={`${linkStyle} text-sm`}>
              {t("account:overview.changeHandle")}
            </a>
          </dd>
          <dt className="font-semibold">{t("account:overview.email")}</dt>
          <dd className="flex flex-wrap items-baseline gap-x-3">
            <Identifier text={view.email} />
            {/* docs/decisions/0052: until the address is confirmed, the way to confirm it. */}
            {view.emailConfirmed ? null : (
              <>
                <span className="text-sm font-medium text-amber-800 dark:text-amber-300">{t("account:overview.emailUnconfirmed")}</span>
                <a href="/account/email#confirm-email" className={`${linkStyle} text-sm`}>
                  {t("account:overview.confirmEmail")}
                </a>
              </>
            )}
          </dd>
          <dt className="font-semibold">{t("account:overview.accountId")}</dt>
          <dd className="font-mono text-sm">
            <Identifier text={view.account.did} />
          </dd>
        </dl>
      </section>
      <ul className="grid gap-3 sm:grid-cols-2">
        {cards.map((card) => (
          <li key={card.href}>
            <a
              href={card.href}
              className="flex h-full flex-col gap-1 rounded-2xl border border-slate-200 bg-white p-5 hover:border-slate-400 hover:bg-slate-50 dark:border-slate-800 dark:bg-slate-900 dark:hover:border-slate-600 dark:hover:bg-slate-800"
            >
              <span className="text-lg font-semibold text-brand-text underline-offset-2 dark:text-brand-text-dark">{card.title}</span>
              <span className="text-slate-700 dark:text-slate-200">{card.text}</span>
            </a>
          </li>
        ))}
      </ul>
      <MovingOut />
    </AccountShell>
  );
}

/** The reference PDS's account-migration guide, which every migration tool follows. */
const MIGRATION_GUIDE = "https://github.com/bluesky-social/pds/blob/main/ACCOUNT_MIGRATION.md";

/**
 * Leaving for another server (docs/decisions/0055): the steps of the reference's documented migration in plain words,
 * as this server takes its part in them (service auth, getRepo and the blobs, the PLC operation signed after an
 * emailed code, deactivation), and the guide.
 */
function MovingOut() {
  const { t } = useT();
  return (
    <section aria-labelledby="moving-heading" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="moving-heading" className="text-lg font-semibold">
        {t("account:overview.moving.heading")}
      </h2>
      <p className="text-slate-700 dark:text-slate-200">{t("account:overview.moving.intro")}</p>
      <ol className="list-decimal space-y-1 ps-6 text-slate-700 dark:text-slate-200">
        <li>{t("account:overview.moving.step1")}</li>
        <li>{t("account:overview.moving.step2")}</li>
        <li>{t("account:overview.moving.step3")}</li>
        <li>{t("account:overview.moving.step4")}</li>
      </ol>
      <p>
        <a href={MIGRATION_GUIDE} className={linkStyle} rel="noreferrer">
          {t("account:overview.moving.guide")}
        </a>
      </p>
    </section>
  );
}
