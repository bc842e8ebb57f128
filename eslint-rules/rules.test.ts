import { RuleTester } from "eslint";
import tseslint from "typescript-eslint";
import { describe, it } from "vitest";
import atrium from "./index.js";

/** Atrium's lint rules (docs/decisions/0034), run on code that breaks them and code that keeps them. */
RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser, ecmaVersion: 2022, sourceType: "module" } });

tester.run("fragment-module-constant", atrium.rules["fragment-module-constant"]!, {
  valid: [
    `const BYTEWISE = new Fragment({ sqlite: "", postgresql: 'COLLATE "C"' });`,
    `export const BYTEWISE = new Fragment({ sqlite: "", postgresql: 'COLLATE "C"' });`,
    // Another class of the same shape is none of the rule's business.
    `function f() { return new Fragmentation(); }`,
  ],
  invalid: [
    { code: `function* read(order) { yield* all(ROW, sql\`SELECT 1 \${new Fragment({ sqlite: order, postgresql: order })}\`); }`, errors: [{ messageId: "notConstant" }] },
    { code: `let COLLATION = new Fragment({ sqlite: "", postgresql: "" });`, errors: [{ messageId: "notConstant" }] },
    { code: `const fragments = [new Fragment({ sqlite: "", postgresql: "" })];`, errors: [{ messageId: "notConstant" }] },
    { code: `function collation() { const C = new Fragment({ sqlite: "", postgresql: "" }); return C; }`, errors: [{ messageId: "notConstant" }] },
    { code: `const make = () => new Fragment({ sqlite: "", postgresql: "" });`, errors: [{ messageId: "notConstant" }] },
  ],
});

tester.run("no-catch-around-statements", atrium.rules["no-catch-around-statements"]!, {
  valid: [
    // Parsing a value read, not a statement: nothing yielded inside the try.
    `function* find(): Program<unknown> { const row = yield* get(ROW, sql\`SELECT 1\`); try { return JSON.parse(row.value); } catch { return undefined; } }`,
    // Cleaning up without catching: the error still propagates.
    `function* step() { try { yield* run(sql\`DELETE FROM "A"\`); } finally { done(); } }`,
    // Catching around the whole transaction, outside the program.
    `async function apply(db) { try { await db.transaction(function* () { yield* run(sql\`DELETE FROM "A"\`); }); } catch (error) { if (error instanceof HeadMoved) return false; throw error; } }`,
    // A function nested in the try yields to nobody here.
    `function* outer() { try { const inner = function* () { yield 1; }; use(inner); } catch { recover(); } yield* run(sql\`SELECT 1\`); }`,
  ],
  invalid: [
    {
      code: `function* insert(): Program<boolean> { try { yield* run(sql\`INSERT INTO "A" VALUES (1)\`); return true; } catch (error) { if (isUniqueViolation(error)) return false; throw error; } }`,
      errors: [{ messageId: "caught" }],
    },
    { code: `const program = function* () { try { yield* get(ROW, sql\`SELECT 1\`); } catch {} };`, errors: [{ messageId: "caught" }] },
    { code: `db.transaction(function* () { try { if (x) { yield* run(sql\`DELETE FROM "A"\`); } } catch { } });`, errors: [{ messageId: "caught" }] },
  ],
});
