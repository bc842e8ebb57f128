import type { LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useLoaderData } from "@remix-run/react";
import { linkStyle, primaryButton } from "../components/ui/styles";

export const meta: MetaFunction = () => [
  { title: "Atrium: sign-in for this AT Protocol server" },
  { name: "description", content: "The sign-in and permissions service of an AT Protocol personal data server." },
];

export function loader({ context }: LoaderFunctionArgs) {
  const { issuer } = context.services.config;
  return { issuer, host: new URL(issuer).host };
}

export default function Index() {
  const { issuer, host } = useLoaderData<typeof loader>();
  return (
    <main id="main" className="mx-auto flex min-h-screen w-full max-w-3xl flex-col justify-center gap-8 px-5 py-10 sm:px-8">
      <div className="flex flex-col gap-4">
        <p className="text-sm font-semibold tracking-wide text-blue-800 uppercase dark:text-blue-300">{host}</p>
        <h1 className="text-3xl font-semibold sm:text-4xl">Atrium</h1>
        <p className="text-lg text-slate-800 sm:text-xl dark:text-slate-100">
          This is the sign-in service of an AT Protocol personal data server: the place where your account and your posts live.
        </p>
        <p className="text-slate-700 dark:text-slate-200">
          Apps on the atproto network (Bluesky clients and others) send you here to sign in and to decide what they may do with your account. You see
          who is asking and what for, and you can take access back at any time.
        </p>
        <p>
          <a href="/account" className={primaryButton}>
            Manage your account
          </a>
        </p>
      </div>
      <section aria-labelledby="account-links" className="grid gap-3 sm:grid-cols-3">
        <h2 id="account-links" className="sr-only">
          In your account
        </h2>
        {[
          { href: "/account/apps", title: "Connected apps", text: "See which apps have access and revoke it." },
          { href: "/account/sessions", title: "Signed-in browsers", text: "Sign out browsers you no longer use." },
          { href: "/account/passkeys", title: "Passkeys", text: "Sign in without typing a password." },
        ].map((item) => (
          <a
            key={item.href}
            href={item.href}
            className="flex flex-col gap-1 rounded-2xl border border-slate-200 bg-white p-4 hover:border-blue-400 dark:border-slate-800 dark:bg-slate-900 dark:hover:border-blue-700"
          >
            <span className="font-semibold text-blue-800 dark:text-blue-200">{item.title}</span>
            <span className="text-sm text-slate-700 dark:text-slate-200">{item.text}</span>
          </a>
        ))}
      </section>
      <section aria-labelledby="developers" className="flex flex-col gap-2 border-t border-slate-200 pt-6 text-sm dark:border-slate-800">
        <h2 id="developers" className="font-semibold">
          For developers
        </h2>
        <p className="text-slate-700 dark:text-slate-200">
          OAuth 2.1 with PAR, PKCE and DPoP, as the atproto OAuth profile describes. Metadata:{" "}
          <a className={`${linkStyle} break-all`} href="/.well-known/oauth-authorization-server">
            {issuer}/.well-known/oauth-authorization-server
          </a>
        </p>
      </section>
    </main>
  );
}
