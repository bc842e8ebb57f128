import { dateLocale } from "../../i18n/languages";
import { useT } from "./i18n";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(locale: string): Intl.DateTimeFormat {
  let formatter = formatters.get(locale);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });
    formatters.set(locale, formatter);
  }
  return formatter;
}

/**
 * A date from the server in the screen's language, in UTC on the server and in the browser alike, so hydration
 * agrees. The browser's own ICU may still write a locale's date a little differently from Node's (a space, an
 * abbreviation): the server's text is kept then (suppressHydrationWarning covers this element's text only).
 */
export function DateTime({ iso }: { iso: string }) {
  const { t, language } = useT();
  return (
    <time dateTime={iso} suppressHydrationWarning>
      {t("common:time.utc", { time: formatterFor(dateLocale(language)).format(new Date(iso)) })}
    </time>
  );
}
