/**
 * What an account page's server side decides, framework-free: a view to
 * render (with the headers to send, e.g. a CSRF cookie), a redirect (after a
 * successful form post: post/redirect/get), or an error page. The routes
 * turn these into Remix responses (app/.server/http/route-response.ts).
 */

export type ErrorView = { kind: "error"; status: number; title: string; message: string };

export type PageOutcome<V> =
  | { kind: "view"; view: V; status?: number; headers: Headers }
  | { kind: "redirect"; location: string; headers: Headers }
  | { kind: "error"; error: ErrorView; headers: Headers };

/** Field errors of one form, each tied to its field by name; `form` says which form (a page may have several). */
export type FormErrors = {
  kind: "form-errors";
  form: string;
  /** Field name → message. The key "form" is for errors that belong to no single field. */
  errors: Record<string, string>;
  /** What the person typed (never passwords), to fill the form again. */
  values?: Record<string, string>;
};

export function view<V>(value: V, headers = new Headers(), status?: number): PageOutcome<V> {
  return { kind: "view", view: value, headers, status };
}

export function redirectTo<V>(location: string, headers = new Headers()): PageOutcome<V> {
  return { kind: "redirect", location, headers };
}

export function errorOutcome<V>(status: number, title: string, message: string, headers = new Headers()): PageOutcome<V> {
  return { kind: "error", error: { kind: "error", status, title, message }, headers };
}

export function formErrors<V>(form: string, errors: Record<string, string>, values?: Record<string, string>, status = 400, headers = new Headers()): PageOutcome<V | FormErrors> {
  return { kind: "view", view: { kind: "form-errors", form, errors, values }, status, headers };
}

/** DESIGN 4.5: the answer to a form post that failed the Origin or CSRF check. */
export function forbiddenForm<V>(): PageOutcome<V> {
  return errorOutcome(403, "This form could not be accepted", "The page was out of date or did not come from this server. Reload the page and try again.");
}
