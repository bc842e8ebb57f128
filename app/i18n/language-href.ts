/**
 * The language picker's link to "this same page in another language" (docs/decisions/0019).
 *
 * A query-only relative reference (RFC 3986 §4.2: `?lng=fr…`) resolves against the page's own address, so it
 * always stays on this origin whatever the path says. Building it from the path instead lets the request choose
 * where the link goes: a 404 for `//evil.example/x` (or `/\evil.example/x`, which URL parsing turns into the
 * same) would write `//evil.example/x?lng=fr`, a network-path reference to another site, on a genuine page of this
 * server (issue 16, hole 4). Encoded, doubled, tab- or newline-split variants of the path do not matter either:
 * the path is not in the link.
 */
export function languageHref(search: string, language: string): string {
  const params = new URLSearchParams(search);
  params.set("lng", language);
  return `?${params}`;
}
