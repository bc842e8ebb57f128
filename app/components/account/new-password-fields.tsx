import { Field } from "../ui/field";
import { useT } from "../ui/i18n";

/** A new password, twice: on the password page (a change) and on the recovery link's page (a reset). */
export function NewPasswordFields({
  minLength,
  errors,
  focus,
}: {
  minLength: number;
  errors: Record<string, string>;
  /** The field to focus on arrival (the first one a refused form asks to correct). */
  focus?: string;
}) {
  const { t } = useT();
  return (
    <>
      <Field
        id="new_password"
        name="new_password"
        label={t("account:password.new")}
        type="password"
        autoComplete="new-password"
        required
        minLength={minLength}
        hint={t("account:password.newHint", { count: minLength })}
        error={errors.new_password}
        autoFocus={focus === "new_password"}
      />
      <Field
        id="confirm_password"
        name="confirm_password"
        label={t("account:password.again")}
        type="password"
        autoComplete="new-password"
        required
        error={errors.confirm_password}
        autoFocus={focus === "confirm_password"}
      />
    </>
  );
}
