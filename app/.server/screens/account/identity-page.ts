import { IdentityError } from "../../identity/identity-error.ts";
import { MAX_ROTATION_KEYS } from "../../identity/rotation-keys.ts";
import { languageOf, type Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { withNotice } from "./notices.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { IdentityKeysView } from "./views.ts";

const PATH = "/account/identity";

/**
 * /account/identity, "Keep a key of your own" (docs/decisions/0050): what the account's DID document says now (read
 * from the PLC directory), and a did:key of the person's own placed above this server's rotation key, so that they
 * can move their identity without this server. Adding or removing a key needs a recent authentication
 * (docs/decisions/0007): a key in the rotation keys outlives any password change. The key pair is made in the browser
 * by the page's script, or elsewhere by the person, who pastes its did:key (no JavaScript needed): the private key
 * never reaches this server.
 */
export async function showIdentityPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<IdentityKeysView>> {
  return signedInPage(services, request, t, async (signedIn, base) => ({
    ...base,
    kind: "identity",
    state: await stateOf(services, signedIn.account.did),
    directoryUrl: services.config.plc.directoryUrl,
    maxRotationKeys: MAX_ROTATION_KEYS,
    confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, PATH),
  }));
}

/** POST /account/identity: intent=add (didKey), intent=remove (didKey) or intent=confirm ("Confirm it's you"). */
export async function answerIdentityPage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "add":
        return changeKeys(signedIn, "add", form("didKey"), t, async () => {
          const { did, handle, email } = signedIn.account;
          await services.ownKeys.add(did, form("didKey"), { handle, email, language: languageOf(t) });
          return redirectTo(withNotice(PATH, "own-key-added"));
        });
      case "remove":
        return changeKeys(signedIn, "remove", form("didKey"), t, async () => {
          await services.ownKeys.remove(signedIn.account.did, form("didKey"));
          return redirectTo(withNotice(PATH, "own-key-removed"));
        });
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), PATH, t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

/**
 * Runs one change of the rotation keys once the browser proved itself recently: a refused key is said beside its
 * field; the directory's refusal (the DID moved or ended meanwhile, or another change came first) beside the form.
 */
async function changeKeys(signedIn: SignedIn, form: "add" | "remove", typed: string, t: Translate, change: () => Promise<PageOutcome<FormErrors>>): Promise<PageOutcome<FormErrors>> {
  const values = { didKey: typed.slice(0, 200) };
  if (!signedIn.recentlyAuthenticated) return formErrors(form, { form: t("errors:form.confirmFirst") }, values, 403);
  if (form === "add" && !typed.trim()) return formErrors(form, { didKey: t("errors:ownKey.enter") }, values);
  try {
    return await change();
  } catch (error) {
    // The directory did not answer: nothing changed, and the same form works again.
    if (error instanceof IdentityError && error.status >= 500) return formErrors(form, { form: t("errors:identity.unreachable") }, values, 502);
    if (error instanceof IdentityError) return formErrorOf(error, t, form, "form", values);
    return formErrorOf(error, t, form, "didKey", values, ["didKey"]);
  }
}

/** The directory's record, or undefined when it does not answer or never saw the DID (the page says so). */
async function stateOf(services: Services, did: string): Promise<IdentityKeysView["state"]> {
  const state = await services.ownKeys.state(did).catch((error: unknown) => {
    if (error instanceof IdentityError) return undefined;
    throw error;
  });
  if (!state) return undefined;
  const signingKey = await services.accounts.signingKeypair(did);
  return {
    control: state.control,
    handles: state.handles,
    pdsEndpoint: state.pdsEndpoint,
    signingKeyHere: signingKey !== undefined && signingKey.did() === state.signingKey,
    rotationKeys: state.rotationKeys,
  };
}
