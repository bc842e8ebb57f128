import type { SignUpView } from "../../.server/screens/sign-up/sign-up-page";
import { SignedOutPage } from "../account/signed-out-page";
import { VerifiedName } from "../consent/client-identity";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { SignUpForm } from "./sign-up-form";

/**
 * The sign-up page (docs/decisions/0052): in the account area, "Create an account" with what an account here is; in the
 * OAuth flow, the app that asked named as the consent screen names it (what was verified: its host), and what comes
 * next (its consent screen).
 */
export function SignUpScreen({ view, notice }: { view: SignUpView; notice?: string }) {
  const { t } = useT();
  const { client } = view;
  const title = client ? fill(t("consent:heading.sign-up", slots("who")), { who: <VerifiedName client={client} /> }) : t("account:titles.signUp");
  const intro = client ? fill(t("consent:afterSignUp", slots("who")), { who: <VerifiedName client={client} /> }) : t("account:signUp.intro", { service: view.serviceName });
  return (
    <SignedOutPage title={title} intro={intro} notice={notice}>
      <SignUpForm view={view} />
    </SignedOutPage>
  );
}
