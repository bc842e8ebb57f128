import { linkStyle } from "./styles";

/** What a person can do next, by status. */
function nextStep(status: number): string {
  if (status === 404) return "Check the address, or start again from the start page.";
  if (status === 403) return "Reload the page you came from and try again.";
  if (status === 429) return "Wait a minute, then try again.";
  if (status >= 500) return "This is a problem on the server. Try again in a moment.";
  return "Go back to the app you came from and start again.";
}

export function ErrorPage({ status, title, message }: { status: number; title: string; message: string }) {
  return (
    <main id="main" className="mx-auto flex min-h-screen w-full max-w-xl flex-col justify-center gap-4 p-6">
      <p className="text-sm font-semibold tracking-wide text-slate-600 uppercase dark:text-slate-300">Error {status}</p>
      <h1 className="text-2xl font-semibold sm:text-3xl">{title}</h1>
      <p className="text-lg text-slate-800 dark:text-slate-200">{message}</p>
      <p className="text-slate-700 dark:text-slate-300">{nextStep(status)}</p>
      <nav aria-label="Where to go" className="flex flex-wrap gap-x-6 gap-y-2">
        <a className={linkStyle} href="/">
          Start page
        </a>
        <a className={linkStyle} href="/account">
          Your account
        </a>
      </nav>
    </main>
  );
}
