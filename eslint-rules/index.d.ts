import type { ESLint } from "eslint";

/** Atrium's own lint rules (index.js). */
declare const plugin: ESLint.Plugin & { rules: NonNullable<ESLint.Plugin["rules"]> };
export default plugin;
