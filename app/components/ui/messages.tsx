import { useActionData } from "@remix-run/react";

/** A form-wide error, announced when it appears. */
export function ErrorMessage({ id, children }: { id?: string; children: React.ReactNode }) {
  return (
    <p id={id} role="alert" className="rounded-lg border border-red-300 bg-red-50 p-3 text-red-900 dark:border-red-800 dark:bg-red-950 dark:text-red-100">
      {children}
    </p>
  );
}

/**
 * A confirmation after a form post (e.g. "Passkey added"). The page that shows it is a new page (post/redirect/get),
 * where a live region present from the start is not announced; with `focus` it takes the focus on arrival instead
 * (autofocus: the browser does it before any script runs), so a screen reader reads it first (issue 28, item 21).
 */
export function Notice({ children, focus = false }: { children: React.ReactNode; focus?: boolean }) {
  return (
    <p
      role="status"
      tabIndex={focus ? -1 : undefined}
      autoFocus={focus}
      // Focused by the page, not reachable with Tab: no focus ring, which would read as a control or an error.
      className="rounded-lg border border-emerald-300 bg-emerald-50 p-3 text-emerald-900 focus-visible:outline-none dark:border-emerald-800 dark:bg-emerald-950 dark:text-emerald-100"
    >
      {children}
    </p>
  );
}

/** A caution that belongs next to what it warns about. */
export function Warning({ children }: { children: React.ReactNode }) {
  return (
    <div className="rounded-lg border border-amber-400 bg-amber-50 p-3 text-amber-950 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-50">{children}</div>
  );
}

/**
 * The notice a redirect after a form post names (post/redirect/get), focused on arrival. Once a form of the page is
 * posted again (its answer is the action's data), the notice is about an earlier step: it goes (`afterPost`
 * "hide"), or stays without taking the focus from the field the new answer asks to correct ("keep").
 */
export function ActionNotice({ children, afterPost = "hide" }: { children: React.ReactNode; afterPost?: "hide" | "keep" }) {
  const posted = useActionData() !== undefined;
  if (posted && afterPost === "hide") return null;
  return <Notice focus={!posted}>{children}</Notice>;
}
