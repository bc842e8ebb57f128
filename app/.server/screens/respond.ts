import { data } from "@remix-run/node";
import { AtriumError } from "../errors/atrium-error.ts";
import type { Translate } from "../i18n/translate.ts";
import { errorPageOf, type JsonOutcome, type PageOutcome } from "./outcome.ts";
import { firstWithControlCharacter, hasTypedControlCharacter, jsonHasControlCharacter } from "../util/control-characters.ts";

/**
 * The one adapter between the screens' controllers and Remix, shared by every
 * screen route: a page outcome becomes Remix data (views and error pages,
 * with their status and headers) or a thrown 303 redirect (RFC 9110
 * §15.4.4: after a form post, the browser follows with a GET); a JSON
 * outcome becomes a JSON response. An error of the model a controller throws
 * becomes an error page (screens/outcome.ts, `errorPageOf`), in the screen's language (`t`).
 */
export async function respond<V>(controller: PageOutcome<V> | Promise<PageOutcome<V>>, t: Translate) {
  let outcome: PageOutcome<V>;
  try {
    outcome = await controller;
  } catch (error) {
    // Only errors of the model are explained here; anything unexpected goes on to Remix, whose error handler logs it
    // (app/entry.server.tsx) and whose error boundary shows the generic page.
    if (!(error instanceof AtriumError)) throw error;
    outcome = errorPageOf(error, t);
  }
  if (outcome.kind === "redirect") {
    outcome.headers.set("Location", outcome.location);
    throw new Response(null, { status: 303, headers: outcome.headers });
  }
  outcome.headers.set("Cache-Control", "no-store");
  if (outcome.kind === "error") return data(outcome.error, { status: outcome.error.status, headers: outcome.headers });
  return data(outcome.view, { status: outcome.status ?? 200, headers: outcome.headers });
}

/** A JSON answer of the screens' small endpoints (passkeys): never cached. */
export async function respondJson(controller: JsonOutcome | Promise<JsonOutcome>): Promise<Response> {
  const outcome = await controller;
  const headers = new Headers({ "Cache-Control": "no-store" });
  for (const [name, value] of Object.entries(outcome.headers ?? {})) {
    for (const one of typeof value === "string" ? [value] : value) headers.append(name, one);
  }
  return Response.json(outcome.body, { status: outcome.status, headers });
}

/**
 * Reads a posted form as strings (files and missing fields become ""); a body that is not a form reads as empty. A form
 * with a control character in any field that nobody types (TAB, LF and CR aside, which the fields' own rules trim or
 * refuse) is refused whole, before anything looks it up (util/control-characters.ts): reading any of its fields throws
 * a 400 that the controller's page outcome shows as a page in the screen's language.
 */
export async function formFields(request: Request): Promise<(name: string) => string> {
  // The CSRF check then refuses it.
  const form = await request.formData().catch(() => new FormData());
  const strings = [...form].filter((entry): entry is [string, string] => typeof entry[1] === "string");
  if (firstWithControlCharacter(strings, hasTypedControlCharacter) !== undefined) {
    return () => {
      throw new AtriumError("form_control_characters", "The form holds control characters", {
        status: 400,
        titleKey: "errors:page.titles.400",
        messageKey: "errors:page.controlCharacters",
      });
    };
  }
  return (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value : "";
  };
}

/**
 * Reads a JSON request body; undefined when it is not JSON, or when one of its strings holds a control character (the
 * screens' JSON is the passkey ceremonies' base64url and identifiers, which have none), which the callers then refuse
 * as malformed.
 */
export async function readJson(request: Request): Promise<unknown> {
  if (!(request.headers.get("content-type") ?? "").startsWith("application/json")) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(await request.text());
  } catch {
    return undefined;
  }
  return jsonHasControlCharacter(body) ? undefined : body;
}

/**
 * Route `headers` export for the screens: the loader's and the action's
 * headers (Set-Cookie, Retry-After) reach the document, which is never cached.
 */
export function screenHeaders({ actionHeaders, loaderHeaders, errorHeaders }: { actionHeaders: Headers; loaderHeaders: Headers; errorHeaders?: Headers }): Headers {
  const merged = new Headers(loaderHeaders);
  actionHeaders.forEach((value, key) => merged.append(key, value));
  errorHeaders?.forEach((value, key) => merged.append(key, value));
  merged.set("Cache-Control", "no-store");
  return merged;
}
