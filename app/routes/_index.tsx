import type { MetaFunction } from "@remix-run/node";
import { useLoaderData } from "@remix-run/react";
import { getConfig } from "../.server/config";

export const meta: MetaFunction = () => [{ title: "Atrium: sign-in for this AT Protocol server" }];

export function loader() {
  return { issuer: getConfig().issuer };
}

export default function Index() {
  const { issuer } = useLoaderData<typeof loader>();
  return (
    <main className="mx-auto flex min-h-screen max-w-2xl flex-col justify-center gap-6 p-6">
      <h1 className="text-3xl font-semibold">Atrium</h1>
      <p className="text-lg text-slate-700 dark:text-slate-300">
        This is the sign-in service of an AT Protocol personal data server. Apps on the atproto network (Bluesky clients and others)
        send you here to sign in and to decide what they may do with your account.
      </p>
      <p className="text-slate-700 dark:text-slate-300">
        Developers: the OAuth metadata is at{" "}
        <a className="text-blue-700 underline dark:text-blue-400" href="/.well-known/oauth-authorization-server">
          {issuer}/.well-known/oauth-authorization-server
        </a>
        .
      </p>
    </main>
  );
}
