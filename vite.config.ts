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
 * The server runtime (app/.server/runtime.ts: services, the API route table) is a second entry of the same server
 * build as the Remix routes, written as build/server/runtime.js. One build means one copy of every server module:
 * the entry (server.ts) creates the services once and hands them to both the API handler and Remix, and both see the
 * same classes (docs/decisions/0013).
 */
function serverRuntimeEntry(): Plugin {
  let ssr = false;
  return {
    name: "atrium-server-runtime-entry",
    apply: "build",
    configResolved(config) {
      ssr = Boolean(config.build.ssr);
    },
    options(options) {
      if (!ssr) return null;
      const input = typeof options.input === "string" ? { index: options.input } : options.input;
      return { ...options, input: { ...(input as Record<string, string>), runtime: path.resolve("app/.server/runtime.ts") } };
    },
    outputOptions(output) {
      if (!ssr) return null;
      const remixEntry = output.entryFileNames;
      return { ...output, entryFileNames: (chunk) => (chunk.name === "runtime" ? "runtime.js" : typeof remixEntry === "function" ? remixEntry(chunk) : (remixEntry ?? "index.js")) };
    },
  };
}

export default defineConfig({
  plugins: [
    serverRuntimeEntry(),
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
