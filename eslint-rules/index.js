/**
 * Atrium's own lint rules: the driver's invariants that the type checker cannot see (docs/decisions/0034).
 *
 *   atrium/fragment-module-constant   a Fragment is made only as a module-level constant
 *   atrium/no-catch-around-statements a program (a generator of statements) never catches what a yielded statement threw
 */

/** The innermost function around a node (or undefined at module level). */
function enclosingFunction(node) {
  for (let current = node.parent; current; current = current.parent) {
    if (current.type === "FunctionDeclaration" || current.type === "FunctionExpression" || current.type === "ArrowFunctionExpression") return current;
  }
  return undefined;
}

/** Whether a node is the value of a `const` declared at the top of the module (exported or not). */
function isModuleConstant(node) {
  const declarator = node.parent;
  if (declarator?.type !== "VariableDeclarator" || declarator.init !== node) return false;
  const declaration = declarator.parent;
  if (declaration?.type !== "VariableDeclaration" || declaration.kind !== "const") return false;
  const container = declaration.parent;
  return container?.type === "Program" || (container?.type === "ExportNamedDeclaration" && container.parent?.type === "Program");
}

const fragmentModuleConstant = {
  meta: {
    type: "problem",
    docs: { description: "A Fragment must be a module-level constant: the driver compiles a statement's text once, with its first fragments" },
    schema: [],
    messages: {
      notConstant:
        "Make this Fragment a module-level constant (`const NAME = new Fragment(…)` at the top of the module): a statement's text is compiled once per template, with the fragments of its first run (docs/decisions/0017, 0034).",
    },
  },
  create(context) {
    return {
      NewExpression(node) {
        if (node.callee.type === "Identifier" && node.callee.name === "Fragment" && !isModuleConstant(node)) {
          context.report({ node, messageId: "notConstant" });
        }
      },
    };
  },
};

/** Whether a try block yields to its own generator (not to a function nested in it). */
function yieldsIn(block, generator) {
  let found = false;
  const visit = (node) => {
    if (found || !node || typeof node.type !== "string") return;
    if (node.type === "YieldExpression" && enclosingFunction(node) === generator) {
      found = true;
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === "parent") continue;
      if (Array.isArray(value)) value.forEach(visit);
      else if (value && typeof value === "object") visit(value);
    }
  };
  visit(block);
  return found;
}

const noCatchAroundStatements = {
  meta: {
    type: "problem",
    docs: { description: "A program must not catch an error thrown by a statement it yielded" },
    schema: [],
    messages: {
      caught:
        "A program must not catch a database error: inside a transaction PostgreSQL aborts the transaction at the first failed statement, and the driver makes SQLite do the same (TransactionAborted). Let it propagate, or avoid the error in SQL (ON CONFLICT, a conditional UPDATE) (docs/decisions/0034).",
    },
  },
  create(context) {
    return {
      TryStatement(node) {
        if (!node.handler) return;
        const generator = enclosingFunction(node);
        if (generator?.generator && yieldsIn(node.block, generator)) context.report({ node: node.handler, messageId: "caught" });
      },
    };
  },
};

export default {
  meta: { name: "atrium" },
  rules: {
    "fragment-module-constant": fragmentModuleConstant,
    "no-catch-around-statements": noCatchAroundStatements,
  },
};
