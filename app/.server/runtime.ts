/**
 * What the entry (server.ts) takes from the server build: the services,
 * created once, and the route table of the JSON endpoints bound to them.
 * This module is a second entry of the Remix server build (vite.config.ts),
 * so the routes and the entry share one copy of every module
 * (docs/decisions/0013).
 */
import type { Services } from "./services.ts";

export { createServices, prepareKeys, type Services } from "./services.ts";
export { apiRoutes, type ApiRoute, type ApiRouteTable } from "./http/api-routes.ts";

declare module "@remix-run/node" {
  /** What every loader and action receives from the entry (server.ts, getLoadContext). */
  interface AppLoadContext {
    services: Services;
    /** The nonce of this response's Content-Security-Policy, for the page's scripts. */
    cspNonce: string;
  }
}
