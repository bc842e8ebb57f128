import { useT } from "../ui/i18n";

/**
 * "Stay signed in on this device", off by default (docs/decisions/0020): ticked, the session keeps the long
 * lifetime and a persistent cookie; left off, it ends with the browser session. The passkey sign-in reads it by id.
 */
export function StaySignedIn({ id = "stay_signed_in" }: { id?: string }) {
  const { t } = useT();
  return (
    <div className="flex items-start gap-3">
      <input id={id} name="stay_signed_in" type="checkbox" className="mt-1 size-5 shrink-0 accent-brand" aria-describedby={`${id}-hint`} />
      <div className="flex flex-col gap-0.5">
        <label htmlFor={id} className="font-medium">
          {t("account:staySignedIn.label")}
        </label>
        <p id={`${id}-hint`} className="text-sm text-slate-600 dark:text-slate-300">
          {t("account:staySignedIn.hint")}
        </p>
      </div>
    </div>
  );
}
