/** Shared class lists: one look for every button, field and link. */

const buttonBase =
  "inline-flex min-h-11 items-center justify-center gap-2 rounded-xl px-4 py-2 text-base font-semibold transition-colors disabled:cursor-not-allowed disabled:opacity-60";

/** The operator's primary colour (docs/decisions/0018): its text colour and edges are derived to stay readable. */
export const primaryButton = `${buttonBase} border border-brand-edge bg-brand text-on-brand hover:bg-brand-hover dark:border-brand-edge-dark`;

export const secondaryButton = `${buttonBase} border border-slate-300 bg-white text-slate-900 hover:bg-slate-100 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100 dark:hover:bg-slate-800`;

export const dangerButton = `${buttonBase} border border-red-300 bg-white text-red-800 hover:bg-red-50 dark:border-red-800 dark:bg-slate-900 dark:text-red-300 dark:hover:bg-red-950`;

export const smallButton = "min-h-9 px-3 py-1 text-sm";

export const linkStyle = "font-medium text-brand-text underline underline-offset-2 hover:decoration-2 dark:text-brand-text-dark";

/** A <summary> that opens more: in the link colour. */
export const summaryStyle = "cursor-pointer font-medium text-brand-text dark:text-brand-text-dark";

export const inputStyle =
  "w-full rounded-lg border border-slate-400 bg-white px-3 py-2 text-base text-slate-900 read-only:bg-slate-100 aria-invalid:border-red-600 dark:border-slate-500 dark:bg-slate-950 dark:text-slate-100 dark:read-only:bg-slate-800 dark:aria-invalid:border-red-400";

export const mutedText = "text-slate-600 dark:text-slate-300";
