import type { AppPasswordPageView } from "../../.server/screens/account/views";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { dangerButton, linkStyle, mutedText, smallButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ActivityHistory, PageAddress } from "./activity-history";
import { PostButton } from "./form-account";

const LIST_PATH = "/account/app-passwords";

/**
 * /account/app-passwords/<id> (docs/decisions/0053): on a phone, the app password and its dates first, then what the
 * apps signed in with it did, then its reach (Take back chat access for a privileged one), then the page's address.
 * Every control is a form: nothing needs JavaScript.
 */
export function AppPasswordPage({ view }: { view: AppPasswordPageView }) {
  const { t } = useT();
  return (
    <AccountShell base={view} current={LIST_PATH} title={t("account:titles.appPassword")}>
      <a href={LIST_PATH} className={`${linkStyle} text-sm`}>
        {t("account:appPassword.back")}
      </a>
      <Summary view={view} />
      <ActivityHistory enabled={view.activityEnabled} lines={view.activity} days={view.days} />
      <Chat view={view} />
      <PageAddress address={view.address} hint={t("account:appPassword.addressHint")} />
    </AccountShell>
  );
}

function Summary({ view }: { view: AppPasswordPageView }) {
  const { t } = useT();
  const { appPassword } = view;
  return (
    <section aria-labelledby="app-password-name" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="app-password-name" className="text-lg font-semibold break-words">
        {appPassword.name}
      </h2>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className={mutedText}>{t("account:appPasswords.list.created")}</dt>
        <dd>
          <DateTime iso={appPassword.createdAt} />
        </dd>
        <dt className={mutedText}>{t("account:appPasswords.list.lastUsed")}</dt>
        <dd>{appPassword.lastUsedAt ? <DateTime iso={appPassword.lastUsedAt} /> : t("account:appPasswords.list.notYet")}</dd>
      </dl>
      {/* Revoke keeps its confirmation on the list's page, which says what ends. */}
      <form method="get" action={LIST_PATH}>
        <input type="hidden" name="revoke" value={appPassword.name} />
        <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby="app-password-name">
          {t("account:appPasswords.list.revoke")}
        </button>
      </form>
    </section>
  );
}

/**
 * Its reach, where an app password's maps to a permission: the chat of a privileged one, taken back without revoking
 * it (its apps stay signed in with everything else, from their next call: docs/decisions/0053).
 */
function Chat({ view }: { view: AppPasswordPageView }) {
  const { t } = useT();
  const { privileged } = view.appPassword;
  return (
    <section aria-labelledby="app-password-chat" className="flex flex-col gap-3">
      <h2 id="app-password-chat" className="text-xl font-semibold">
        {t("account:appPassword.chat.title")}
      </h2>
      <p id="app-password-chat-state">{privileged ? t("account:appPasswords.list.privileged") : t("account:appPassword.chat.none")}</p>
      {privileged ? (
        <>
          <p className={`text-sm ${mutedText}`}>{t("account:appPassword.chat.explain")}</p>
          <PostButton
            csrfToken={view.csrfToken}
            fields={{ intent: "drop-privilege" }}
            label={t("account:appPasswords.list.takeBackChat")}
            className={`${dangerButton} ${smallButton} self-start`}
            describedBy="app-password-chat-state"
          />
        </>
      ) : null}
    </section>
  );
}
