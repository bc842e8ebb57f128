import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SQLITE_SCHEMA_PATH } from "./postgres-schema.ts";

/**
 * The row types of app/.server/db/rows.generated.ts, from prisma/schema.prisma (docs/decisions/0034).
 *
 * Prisma's own schema parser is bundled inside its CLI (a WebAssembly module without a public entry), and its
 * generators download engines (docs/decisions/0025a), so this reads the schema itself: strictly, only what the
 * schema uses, and it fails loudly, naming the line, on anything it does not understand rather than guessing.
 */

export const ROW_TYPES_PATH = path.resolve(import.meta.dirname, "../../app/.server/db/rows.generated.ts");

/** Prisma's scalar types → the column type the driver delivers (app/.server/db/row-shape.ts). */
const KINDS: Record<string, string> = {
  String: "string",
  Int: "integer",
  // Integers wider than 32 bits and far below 2^53 (a passkey's unsigned 32-bit signature counter): numbers on both
  // engines (better-sqlite3's default, pg's int8 parser), and the row check refuses one that is not a safe integer.
  BigInt: "integer",
  Float: "float",
  Boolean: "boolean",
  // Epoch milliseconds on both engines: SQLite stores them so, PostgreSQL's TIMESTAMP(3) is parsed to them.
  DateTime: "time",
  Bytes: "bytes",
};

/** Types the drivers do not deliver yet; a column of one needs its coercion decided first (docs/decisions/0034). */
const UNDECIDED = new Set(["Decimal", "Json", "Unsupported"]);

const FIELD_ATTRIBUTES = new Set(["id", "unique", "default", "updatedAt", "relation"]);
const MODEL_ATTRIBUTES = new Set(["id", "index", "unique"]);

export type Column = { name: string; kind: string; nullable: boolean };
export type Model = { name: string; columns: Column[] };

type Line = { text: string; number: number };

/** The models of a schema with their scalar columns (relation fields hold no column). */
export function parseModels(schema: string): Model[] {
  const lines = schema.split("\n").map((text, index) => ({ text: withoutComment(text).trim(), number: index + 1 }));
  const blocks = blocksOf(lines);
  const modelNames = new Set(blocks.filter((block) => block.kind === "model").map((block) => block.name));
  return blocks.filter((block) => block.kind === "model").map((block) => ({ name: block.name, columns: columnsOf(block.body, modelNames) }));
}

type Block = { kind: string; name: string; body: Line[] };

function blocksOf(lines: Line[]): Block[] {
  const blocks: Block[] = [];
  let open: Block | undefined;
  for (const line of lines) {
    if (line.text === "") continue;
    if (open) {
      if (line.text === "}") {
        blocks.push(open);
        open = undefined;
      } else open.body.push(line);
      continue;
    }
    const start = /^(\w+)\s+(\w+)\s*\{$/.exec(line.text);
    if (!start) fail(line, "expected the start of a block (`model Name {`)");
    if (start[1] !== "model" && start[1] !== "datasource") fail(line, `${start[1]} blocks are not understood by the row-type generator`);
    open = { kind: start[1]!, name: start[2]!, body: [] };
  }
  if (open) throw new Error(`prisma/schema.prisma: the ${open.kind} block ${open.name} is not closed`);
  return blocks;
}

function columnsOf(body: Line[], modelNames: Set<string>): Column[] {
  const columns: Column[] = [];
  for (const line of body) {
    if (line.text.startsWith("@@")) {
      checkAttributes(line, line.text.slice(1), MODEL_ATTRIBUTES);
      continue;
    }
    const field = /^(\w+)\s+(\w+)(\[\]|\?)?(\s+.*)?$/.exec(line.text);
    if (!field) fail(line, "expected a field (`name Type attributes`)");
    const [, name, type, modifier, attributes = ""] = field as unknown as [string, string, string, string | undefined, string | undefined];
    checkAttributes(line, attributes.trim(), FIELD_ATTRIBUTES);
    if (modelNames.has(type)) continue;
    if (UNDECIDED.has(type)) fail(line, `${type} columns are not delivered by the drivers yet: decide their TypeScript type and coercion first`);
    const kind = KINDS[type];
    if (!kind) fail(line, `unknown type ${type}`);
    if (modifier === "[]") fail(line, "list columns are not supported");
    if (/@relation\b/.test(attributes)) fail(line, "@relation on a scalar field");
    columns.push({ name, kind, nullable: modifier === "?" });
  }
  return columns;
}

/** Every attribute of a line must be one the generator knows keeps the column's name and type (no @map, no @db.*). */
function checkAttributes(line: Line, attributes: string, known: Set<string>): void {
  for (const match of attributes.matchAll(/@([\w.]+)/g)) {
    if (!known.has(match[1]!)) fail(line, `the attribute @${match[1]} is not understood by the row-type generator`);
  }
  const withoutArguments = attributes.replace(/\((?:[^()"]|"[^"]*"|\((?:[^()"]|"[^"]*")*\))*\)/g, "");
  const stray = withoutArguments.replace(/@[\w.]+/g, "").trim();
  if (stray !== "") fail(line, `unexpected text: ${stray}`);
}

/** A line without its `//` or `///` comment (outside string literals). */
function withoutComment(text: string): string {
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '"' && text[index - 1] !== "\\") inString = !inString;
    if (!inString && char === "/" && text[index + 1] === "/") return text.slice(0, index);
  }
  return text;
}

function fail(line: Line, problem: string): never {
  throw new Error(`prisma/schema.prisma:${line.number}: ${problem}: ${line.text}`);
}

const TS_TYPES: Record<string, string> = { string: "string", integer: "number", float: "number", boolean: "boolean", time: "number", bytes: "Uint8Array" };

/** The text of rows.generated.ts for these models. */
export function renderRowTypes(models: Model[]): string {
  const header = `// GENERATED FILE: do not edit. Written from prisma/schema.prisma by scripts/generate-row-types.ts
// (\`npm run db:types\`, which \`npm run migration:new\` runs too; a test fails when it is stale). One row type per
// model, each column as both engines deliver it (times: epoch milliseconds; bytes: a plain Uint8Array), and the
// table's row shape, which the driver checks statements against (docs/decisions/0034).
import { table } from "./row-shape.ts";
`;
  const types = models.map(renderType).join("\n");
  const tables = models.map((model) => `  ${model.name}: table<${model.name}Row>(${JSON.stringify(model.name)}, {\n${model.columns
    .map((column) => `    ${column.name}: "${column.kind}${column.nullable ? "?" : ""}",`)
    .join("\n")}\n  }),`);
  return `${header}\n${types}\n/** Every table's row shape: \`get(tables.Account, …)\`, \`get(tables.Account.pick("did", "handle"), …)\`. */\nexport const tables = {\n${tables.join("\n")}\n};\n`;
}

function renderType(model: Model): string {
  const fields = model.columns.map((column) => `  ${column.name}: ${TS_TYPES[column.kind]}${column.nullable ? " | null" : ""};`);
  return `/** A row of "${model.name}". */\nexport type ${model.name}Row = {\n${fields.join("\n")}\n};\n`;
}

/** What the generator would write now from the schema file. */
export function generateRowTypes(schemaPath = SQLITE_SCHEMA_PATH): string {
  return renderRowTypes(parseModels(readFileSync(schemaPath, "utf8")));
}

export function writeRowTypes(schemaPath = SQLITE_SCHEMA_PATH, outputPath = ROW_TYPES_PATH): void {
  writeFileSync(outputPath, generateRowTypes(schemaPath));
}
