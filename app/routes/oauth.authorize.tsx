import { data, type ActionFunctionArgs, type HeadersFunction, type LoaderFunctionArgs, type MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConsentScreen } from "../components/consent/consent-screen";
import { ErrorPage } from "../components/ui/error-page";
import { isSameOriginPost, isValidCsrf } from "../.server/http/browser";
import { AuthorizationPageError } from "../.server/oauth/authorize/authorize-manager";
import { answerConsentForm, showConsentPage, type PageOutcome } from "../.server/oauth/authorize/authorize-page";

export const meta: MetaFunction = () => [{ title: "Sign in and allow access" }];

export const headers: HeadersFunction = ({ actionHeaders, loaderHeaders }) => {
  const merged = new Headers(loaderHeaders);
  actionHeaders.forEach((value, key) => merged.append(key, value));
  merged.set("Cache-Control", "no-store");
  return merged;
};

type PageError = { kind: "error"; status: number; title: string; message: string };
type FormError = { kind: "form-error"; formError: string; identifier?: string };

function errorPage(status: number, title: string, message: string) {
  return data({ kind: "error", status, title, message } as PageError, { status });
}

/** Turns a page outcome into a response: views render, redirects are 303 (RFC 9110 §15.4.4). */
function respond(outcome: PageOutcome) {
  if (outcome.kind === "redirect") {
    outcome.headers.set("Location", outcome.location);
    return new Response(null, { status: 303, headers: outcome.headers });
  }
  if (outcome.kind === "form-error") {
    return data({ kind: "form-error", formError: outcome.formError, identifier: outcome.identifier } as FormError, {
      status: outcome.status,
      headers: outcome.headers,
    });
  }
  return data(outcome.view, { headers: outcome.headers });
}

async function guarded(run: () => Promise<PageOutcome>) {
  try {
    return respond(await run());
  } catch (error) {
    if (error instanceof AuthorizationPageError) return errorPage(error.status, error.title, error.message);
    throw error;
  }
}

export async function loader({ request, context }: LoaderFunctionArgs) {
  return guarded(() => showConsentPage(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  const services = context.services;
  let form: FormData;
  try {
    form = await request.formData();
  } catch {
    // Not a form post (JSON, text, a broken multipart body): nothing the screen ever sends.
    return errorPage(400, "This form could not be accepted", "The request was not a form submission from this page. Go back to the app and start again.");
  }
  const field = (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value : "";
  };
  // DESIGN 4.5: every state-changing form passes an Origin check and carries a CSRF token.
  if (!isSameOriginPost(request, services.config) || !isValidCsrf(request, services.config, services.cookieSecret, field("csrf_token"))) {
    return errorPage(403, "This form could not be accepted", "The page was out of date or did not come from this server. Go back to the app and start again.");
  }
  return guarded(async () => {
    const pending = await services.authorize.load(field("client_id"), field("request_uri"));
    return answerConsentForm(services, request, pending, field);
  });
}

export default function Authorize() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>() as FormError | PageError | undefined;
  if (actionData?.kind === "error") return <ErrorPage status={actionData.status} title={actionData.title} message={actionData.message} />;
  if (view.kind === "error") return <ErrorPage status={view.status} title={view.title} message={view.message} />;
  if (view.kind !== "consent") return null;
  const formError = actionData?.kind === "form-error" ? actionData : undefined;
  return <ConsentScreen view={view} formError={formError?.formError} identifier={formError?.identifier} />;
}
