import { useState } from "react";
import { passwordStrength, STRENGTH_LEVELS, type PasswordStrength } from "../../lib/password-strength";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";

/**
 * A new password, twice: on the password page (a change) and on the recovery link's page (a reset). With JavaScript,
 * how hard the password looks to guess shows under it as it is typed (app/lib/password-strength.ts; issue 28,
 * borrowed from the reference); without it the hint says the one rule the server applies, the minimum length.
 */
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
  const [typed, setTyped] = useState("");
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
        onChange={(event) => setTyped(event.target.value)}
        below={<StrengthMeter strength={typed ? passwordStrength(typed, minLength) : undefined} />}
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

const FILLED: Record<PasswordStrength, string> = {
  "too-short": "bg-red-600 dark:bg-red-400",
  weak: "bg-red-600 dark:bg-red-400",
  fair: "bg-amber-500 dark:bg-amber-400",
  strong: "bg-emerald-600 dark:bg-emerald-400",
  "very-strong": "bg-emerald-600 dark:bg-emerald-400",
};

/**
 * Four segments and the level in words. The words carry it, announced politely as they change (the region is on the
 * page from the start, empty, so that its first words are announced too); the segments only repeat them for the eye.
 */
function StrengthMeter({ strength }: { strength?: PasswordStrength }) {
  const { t } = useT();
  const filled = strength ? Math.max(1, STRENGTH_LEVELS.indexOf(strength)) : 0;
  return (
    <div className="flex items-center gap-3">
      {strength ? (
        <div aria-hidden="true" className="flex h-1.5 w-24 shrink-0 gap-1">
          {[1, 2, 3, 4].map((segment) => (
            <span key={segment} className={`h-full flex-1 rounded-full ${segment <= filled ? FILLED[strength] : "bg-slate-200 dark:bg-slate-700"}`} />
          ))}
        </div>
      ) : null}
      <p id="new_password-strength" aria-live="polite" className="text-sm text-slate-700 dark:text-slate-200">
        {strength ? t(`account:password.strength.${strength}`) : null}
      </p>
    </div>
  );
}
