import { data, redirect, type ActionFunctionArgs, type HeadersFunction, type LoaderFunctionArgs, type MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConsentScreen } from "../components/consent/consent-screen";
import { ErrorPage } from "../components/ui/error-page";
import { clientAddress, cookieNames, csrfFor, isSameOriginPost, isValidCsrf, readCookie, serializeCookie } from "../.server/http/browser";
import { AuthorizationPageError, type PendingAuthorization } from "../.server/oauth/authorize/authorize-manager";
import { consentView } from "../.server/oauth/authorize/consent-view";
import { getServices, type Services } from "../.server/services";

export const meta: MetaFunction = () => [{ title: "Sign in and allow access" }];

export const headers: HeadersFunction = ({ actionHeaders, loaderHeaders }) => {
  const merged = new Headers(loaderHeaders);
  actionHeaders.forEach((value, key) => merged.append(key, value));
  merged.set("Cache-Control", "no-store");
  return merged;
};

type PageError = { kind: "error"; status: number; title: string; message: string };

function pageError(error: unknown): ReturnType<typeof data<PageError>> {
  if (error instanceof AuthorizationPageError) {
    return data({ kind: "error", status: error.status, title: error.title, message: error.message } as PageError, { status: error.status });
  }
  throw error;
}

/** BRIEF §4 rule 6: only request_uris issued by /oauth/par are accepted here. */
function refuseConventionalRequest(url: URL): never {
  const conventional = url.searchParams.has("response_type") || url.searchParams.has("redirect_uri");
  throw new AuthorizationPageError(
    conventional ? "This app sent an unsupported sign-in request" : "This sign-in link is not valid",
    conventional
      ? "This server only accepts authorization requests pushed to it first (PAR, RFC 9126). The app must send its request to /oauth/par and open this page with the request_uri it gets back."
      : "The link is missing its request_uri. Go back to the app and start signing in again.",
  );
}

async function signedInAccount(services: Services, request: Request) {
  const session = await services.sessions.resolve(readCookie(request, cookieNames(services.config).session));
  return session?.account;
}

export async function loader({ request }: LoaderFunctionArgs) {
  const services = getServices();
  const url = new URL(request.url);
  try {
    if (!url.searchParams.get("request_uri")) refuseConventionalRequest(url);
    const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"));
    const account = await signedInAccount(services, request);
    // OIDC Core §3.1.2.1: prompt=none must not show a screen; consent is always an explicit click here.
    if (pending.request.parameters.prompt === "none") {
      const location = account
        ? services.authorize.reject(pending, "consent_required", "The user must approve this request")
        : services.authorize.reject(pending, "login_required", "The user is not signed in");
      return redirect(location, 303);
    }
    const csrf = csrfFor(request, services.config, services.cookieSecret);
    const headers = new Headers();
    if (csrf.setCookie) headers.append("Set-Cookie", csrf.setCookie);
    return data(consentView(pending, account, csrf.token), { headers });
  } catch (error) {
    return pageError(error);
  }
}

type ActionResult = { formError: string; identifier?: string };

export async function action({ request }: ActionFunctionArgs) {
  const services = getServices();
  const { config } = services;
  const form = await request.formData();
  const field = (name: string) => {
    const value = form.get(name);
    return typeof value === "string" ? value : "";
  };
  // DESIGN 4.5: every state-changing form passes an Origin check and carries a CSRF token.
  if (!isSameOriginPost(request, config) || !isValidCsrf(request, config, services.cookieSecret, field("csrf_token"))) {
    return data(
      { kind: "error", status: 403, title: "This form could not be accepted", message: "The page was out of date or did not come from this server. Go back to the app and start again." } as PageError,
      { status: 403 },
    );
  }
  let pending: PendingAuthorization;
  try {
    pending = await services.authorize.load(field("client_id"), field("request_uri"));
  } catch (error) {
    return pageError(error);
  }

  const decision = field("decision");
  try {
    if (decision === "deny") {
      // Denying never needs a password.
      return redirect(services.authorize.reject(pending, "access_denied", "The user denied the request"), 303);
    }
    if (decision === "switch_account") {
      await services.sessions.destroy(readCookie(request, cookieNames(config).session));
      const here = new URL(request.url);
      return redirect(`${here.pathname}${here.search}`, {
        status: 303,
        headers: { "Set-Cookie": serializeCookie(config, cookieNames(config).session, "", 0) },
      });
    }
    if (decision !== "allow") return data({ formError: "Choose Allow or Deny." } satisfies ActionResult, { status: 400 });
    return await allow(services, request, pending, field("identifier"), field("password"));
  } catch (error) {
    return pageError(error);
  }
}

async function allow(services: Services, request: Request, pending: PendingAuthorization, identifier: string, password: string) {
  const { config } = services;
  const headers = new Headers();
  let account = pending.request.parameters.prompt === "login" ? undefined : await signedInAccount(services, request);
  if (password) {
    account = await services.accounts.verifyCredentials(identifier, password);
    // A wrong password never echoes anything back but the identifier the person typed.
    if (!account) return data({ formError: "The handle, email or password is not right.", identifier } satisfies ActionResult, { status: 400 });
    const sessionId = await services.sessions.create(account.did, {
      userAgent: request.headers.get("user-agent") ?? undefined,
      ipAddress: clientAddress(request),
    });
    const maxAge = Math.floor(config.lifetimes.browserSession / 1000);
    headers.append("Set-Cookie", serializeCookie(config, cookieNames(config).session, sessionId, maxAge));
  }
  if (!account) return data({ formError: "Sign in with your password to allow access.", identifier } satisfies ActionResult, { status: 400 });
  headers.set("Location", services.authorize.approve(pending, account.did));
  return new Response(null, { status: 303, headers });
}

export default function Authorize() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>() as ActionResult | PageError | undefined;
  if (actionData && "kind" in actionData) return <ErrorPage status={actionData.status} title={actionData.title} message={actionData.message} />;
  if (view.kind === "error") return <ErrorPage status={view.status} title={view.title} message={view.message} />;
  return <ConsentScreen view={view} formError={actionData?.formError} identifier={actionData?.identifier} />;
}
