import { linkStyle } from "../ui/styles";

/** The account that will grant access, and the way out when it is the wrong one. */
export function SignedInAccount({ handle }: { handle: string }) {
  return (
    <div className="flex flex-wrap items-center justify-between gap-x-4 gap-y-2 rounded-lg bg-slate-100 p-3 dark:bg-slate-800">
      <p>
        Signed in as <strong className="font-semibold break-all">@{handle}</strong>
      </p>
      {/* decision=switch_account signs this browser out and shows the screen again. */}
      <button type="submit" name="decision" value="switch_account" formNoValidate className={`${linkStyle} min-h-11 text-sm`}>
        Not you? Use another account
      </button>
    </div>
  );
}
