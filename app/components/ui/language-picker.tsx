import { useLocation } from "@remix-run/react";
import { languageHref } from "../../i18n/language-href";
import { LANGUAGES, LANGUAGE_NAMES } from "../../i18n/languages";
import { useT } from "./i18n";

/**
 * The language picker (docs/decisions/0019): plain links to this same page with `lng=<language>`, so it works
 * without JavaScript; the server then speaks that language on this page, even over the app's ui_locales, and
 * remembers it in a cookie for the next pages. Each name is written in its own language, and marked as such.
 * The links hold only the query (`?…&lng=fr`), never the path, so they cannot leave this origin (`languageHref`).
 */
export function LanguagePicker() {
  const { t, language } = useT();
  const location = useLocation();
  return (
    <nav aria-label={t("common:language.label")}>
      <ul className="flex flex-wrap justify-center gap-x-4 gap-y-1 text-sm">
        {LANGUAGES.map((lng) => (
          <li key={lng}>
            <a
              href={languageHref(location.search, lng)}
              lang={lng}
              hrefLang={lng}
              aria-current={lng === language ? "true" : undefined}
              className={
                lng === language
                  ? "font-semibold text-slate-900 no-underline dark:text-slate-50"
                  : "text-slate-700 underline underline-offset-2 hover:decoration-2 dark:text-slate-200"
              }
            >
              {LANGUAGE_NAMES[lng]}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}
