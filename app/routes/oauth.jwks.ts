/** The server signs nothing that clients verify (tokens are opaque), so the set is empty. */
export function loader() {
  return Response.json({ keys: [] }, { headers: { "Cache-Control": "public, max-age=300" } });
}
