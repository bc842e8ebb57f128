import type { LoaderFunctionArgs } from "@remix-run/node";
import { brandStylesheet } from "../.server/screens/brand";

/**
 * GET /brand.css: the operator's primary colour as CSS variables (docs/decisions/0018). The pages link it with a
 * version of its content (`?v=`), so browsers keep it for a year and fetch it again only when the colour changes.
 */
export function loader({ context }: LoaderFunctionArgs) {
  return new Response(brandStylesheet(context.services.config.brand), {
    headers: { "Content-Type": "text/css; charset=utf-8", "Cache-Control": "public, max-age=31536000, immutable" },
  });
}
