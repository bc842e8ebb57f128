import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";
import atrium from "./eslint-rules/index.js";

export default tseslint.config(
  { ignores: ["build/**", "node_modules/**", ".cache/**", "test-results/**", "bench/results/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", ignoreRestSiblings: true }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "no-console": "off",
    },
  },
  {
    // Stores answer synchronously on SQLite and with a promise on PostgreSQL (docs/decisions/0017): a promise used as
    // a condition is always true, so a forgotten await would let a spent code or a replayed proof through. The type-aware
    // rules catch that where it matters: the server code.
    files: ["app/.server/**/*.ts", "server/**/*.ts", "server.ts", "scripts/**/*.ts"],
    ignores: ["**/*.test.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/await-thenable": "error",
    },
  },
  {
    // The driver's invariants that types cannot express (docs/decisions/0034): a Fragment's text is compiled once per
    // statement, so it is a module constant; a program never catches what a statement threw, since PostgreSQL aborts
    // the transaction at the first failure (the driver makes SQLite do the same). Tests break them on purpose.
    files: ["app/.server/**/*.ts", "server/**/*.ts", "scripts/**/*.ts", "bench/**/*.ts"],
    ignores: ["**/*.test.ts"],
    plugins: { atrium },
    rules: {
      "atrium/fragment-module-constant": "error",
      "atrium/no-catch-around-statements": "error",
      // Rows the server reads name their shape (get/all); the unchecked reads are the tests' view of the tables.
      "no-restricted-imports": [
        "error",
        { patterns: [{ group: ["**/db/sql.ts"], importNames: ["getUnchecked", "allUnchecked"], message: "Name the row shape: get(shape, …) / all(shape, …) (docs/decisions/0034)." }] },
      ],
    },
  },
);
