import type { ServerBuild } from "@remix-run/node";

/**
 * Which Remix route serves a path, for the metrics label of the screens
 * (docs/decisions/0014): the route's id ("routes/oauth.authorize"), so the
 * label is one of the app's routes whatever the path. Paths are matched as
 * React Router matches them (case-insensitive, a trailing slash ignored,
 * `:param` one segment, `*` the rest); a single-fetch data request
 * (`/account/apps.data`, `/_root.data`) counts as its page.
 */
export function screenRouteMatcher(routes: ServerBuild["routes"]): (path: string) => string {
  type Candidate = { id: string; segments: string[]; rank: number };
  const candidates: Candidate[] = [];
  for (const route of Object.values(routes)) {
    if (!route.parentId) continue;
    if (Object.values(routes).some((child) => child.parentId === route.id)) continue;
    const segments: string[] = [];
    for (let current: typeof route | undefined = route; current; current = current.parentId ? routes[current.parentId] : undefined) {
      if (current.path) segments.unshift(...current.path.split("/").filter(Boolean));
    }
    const lowered = segments.map((segment) => (segment.startsWith(":") || segment === "*" ? segment : segment.toLowerCase()));
    // Static paths first, then those with parameters, then splats.
    const rank = lowered.includes("*") ? 2 : lowered.some((segment) => segment.startsWith(":")) ? 1 : 0;
    candidates.push({ id: route.id, segments: lowered, rank });
  }
  candidates.sort((a, b) => a.rank - b.rank || b.segments.length - a.segments.length);
  const fallback = "other";

  return (path) => {
    let pathname = path;
    if (pathname === "/_root.data") pathname = "/";
    else if (pathname.endsWith(".data")) pathname = pathname.slice(0, -".data".length);
    const parts = pathname.toLowerCase().split("/").filter(Boolean);
    for (const candidate of candidates) if (matches(candidate.segments, parts)) return candidate.id;
    return fallback;
  };
}

function matches(pattern: readonly string[], parts: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const segment = pattern[i]!;
    if (segment === "*") return true;
    if (i >= parts.length) return false;
    if (!segment.startsWith(":") && segment !== parts[i]) return false;
  }
  return pattern.length === parts.length;
}
