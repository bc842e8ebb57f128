import { pageTitle } from "../ui/brand";
import { metaT } from "../ui/i18n";

/**
 * An account page's tab title: the page's own, the sign-in form's (a visitor at /account), or the error's when
 * the page shows one, then the service's name.
 */
export function accountPageTitle(
  data: unknown,
  matches: readonly { id: string; data?: unknown }[],
  page: "overview" | "apps" | "app" | "appPassword" | "appPasswords" | "sessions" | "passkeys" | "password" | "email" | "delete" | "deactivate" | "handle" | "identity",
): { title: string }[] {
  const view = data as { kind?: string; title?: string } | undefined;
  const t = metaT(matches);
  if (view?.kind === "error" && view.title) return pageTitle(matches, view.title);
  if (view?.kind === "sign-in") return pageTitle(matches, t("account:titles.signIn"));
  if (view?.kind === "chooser") return pageTitle(matches, t("account:chooser.title"));
  return pageTitle(matches, t(`account:titles.${page}`));
}
