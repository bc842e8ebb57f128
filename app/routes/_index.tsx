import type { LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useLoaderData } from "@remix-run/react";
import { BrandFooter, BrandMark, brandOf, useBrand } from "../components/ui/brand";
import { fill, fillText } from "../components/ui/fill";
import { linkStyle, primaryButton } from "../components/ui/styles";

/** The start page's words, for a later translation catalogue. */
const startText = {
  title: "{service}: sign-in for this AT Protocol server",
  description: "The sign-in and permissions service of an AT Protocol personal data server.",
  lead: "This is the sign-in service of an AT Protocol personal data server: the place where your account and your posts live.",
  body: "Apps on the atproto network (Bluesky clients and others) send you here to sign in and to decide what they may do with your account. You see who is asking and what for, and you can take access back at any time.",
  manage: "Manage your account",
  inYourAccount: "In your account",
  cards: [
    { href: "/account/apps", title: "Connected apps", text: "See which apps have access and revoke it." },
    { href: "/account/sessions", title: "Signed-in browsers", text: "Sign out browsers you no longer use." },
    { href: "/account/passkeys", title: "Passkeys", text: "Sign in without typing a password." },
  ],
  developers: "For developers",
  protocol: "OAuth 2.1 with PAR, PKCE and DPoP, as the atproto OAuth profile describes. Metadata: {link}",
};

export const meta: MetaFunction = ({ matches }) => [
  { title: fillText(startText.title, { service: brandOf(matches).serviceName }) },
  { name: "description", content: startText.description },
];

export function loader({ context }: LoaderFunctionArgs) {
  const { issuer } = context.services.config;
  return { issuer, host: new URL(issuer).host };
}

export default function Index() {
  const { issuer, host } = useLoaderData<typeof loader>();
  const brand = useBrand();
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-3xl flex-col gap-8 px-5 py-10 sm:px-8">
      <main id="main" className="flex flex-1 flex-col justify-center gap-8">
        <div className="flex flex-col gap-4">
          <p className="text-sm font-semibold tracking-wide text-slate-700 uppercase dark:text-slate-300">{host}</p>
          <div className="flex items-center gap-3">
            <BrandMark brand={brand} />
            <h1 className="text-3xl font-semibold sm:text-4xl">{brand.serviceName}</h1>
          </div>
          <p className="text-lg text-slate-800 sm:text-xl dark:text-slate-100">{startText.lead}</p>
          <p className="text-slate-700 dark:text-slate-200">{startText.body}</p>
          <p>
            <a href="/account" className={primaryButton}>
              {startText.manage}
            </a>
          </p>
        </div>
        <section aria-labelledby="account-links" className="grid gap-3 sm:grid-cols-3">
          <h2 id="account-links" className="sr-only">
            {startText.inYourAccount}
          </h2>
          {startText.cards.map((item) => (
            <a
              key={item.href}
              href={item.href}
              className="flex flex-col gap-1 rounded-2xl border border-slate-200 bg-white p-4 hover:border-slate-400 dark:border-slate-800 dark:bg-slate-900 dark:hover:border-slate-600"
            >
              <span className="font-semibold text-brand-text dark:text-brand-text-dark">{item.title}</span>
              <span className="text-sm text-slate-700 dark:text-slate-200">{item.text}</span>
            </a>
          ))}
        </section>
        <section aria-labelledby="developers" className="flex flex-col gap-2 border-t border-slate-200 pt-6 text-sm dark:border-slate-800">
          <h2 id="developers" className="font-semibold">
            {startText.developers}
          </h2>
          <p className="text-slate-700 dark:text-slate-200">
            {fill(startText.protocol, {
              link: (
                <a className={`${linkStyle} wrap-break-word`} href="/.well-known/oauth-authorization-server">
                  {issuer}/.well-known/oauth-authorization-server
                </a>
              ),
            })}
          </p>
        </section>
      </main>
      <BrandFooter />
    </div>
  );
}
