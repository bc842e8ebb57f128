import { pageTitle } from "../ui/brand";
import { accountText } from "./text";

/**
 * An account page's tab title: the page's own, the sign-in form's (a visitor at /account), or the error's when
 * the page shows one, then the service's name.
 */
export function accountPageTitle(data: unknown, matches: readonly { id: string; data?: unknown }[], page: keyof typeof accountText.titles): { title: string }[] {
  const view = data as { kind?: string; title?: string } | undefined;
  if (view?.kind === "error" && view.title) return pageTitle(matches, view.title);
  if (view?.kind === "sign-in") return pageTitle(matches, accountText.titles.signIn);
  if (view?.kind === "chooser") return pageTitle(matches, accountText.chooser.title);
  return pageTitle(matches, accountText.titles[page]);
}
