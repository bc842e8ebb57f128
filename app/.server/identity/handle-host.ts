import { handleSchema } from "../accounts/identifiers.ts";

/**
 * The handle a request's Host names, when it is one this server may answer for: a domain under one of
 * ATRIUM_USER_DOMAINS (atproto handle resolution over HTTPS: "GET https://<handle>/.well-known/atproto-did" answers
 * the DID as text/plain, https://atproto.com/specs/handle#https-well-known-method). The port, if any, is not part
 * of the handle. Undefined for any other host.
 */
export function handleOfHost(host: string | null, userDomains: readonly string[]): string | undefined {
  if (!host) return undefined;
  const name = host.replace(/:\d+$/, "").replace(/\.$/, "");
  const parsed = handleSchema.safeParse(name);
  if (!parsed.success) return undefined;
  const handle = parsed.data;
  const under = userDomains.some((domain) => {
    const suffix = (domain.startsWith(".") ? domain : `.${domain}`).toLowerCase();
    return handle.endsWith(suffix) && handle.length > suffix.length;
  });
  return under ? handle : undefined;
}
