import { BrandMark, useBrand } from "./brand";

type Props = {
  /** The area's home (its brand link). */
  home: string;
  /** The area's name beside the service's ("Account", "Operator"). */
  area: string;
  /** The skip link's words, to the page's `#main`. */
  skipLabel: string;
  /** The header row's width (the area's own: max-w-5xl, max-w-6xl…) and anything else it needs. */
  rowClassName: string;
  /** What stands at the row's end: the account menu, the sign-out button. */
  children?: React.ReactNode;
};

/**
 * The skip link and the header of a signed-in area (the account pages, the operator page): the brand and the area's
 * name linking home, then the area's own controls. No JavaScript needed.
 */
export function AreaHeader({ home, area, skipLabel, rowClassName, children }: Props) {
  const brand = useBrand();
  return (
    <>
      <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:z-10 focus:rounded focus:bg-white focus:p-2 dark:focus:bg-slate-900">
        {skipLabel}
      </a>
      <header className="border-b border-slate-200 bg-white dark:border-slate-800 dark:bg-slate-900">
        <div className={`mx-auto flex w-full flex-wrap items-center justify-between gap-3 px-4 py-3 ${rowClassName}`}>
          <a href={home} className="flex min-w-0 items-center gap-2.5 text-lg font-semibold">
            <BrandMark brand={brand} size="sm" />
            <span className="min-w-0 truncate">
              {brand.serviceName} <span className="font-normal text-slate-600 dark:text-slate-300">{area}</span>
            </span>
          </a>
          {children}
        </div>
      </header>
    </>
  );
}
