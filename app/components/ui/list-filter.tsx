import { useState } from "react";
import { useT } from "./i18n";
import { inputStyle } from "./styles";

/** From this many entries a list gets a filter (fewer are read at a glance). */
export const FILTER_FROM = 6;

/**
 * A filter over a long list (issue 28, borrowed from the reference's long lists of apps and browsers): the entries
 * whose words hold what is typed, in any case. It needs JavaScript, so it shows only where scripts run
 * (`scripting: enabled`: its place is there before they start, so nothing moves); without them the list is whole.
 */
export function useListFilter<T>(items: readonly T[], wordsOf: (item: T) => string) {
  const [query, setQuery] = useState("");
  const needle = query.trim().toLocaleLowerCase();
  const shown = needle ? items.filter((item) => wordsOf(item).toLocaleLowerCase().includes(needle)) : items;
  return { query, setQuery, shown, offered: items.length >= FILTER_FROM };
}

export function ListFilter({ id, label, filter, total }: { id: string; label: string; filter: ReturnType<typeof useListFilter>; total: number }) {
  const { t } = useT();
  if (!filter.offered) return null;
  const filtering = filter.query.trim() !== "";
  return (
    <div role="search" className="hidden max-w-md flex-col gap-1 [@media(scripting:enabled)]:flex">
      <label htmlFor={id} className="font-medium">
        {label}
      </label>
      <input id={id} type="search" autoComplete="off" value={filter.query} onChange={(event) => filter.setQuery(event.target.value)} aria-describedby={`${id}-count`} className={inputStyle} />
      <p id={`${id}-count`} aria-live="polite" className="text-sm text-slate-600 dark:text-slate-300">
        {filtering ? (filter.shown.length ? t("account:filter.count", { shown: filter.shown.length, total }) : t("account:filter.none", { query: filter.query.trim() })) : null}
      </p>
    </div>
  );
}
