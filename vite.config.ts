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

/**
 * The server build carries its dependencies (docs/decisions/0025b, amendment): CommonJS packages keep the `require`
 * calls that Rollup leaves as they are (optional ones in a try, a lazy `require("node:tls")`), so every chunk gets
 * Node's own `require`, and each such call behaves as it does unbundled instead of taking its fallback.
 */
const NODE_REQUIRE = 'import { createRequire as __atriumCreateRequire } from "node:module";\nconst require = __atriumCreateRequire(import.meta.url);';

/**
 * Modules that dependencies require only if present, inside a `try` or when a feature is first used: optional native
 * add-ons (pg's pg-native, ws's bufferutil and utf-8-validate), none installed here, and `node:sqlite`, which Node 20
 * lacks. Rollup would turn each into an import at the top of its chunk (a missing one into a stand-in that throws at
 * start, or an empty object that `ws` would then call); left as Node's own `require`, each fails or succeeds where the
 * package expects, as unbundled.
 */
const OPTIONAL_REQUIRES = ["pg-native", "bufferutil", "utf-8-validate", "node:sqlite"];

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
        banner: NODE_REQUIRE,
        entryFileNames: (chunk) => (chunk.name in SERVER_ENTRIES ? `${chunk.name}.js` : typeof remixEntry === "function" ? remixEntry(chunk) : (remixEntry ?? "index.js")),
      };
    },
  };
}

export default defineConfig(({ command }) => ({
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
  // The build carries every dependency but the native SQLite driver (and Vite, which only `--dev` loads): Node then
  // reads a dozen files at start instead of some four hundred (docs/decisions/0025b, amendment). `npm run dev` loads
  // the dependencies from node_modules as they are.
  ssr: command === "build" ? { noExternal: true, external: ["better-sqlite3", "vite"] } : {},
  build: { target: "es2022", commonjsOptions: { ignore: OPTIONAL_REQUIRES } },
}));
