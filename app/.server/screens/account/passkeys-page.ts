import { z } from "zod";
import { PASSKEY_NAME_MAX, PasskeyError, registrationResponseSchema } from "../../accounts/passkey-manager.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { currentSession, isTrustedPost } from "../browser-session.ts";
import type { PasskeysView } from "./views.ts";
import { withNotice } from "./notices.ts";
import { type FormErrors, type JsonOutcome, type PageOutcome, formErrors, jsonError, jsonErrorOf, messageOf, redirectTo } from "../outcome.ts";
import { confirmView, confirmWithPassword, reauthenticationRequired } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";

/** GET /account/passkeys; "Confirm it's you" instead of "Add a passkey" without a recent authentication. */
export async function showPasskeys(services: Services, request: Request, t: Translate): Promise<PageOutcome<PasskeysView>> {
  return signedInPage(services, request, t, async (signedIn, base) => {
    const passkeys = await services.passkeys.list(signedIn.account.did);
    return {
      ...base,
      kind: "passkeys",
      nameMaxLength: PASSKEY_NAME_MAX,
      confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, "/account/passkeys"),
      passkeys: passkeys.map((passkey) => ({
        credentialId: passkey.credentialId,
        name: passkey.name,
        createdAt: passkey.createdAt.toISOString(),
        lastUsedAt: passkey.lastUsedAt?.toISOString(),
        backedUp: passkey.backedUp,
      })),
    };
  });
}

/** POST /account/passkeys (forms): rename, delete, or confirm it's you. Adding one needs the browser's WebAuthn, so JavaScript. */
export async function answerPasskeys(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    const { account } = signedIn;
    const credentialId = form("credential_id");
    try {
      switch (form("intent")) {
        case "confirm":
          return await confirmWithPassword(services, request, signedIn, form("password"), "/account/passkeys", t);
        case "rename":
          await services.passkeys.rename(account.did, credentialId, form("name"));
          return redirectTo(withNotice("/account/passkeys", "passkey-renamed"));
        case "delete":
          await services.passkeys.remove(account.did, credentialId);
          return redirectTo(withNotice("/account/passkeys", "passkey-deleted"));
        case "register":
          return formErrors("register", { name: t("errors:form.passkeyNeedsJavaScript") }, { name: form("name") });
      }
    } catch (error) {
      if (error instanceof PasskeyError) return formErrors(`rename:${credentialId}`, { name: messageOf(error, t) }, { name: form("name") });
      throw error;
    }
    return formErrors("register", { form: t("errors:form.noIntent") });
  });
}

/** GET /account/passkey-register: fresh registration options for a recently authenticated account (docs/decisions/0007). */
export async function registrationOptions(services: Services, request: Request, t: Translate): Promise<JsonOutcome> {
  const signedIn = await currentSession(services, request, new URL(request.url).searchParams.get("account") ?? undefined);
  if (!signedIn) return jsonError(401, "login_required", t("errors:json.signInToAddPasskey"));
  if (!signedIn.recentlyAuthenticated) return reauthenticationRequired(t);
  return { status: 200, body: await services.passkeys.registrationOptions(signedIn.account) };
}

const registerInput = z.object({
  csrf_token: z.string().max(256),
  /** The account the page was shown for (docs/decisions/0020); none: the selected one. */
  account: z.string().max(2048).optional(),
  name: z.string().max(1024),
  response: registrationResponseSchema,
});

/** POST /account/passkey-register (JSON {csrf_token, name, response}): stores the new passkey; needs a recent authentication too. */
export async function registerPasskey(services: Services, request: Request, body: unknown, t: Translate): Promise<JsonOutcome> {
  const parsed = registerInput.safeParse(body);
  if (!parsed.success) return jsonError(400, "invalid_request", t("errors:passkey.malformed"));
  if (!isTrustedPost(services, request, parsed.data.csrf_token)) {
    return jsonError(403, "invalid_request", t("errors:json.staleForm"));
  }
  const signedIn = await currentSession(services, request, parsed.data.account);
  if (!signedIn) return jsonError(401, "login_required", t("errors:json.signInToAddPasskey"));
  // Checked again here: options fetched while the authentication was recent do not outlive it.
  if (!signedIn.recentlyAuthenticated) return reauthenticationRequired(t);
  try {
    const passkey = await services.passkeys.register(signedIn.account, parsed.data.name, parsed.data.response as never);
    return { status: 200, body: { ok: true, name: passkey.name, next: withNotice("/account/passkeys", "passkey-added") } };
  } catch (error) {
    return jsonErrorOf(error, t);
  }
}
