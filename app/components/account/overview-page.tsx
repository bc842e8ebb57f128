import type { OverviewView } from "../../.server/screens/account/views";
import { AccountShell } from "./account-shell";

/** /account for a signed-in person: who they are and where to go. */
export function AccountOverview({ view }: { view: OverviewView }) {
  const cards = [
    { href: "/account/apps", title: "Connected apps", text: count(view.counts.apps, "app has", "apps have", "No app has") + " access to your account." },
    { href: "/account/sessions", title: "Signed-in browsers", text: count(view.counts.sessions, "browser is", "browsers are", "No browser is") + " signed in." },
    { href: "/account/passkeys", title: "Passkeys", text: view.counts.passkeys ? count(view.counts.passkeys, "passkey", "passkeys", "") + " to sign in without a password." : "Sign in without a password: add a passkey." },
    { href: "/account/password", title: "Password", text: "Change your password." },
  ];
  return (
    <AccountShell base={view} current="/account" title="Your account">
      <section aria-labelledby="identity-heading" className="rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        <h2 id="identity-heading" className="sr-only">
          Who you are
        </h2>
        <dl className="grid gap-3 sm:grid-cols-[8rem_1fr]">
          <dt className="font-semibold">Handle</dt>
          <dd className="break-all">@{view.account.handle}</dd>
          <dt className="font-semibold">Email</dt>
          <dd className="break-all">{view.email}</dd>
          <dt className="font-semibold">Account ID</dt>
          <dd className="font-mono text-sm break-all">{view.account.did}</dd>
        </dl>
      </section>
      <ul className="grid gap-3 sm:grid-cols-2">
        {cards.map((card) => (
          <li key={card.href}>
            <a
              href={card.href}
              className="flex h-full flex-col gap-1 rounded-2xl border border-slate-200 bg-white p-5 hover:border-slate-400 hover:bg-slate-50 dark:border-slate-800 dark:bg-slate-900 dark:hover:border-slate-600 dark:hover:bg-slate-800"
            >
              <span className="text-lg font-semibold text-brand-text underline-offset-2 dark:text-brand-text-dark">{card.title}</span>
              <span className="text-slate-700 dark:text-slate-200">{card.text}</span>
            </a>
          </li>
        ))}
      </ul>
    </AccountShell>
  );
}

function count(n: number, one: string, many: string, none: string): string {
  if (n === 0) return none;
  return n === 1 ? `1 ${one}` : `${n} ${many}`;
}
