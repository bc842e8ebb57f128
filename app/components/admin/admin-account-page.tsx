import type { AdminAccountView } from "../../.server/screens/admin/admin-views";
import { Card } from "../ui/card";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";
import { dangerButton, inputStyle, linkStyle, mutedText, primaryButton } from "../ui/styles";
import { AdminShell, StatusBadge } from "./admin-shell";

type Props = { view: AdminAccountView; errors: Record<string, string>; values: Record<string, string> };

/**
 * /admin/account: one account, what the operator knows of it, and the one action its state allows: take it down (a
 * reason required) or restore it (docs/decisions/0051).
 */
export function AdminAccountPage({ view, errors, values }: Props) {
  const { t } = useT();
  const { account } = view;
  const takenDown = account.status === "takendown";
  return (
    <AdminShell title={t("admin:titles.account", { handle: account.handle })} notice={view.notice} signOutToken={view.csrfToken}>
      <a href="/admin" className={`${linkStyle} self-start`}>
        {t("admin:account.back")}
      </a>
      <Card className="flex flex-col gap-3">
        <h2 className="text-lg font-semibold">{t("admin:account.details")}</h2>
        <dl className="grid grid-cols-1 gap-x-4 gap-y-1 sm:grid-cols-[auto_1fr]">
          <dt className={`text-sm ${mutedText}`}>{t("admin:account.did")}</dt>
          <dd className="font-mono text-sm break-all">{account.did}</dd>
          <dt className={`text-sm ${mutedText}`}>{t("admin:list.email")}</dt>
          <dd className="break-all">
            {account.email} <span className={`text-sm ${mutedText}`}>({account.emailConfirmed ? t("admin:email.confirmed") : t("admin:email.unconfirmed")})</span>
          </dd>
          <dt className={`text-sm ${mutedText}`}>{t("admin:list.status")}</dt>
          <dd>
            <StatusBadge status={account.status} />
          </dd>
          {account.statusSince ? (
            <>
              <dt className={`text-sm ${mutedText}`}>{t("admin:account.since")}</dt>
              <dd>
                <DateTime iso={account.statusSince} />
              </dd>
            </>
          ) : null}
          {account.takedownReason ? (
            <>
              <dt className={`text-sm ${mutedText}`}>{t("admin:account.reason")}</dt>
              <dd className="break-words whitespace-pre-line">{account.takedownReason}</dd>
            </>
          ) : null}
          <dt className={`text-sm ${mutedText}`}>{t("admin:list.created")}</dt>
          <dd>
            <DateTime iso={account.createdAt} />
          </dd>
          <dt className={`text-sm ${mutedText}`}>{t("admin:list.lastSignIn")}</dt>
          <dd>{account.lastSignInAt ? <DateTime iso={account.lastSignInAt} /> : t("admin:never")}</dd>
        </dl>
      </Card>
      <Card className="flex flex-col gap-3">
        <h2 className="text-lg font-semibold">{t("admin:account.invites.title")}</h2>
        {view.invites.length === 0 ? (
          <p className={mutedText}>{t("admin:account.invites.none")}</p>
        ) : (
          <ul className="flex flex-col gap-2">
            {view.invites.map((invite) => (
              <li key={invite.code} className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                <span className="font-mono text-sm break-all">{invite.code}</span>
                <span className={`text-sm ${mutedText}`}>
                  {t("admin:account.invites.used", { used: invite.used, count: invite.uses })}
                  {invite.disabled ? ` · ${t("admin:account.invites.disabled")}` : ""}
                </span>
                <span className={`text-sm ${mutedText}`}>
                  <DateTime iso={invite.createdAt} />
                </span>
              </li>
            ))}
          </ul>
        )}
      </Card>
      <Card className="flex flex-col gap-3">
        <h2 className="text-lg font-semibold">{takenDown ? t("admin:account.untakedownTitle") : t("admin:account.takedownTitle")}</h2>
        <p className="text-slate-700 dark:text-slate-200">{takenDown ? t("admin:account.untakedownIntro") : t("admin:account.takedownIntro")}</p>
        {/* The page's own address (with its did): after a refusal, Remix renders the page again from its loader. */}
        <form method="post" action={`/admin/account?${new URLSearchParams({ did: account.did })}`} className="flex flex-col gap-3" noValidate>
          <input type="hidden" name="csrf_token" value={view.csrfToken} />
          <input type="hidden" name="did" value={account.did} />
          <input type="hidden" name="intent" value={takenDown ? "untakedown" : "takedown"} />
          <div className="flex flex-col gap-1">
            <label htmlFor="reason" className="font-medium">
              {takenDown ? t("admin:account.untakedownReasonLabel") : t("admin:account.reasonLabel")}
            </label>
            <textarea
              id="reason"
              name="reason"
              rows={3}
              maxLength={1000}
              required={!takenDown}
              defaultValue={values.reason ?? ""}
              aria-invalid={errors.reason ? true : undefined}
              aria-describedby={[errors.reason ? "reason-error" : "", takenDown ? "" : "reason-hint"].filter(Boolean).join(" ") || undefined}
              autoFocus={Boolean(errors.reason)}
              className={inputStyle}
            />
            {takenDown ? null : (
              <p id="reason-hint" className={`text-sm ${mutedText}`}>
                {t("admin:account.reasonHint")}
              </p>
            )}
            {errors.reason ? (
              <p id="reason-error" className="text-sm font-medium text-red-700 dark:text-red-300">
                {errors.reason}
              </p>
            ) : null}
          </div>
          {errors.form ? <ErrorMessage>{errors.form}</ErrorMessage> : null}
          <button type="submit" className={`${takenDown ? primaryButton : dangerButton} self-start`}>
            {takenDown ? t("admin:account.untakedownSubmit", { handle: account.handle }) : t("admin:account.takedownSubmit", { handle: account.handle })}
          </button>
        </form>
      </Card>
    </AdminShell>
  );
}
