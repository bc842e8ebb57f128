import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { linkStyle } from "../ui/styles";

type Client = ConsentView["client"];

/**
 * Who is asking. The name, logo and links come from the app's own metadata
 * and are marked as its claim; the client_id host (which this server
 * checked) always stands next to them. Loopback clients are "an
 * application on this device".
 */
export function ClientIdentity({ client, rememberedConsent }: { client: Client; rememberedConsent: boolean }) {
  const displayName = client.isLoopback ? (client.name ?? "An application on this device") : (client.name ?? client.host);
  const links = [
    { href: client.clientUri, label: "Homepage" },
    { href: client.tosUri, label: "Terms of service" },
    { href: client.policyUri, label: "Privacy policy" },
  ].filter((link): link is { href: string; label: string } => Boolean(link.href && /^https?:\/\//.test(link.href)));
  return (
    <header className="flex flex-col gap-3">
      <div className="flex items-start gap-4">
        <ClientLogo logoUri={client.logoUri} name={displayName} />
        <div className="flex min-w-0 flex-col gap-1">
          <p className="text-sm font-medium text-slate-600 dark:text-slate-300">{rememberedConsent ? "Continue to" : "Sign in to allow access for"}</p>
          {/* The name is the app's own text: isolated so its direction cannot reorder what stands around it (Unicode TR #9). */}
          <h1 className="text-2xl leading-tight font-semibold break-words sm:text-3xl">
            <bdi>{displayName}</bdi>
          </h1>
          <p className="text-sm text-slate-700 dark:text-slate-200">
            {client.isLoopback ? (
              <>
                {client.name ? "An application on this device; the name is its own claim" : "A program running on your computer, not a website"}
              </>
            ) : (
              <>
                at <strong className="font-semibold break-all">{client.host}</strong>
                {client.name || client.logoUri ? <span className="text-slate-600 dark:text-slate-300"> · name{client.logoUri ? " and logo" : null} chosen by the app, not checked</span> : null}
              </>
            )}
          </p>
        </div>
      </div>
      <p className="text-sm text-slate-700 dark:text-slate-200">
        Afterwards you go back to <span className="font-mono break-all">{client.redirectUri}</span>
      </p>
      {links.length ? (
        <nav aria-label="About the app (links it provides)" className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
          {links.map((link) => (
            <a key={link.label} href={link.href} className={linkStyle} target="_blank" rel="noopener noreferrer">
              {link.label}
              <span className="sr-only"> (opens in a new tab)</span>
            </a>
          ))}
        </nav>
      ) : null}
    </header>
  );
}

function ClientLogo({ logoUri, name }: { logoUri?: string; name: string }) {
  if (logoUri && /^https:\/\//.test(logoUri)) {
    return <img src={logoUri} alt="" width={56} height={56} referrerPolicy="no-referrer" className="size-14 shrink-0 rounded-xl border border-slate-200 object-cover dark:border-slate-700" />;
  }
  return (
    <div aria-hidden="true" className="flex size-14 shrink-0 items-center justify-center rounded-xl bg-blue-100 text-2xl font-semibold text-blue-900 dark:bg-blue-950 dark:text-blue-100">
      {initialOf(name)}
    </div>
  );
}

function initialOf(name: string): string {
  const letter = [...name.trim()].find((character) => /\p{L}|\p{N}/u.test(character));
  return (letter ?? "?").toUpperCase();
}
