import path from "node:path";
import { vitePlugin as remix } from "@remix-run/dev";
import tailwindcss from "@tailwindcss/vite";
import { defineConfig, type Plugin } from "vite";

declare module "@remix-run/node" {
  interface Future {
    v3_singleFetch: true;
  }
}

/**
 * The whole server is one Vite SSR build, run by plain `node` in production (docs/decisions/0013, 0025b). Beside the
 * Remix routes (index.js), two more entries: the runtime (app/.server/runtime.ts: services, the API route table) as
 * build/server/runtime.js, and the entry itself (server.ts, with server/) as build/server/server.js; a fourth, the
 * account command line tool (scripts/account.ts) as build/server/account.js, which the tests run to create accounts
 * without compiling TypeScript at every call (docs/decisions/0036). Rollup puts every
 * module that several entries use in a shared chunk, so there is one copy of every server module: the entry creates
 * the services once and hands them to both the API handler and Remix, and all of them see the same classes.
 */
const SERVER_ENTRIES: Record<string, string> = { runtime: "app/.server/runtime.ts", server: "server.ts", account: "scripts/account.ts" };

function serverEntries(): Plugin {
  let ssr = false;
  return {
    name: "atrium-server-entries",
    apply: "build",
    configResolved(config) {
      ssr = Boolean(config.build.ssr);
    },
    options(options) {
      if (!ssr) return null;
      const input = typeof options.input === "string" ? { index: options.input } : options.input;
      const entries = Object.fromEntries(Object.entries(SERVER_ENTRIES).map(([name, file]) => [name, path.resolve(file)]));
      return { ...options, input: { ...(input as Record<string, string>), ...entries } };
    },
    outputOptions(output) {
      if (!ssr) return null;
      const remixEntry = output.entryFileNames;
      return {
        ...output,
        entryFileNames: (chunk) => (chunk.name in SERVER_ENTRIES ? `${chunk.name}.js` : typeof remixEntry === "function" ? remixEntry(chunk) : (remixEntry ?? "index.js")),
      };
    },
  };
}

export default defineConfig({
  plugins: [
    serverEntries(),
    tailwindcss(),
    remix({
      future: {
        v3_fetcherPersist: true,
        v3_relativeSplatPath: true,
        v3_throwAbortReason: true,
        v3_singleFetch: true,
        v3_lazyRouteDiscovery: true,
      },
    }),
  ],
  server: { host: "127.0.0.1" },
  build: { target: "es2022" },
});
