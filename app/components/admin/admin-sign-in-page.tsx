import type { AdminSignInView } from "../../.server/screens/admin/admin-views";
import { Card } from "../ui/card";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { ErrorMessage, Warning } from "../ui/messages";
import { primaryButton } from "../ui/styles";
import { AdminShell } from "./admin-shell";

type Props = { view: AdminSignInView; errors: Record<string, string> };

/** /admin for someone not signed in: the admin password, or, when the server has none, how to set one. */
export function AdminSignInPage({ view, errors }: Props) {
  const { t } = useT();
  const formError = errors.form;
  return (
    <AdminShell title={t("admin:titles.signIn")} intro={t("admin:signIn.intro")} notice={view.notice}>
      <Card className="flex w-full max-w-md flex-col gap-4">
        {view.disabled ? (
          <Warning>{t("admin:signIn.disabled")}</Warning>
        ) : (
          <form method="post" action="/admin" className="flex flex-col gap-4" noValidate>
            <input type="hidden" name="csrf_token" value={view.csrfToken} />
            <input type="hidden" name="intent" value="sign_in" />
            <Field
              id="password"
              name="password"
              label={t("admin:signIn.password")}
              type="password"
              autoComplete="current-password"
              required
              autoFocus={Boolean(errors.password)}
              error={errors.password}
              invalid={Boolean(formError)}
              describedBy={formError ? "admin-sign-in-error" : undefined}
            />
            {formError ? <ErrorMessage id="admin-sign-in-error">{formError}</ErrorMessage> : null}
            <button type="submit" className={`${primaryButton} w-full`}>
              {t("admin:signIn.submit")}
            </button>
          </form>
        )}
      </Card>
    </AdminShell>
  );
}
