import type { ReactNode } from "react";
import type { ClaimWarning, ClientIdentityView } from "../../.server/screens/client-identity";
import { useBrand } from "../ui/brand";
import { fill } from "../ui/fill";
import { slots, useT, type T } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { linkStyle } from "../ui/styles";
import { LogoImage } from "../ui/logo-image";

/**
 * Who is asking, in the order of trust (docs/decisions/0018): what this server verified first (the web app's
 * host, or "an app on this device"), then what the app says about itself, labelled as its claim, and a caution
 * when that claim looks like an imitation. Used by the consent screen and the connected apps page.
 */

/** The verified identity, for a sentence or a heading: the host (wrapping only between its parts), or "an app on this device". */
export function VerifiedName({ client, title = false }: { client: Pick<ClientIdentityView, "isLoopback" | "host">; title?: boolean }) {
  const { t } = useT();
  if (client.isLoopback || !client.host) return <>{title ? t("consent:identity.thisDeviceTitle") : t("consent:identity.thisDevice")}</>;
  return (
    <bdi>
      <Identifier text={client.host} className="font-bold" />
    </bdi>
  );
}

/** The verified identity as plain text (tab titles, labels). */
export function verifiedNameText(t: T, client: Pick<ClientIdentityView, "isLoopback" | "host">): string {
  return client.isLoopback || !client.host ? t("consent:identity.thisDevice") : client.host;
}

/**
 * The app's own claims (logo, name) and what backs the verified part: where its details are published, or for a
 * loopback app where it receives the answer (its address and port tell two such apps apart).
 */
export function ClaimedIdentity({ client, returnsTo, size = "md" }: { client: ClientIdentityView; returnsTo?: string; size?: "sm" | "md" }) {
  const brand = useBrand();
  const { t } = useT();
  const loopbackUris = returnsTo ? [returnsTo] : (client.redirectUris ?? []);
  let checked: ReactNode;
  if (client.isLoopback) {
    checked = (
      <>
        {t("consent:identity.loopback")}{" "}
        {loopbackUris.length > 0
          ? fill(loopbackUris.length === 1 ? t("consent:identity.loopbackReturnsTo", slots("uri")) : t("consent:identity.loopbackReturnsToAny", slots("uris")), {
              uri: <Identifier text={loopbackUris[0]!} className="font-mono text-[0.95em]" />,
              uris: loopbackUris.map((uri, index) => (
                <span key={uri}>
                  {index > 0 ? t("common:list.separator") : null}
                  <Identifier text={uri} className="font-mono text-[0.95em]" />
                </span>
              )),
            })
          : null}
      </>
    );
  } else {
    checked =
      client.name || client.logoUri
        ? t(client.logoUri ? "consent:identity.claimNote" : "consent:identity.claimNoteNameOnly", { service: brand.serviceName })
        : fill(t("consent:identity.webVerified", slots("host")), { host: <VerifiedName client={client} /> });
  }
  return (
    <div className="flex items-start gap-3">
      <ClientLogo logoUri={client.logoUri} loopback={client.isLoopback} size={size} />
      <div className="flex min-w-0 flex-col gap-0.5">
        {client.name ? (
          <p className="font-medium">
            {fill(t("consent:identity.callsItself", slots("name")), {
              name: (
                // The app's own text, isolated so its direction cannot reorder what stands around it (Unicode TR #9).
                <bdi className="wrap-break-word">{client.name}</bdi>
              ),
            })}
          </p>
        ) : !client.isLoopback ? (
          <p className="font-medium">{t("consent:identity.noName")}</p>
        ) : null}
        <p className="text-sm text-slate-700 dark:text-slate-200">{checked}</p>
        {client.hostUnicode ? <p className="text-sm text-slate-700 dark:text-slate-200">{fill(t("consent:identity.unicodeHost", slots("unicode")), { unicode: <bdi>{client.hostUnicode}</bdi> })}</p> : null}
      </div>
    </div>
  );
}

/** The caution about an app's claims, when any rule of screens/client-identity.ts found something. */
export function IdentityCaution({ client, id }: { client: ClientIdentityView; id: string }) {
  const brand = useBrand();
  const { t } = useT();
  if (!client.warnings.length) return null;
  const who = <VerifiedName client={client} />;
  return (
    <section aria-labelledby={id} className="rounded-lg border border-amber-500 bg-amber-50 p-3 text-amber-950 dark:border-amber-600 dark:bg-amber-950 dark:text-amber-50">
      <h2 id={id} className="font-semibold">
        <span aria-hidden="true">⚠ </span>
        {t("consent:identity.caution.title")}
      </h2>
      <ul className="mt-1 flex list-disc flex-col gap-1 pl-5 text-sm">
        {client.warnings.flatMap((warning: ClaimWarning) =>
          warning.in.map((where) => <li key={`${warning.reason}-${where}`}>
              {fill(t(`consent:identity.caution.reasons.${warning.reason}.${where}`, { service: brand.serviceName, ...slots("who") }), { who })}
            </li>),
        )}
      </ul>
      <p className="mt-2 text-sm font-medium">{fill(t("consent:identity.caution.advice", slots("who")), { who })}</p>
    </section>
  );
}

/**
 * The app's logo (its own claim, https only), or a neutral mark, also when the logo does not load: a window for web
 * apps, a screen for loopback ones.
 */
export function ClientLogo({ logoUri, loopback, size = "md" }: { logoUri?: string; loopback: boolean; size?: "sm" | "md" }) {
  const box = size === "sm" ? "size-10 rounded-lg" : "size-12 rounded-xl";
  if (logoUri && /^https:\/\//.test(logoUri)) {
    return <LogoImage src={logoUri} size={48} className={`${box} shrink-0 border border-slate-200 object-cover dark:border-slate-700`} fallback={<NeutralLogo box={box} loopback={loopback} />} />;
  }
  return <NeutralLogo box={box} loopback={loopback} />;
}

function NeutralLogo({ box, loopback }: { box: string; loopback: boolean }) {
  return (
    <div aria-hidden="true" className={`${box} flex shrink-0 items-center justify-center bg-slate-100 text-slate-700 dark:bg-slate-800 dark:text-slate-200`}>
      <svg viewBox="0 0 24 24" className="size-6" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round">
        {loopback ? (
          <>
            <rect x="3" y="4" width="18" height="12" rx="2" />
            <path d="M8 20h8M12 16v4" />
          </>
        ) : (
          <>
            <circle cx="12" cy="12" r="9" />
            <path d="M3 12h18M12 3a14 14 0 0 1 0 18M12 3a14 14 0 0 0 0 18" />
          </>
        )}
      </svg>
    </div>
  );
}

/** The links the app provides about itself (its claims too), opened in a new tab. */
export function ClientLinks({ links }: { links: { href?: string; label: string }[] }) {
  const { t } = useT();
  const shown = links.filter((link): link is { href: string; label: string } => Boolean(link.href && /^https?:\/\//.test(link.href)));
  if (!shown.length) return null;
  return (
    <nav aria-label={t("consent:identity.links.label")} className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
      {shown.map((link) => (
        <a key={link.label} href={link.href} className={linkStyle} target="_blank" rel="noopener noreferrer">
          {link.label}
          <span className="sr-only"> {t("consent:identity.links.newTab")}</span>
        </a>
      ))}
    </nav>
  );
}
