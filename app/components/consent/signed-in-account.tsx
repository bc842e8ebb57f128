import { fill } from "../ui/fill";
import { Identifier } from "../ui/identifier";
import { linkStyle } from "../ui/styles";
import { slots, useT } from "../ui/i18n";

/** The account that will grant access, and the way out when it is the wrong one. */
export function SignedInAccount({ handle }: { handle: string }) {
  const { t } = useT();
  return (
    <div className="flex flex-wrap items-center justify-between gap-x-4 gap-y-1 rounded-lg bg-slate-100 px-3 py-1.5 dark:bg-slate-800">
      <p>{fill(t("consent:signedInAs", slots("handle")), { handle: <Identifier text={`@${handle}`} className="font-semibold" /> })}</p>
      {/* decision=switch_account signs this browser out and shows the screen again. */}
      <button type="submit" name="decision" value="switch_account" formNoValidate className={`${linkStyle} min-h-11 text-sm`}>
        {t("consent:notYou")}
      </button>
    </div>
  );
}
