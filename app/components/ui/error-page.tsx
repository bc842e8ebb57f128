import { BrandFooter, BrandHeader } from "./brand";
import { useT } from "./i18n";
import { linkStyle, secondaryButton, summaryStyle } from "./styles";
import { nextStepKey, saysWhatToDo } from "./text";

/**
 * An error page: the brand, the status, the title, the message and, when the message does not already say what
 * to do, one next step (never the same advice twice), and the ways back. Title and message arrive in the screen's
 * language (the server translated them: screens/outcome.ts). `action`: a link onwards that the server chose (a way back
 * to an app that a person follows only by clicking it, docs/decisions/0022).
 */
export function ErrorPage({ status, title, message, action, detail }: { status: number; title: string; message: string; action?: { href: string; label: string }; detail?: string }) {
  const { t } = useT();
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-xl flex-col gap-8 p-6">
      <BrandHeader />
      <main id="main" className="flex flex-1 flex-col justify-center gap-4">
        <p className="text-sm font-semibold tracking-wide text-slate-600 uppercase dark:text-slate-300">{t("common:errorPage.eyebrow", { status })}</p>
        <h1 className="text-2xl font-semibold sm:text-3xl">{title}</h1>
        <p className="text-lg text-slate-800 dark:text-slate-200">{message}</p>
        {saysWhatToDo(message, t("common:errorPage.instructionOpeners")) ? null : <p className="text-slate-700 dark:text-slate-300">{t(nextStepKey(status))}</p>}
        {action ? (
          <p>
            <a className={secondaryButton} href={action.href} rel="noreferrer">
              {action.label}
            </a>
          </p>
        ) : null}
        {/* What only the app's developers need (protocol words), folded: people read the plain words above. */}
        {detail ? (
          <details className="text-sm text-slate-700 dark:text-slate-300">
            <summary className={summaryStyle}>{t("common:errorPage.forDevelopers")}</summary>
            <p className="mt-2 wrap-break-word">{detail}</p>
          </details>
        ) : null}
        <nav aria-label={t("common:errorPage.whereToGo")} className="flex flex-wrap gap-x-6 gap-y-2">
          <a className={linkStyle} href="/">
            {t("common:errorPage.startPage")}
          </a>
          <a className={linkStyle} href="/account">
            {t("common:errorPage.yourAccount")}
          </a>
        </nav>
      </main>
      <BrandFooter />
    </div>
  );
}
