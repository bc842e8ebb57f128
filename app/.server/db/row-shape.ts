/**
 * What a statement's rows look like, at compile time and at run time (docs/decisions/0034).
 *
 * A row shape names each column a statement returns and its kind. Its TypeScript row type is derived from it, so a
 * program's `get(shape, sql`…`)` is typed without a cast; the engines use the same shape to check, the first time a
 * statement runs with it, that the statement returns exactly those columns with values of those kinds, and SQLite
 * to turn its 1/0 into booleans. The shapes of whole tables are generated from prisma/schema.prisma
 * (rows.generated.ts, `npm run db:types`); a program picks columns from them or spreads them into a shape of its own.
 */

/** How a column's value is delivered after each engine's coercion. */
export type Kind = "string" | "integer" | "float" | "boolean" | "time" | "bytes";

/** A kind, or a nullable one (`"time?"`: epoch milliseconds or null). */
export type ColumnType = Kind | `${Kind}?`;

type ValueOfKind = { string: string; integer: number; float: number; boolean: boolean; time: number; bytes: Uint8Array };

/** The TypeScript type a column of this type delivers: times are epoch milliseconds, bytes a plain Uint8Array. */
export type ValueOf<C extends ColumnType> = C extends `${infer K extends Kind}?` ? ValueOfKind[K] | null : C extends Kind ? ValueOfKind[C] : never;

export type Columns = { readonly [name: string]: ColumnType };

/** The row a set of columns delivers. */
export type RowOf<C extends Columns> = { -readonly [N in keyof C]: ValueOf<C[N]> };

type KindsOf<V> = [V] extends [string] ? "string" : [V] extends [boolean] ? "boolean" : [V] extends [Uint8Array] ? "bytes" : [V] extends [number] ? "integer" | "float" | "time" : never;

/** The column types that deliver a row type's field: what ties a written-out row type to its columns. */
export type ColumnsOf<Row> = { readonly [N in keyof Row]-?: null extends Row[N] ? `${KindsOf<NonNullable<Row[N]>>}?` : KindsOf<Row[N]> };

/** The columns of a statement's rows, in order of nothing: a row is compared by names. */
export class RowShape<Row> {
  readonly names: readonly string[];
  constructor(readonly columns: ColumnsOf<Row>) {
    this.names = Object.keys(columns);
  }
}

/** A table's row shape, generated from the schema; `pick` narrows it to the columns a statement selects. */
export class Table<Row> extends RowShape<Row> {
  private readonly picks = new Map<string, RowShape<never>>();

  constructor(
    readonly name: string,
    columns: ColumnsOf<Row>,
  ) {
    super(columns);
  }

  /** The shape of some of the table's columns (one object per set of names, so an engine checks it once). */
  pick<N extends keyof Row & string>(...names: N[]): RowShape<Pick<Row, N>> {
    const key = names.join(",");
    let picked = this.picks.get(key) as RowShape<Pick<Row, N>> | undefined;
    if (!picked) {
      const all = this.columns as Record<string, ColumnType>;
      picked = new RowShape<Pick<Row, N>>(Object.fromEntries(names.map((name) => [name, all[name]!])) as ColumnsOf<Pick<Row, N>>);
      this.picks.set(key, picked as RowShape<never>);
    }
    return picked;
  }
}

/** A shape written in place: computed columns (`COUNT(*) AS "n"`), aliases, or a join's columns spread from tables'. */
export function shape<const C extends Columns>(columns: C): RowShape<RowOf<C>> {
  return new RowShape<RowOf<C>>(columns as unknown as ColumnsOf<RowOf<C>>);
}

/** A table's shape (used by the generated rows.generated.ts). */
export function table<Row>(name: string, columns: ColumnsOf<Row>): Table<Row> {
  return new Table<Row>(name, columns);
}

/**
 * Throws unless a statement returns exactly the shape's columns (names from the engine's description of the
 * statement, so a duplicate name, which one of the two values would silently win, is refused too).
 */
export function checkColumnNames(shape: RowShape<unknown>, returned: readonly string[], text: string): void {
  const expected = [...shape.names].sort();
  const actual = [...returned].sort();
  if (expected.length === actual.length && expected.every((name, index) => name === actual[index])) return;
  throw new Error(`A statement returns the columns ${actual.join(", ")} but its row shape names ${expected.join(", ")}: ${text}`);
}

/** Throws unless every value of a row (after the engine's coercion) is of its column's kind. */
export function checkRowKinds(shape: RowShape<unknown>, row: Readonly<Record<string, unknown>>, text: string): void {
  const columns = shape.columns as Record<string, ColumnType>;
  for (const name of shape.names) {
    const type = columns[name]!;
    const value = row[name];
    if (value === null && type.endsWith("?")) continue;
    if (!isOfKind(value, type.replace("?", "") as Kind)) {
      throw new Error(`Column "${name}" should deliver ${type} but delivered ${describe(value)}: ${text}`);
    }
  }
}

function isOfKind(value: unknown, kind: Kind): boolean {
  if (kind === "string") return typeof value === "string";
  if (kind === "boolean") return typeof value === "boolean";
  if (kind === "bytes") return value instanceof Uint8Array && !Buffer.isBuffer(value);
  // Times are whole epoch milliseconds on both engines.
  if (kind === "integer" || kind === "time") return Number.isSafeInteger(value);
  return typeof value === "number" && Number.isFinite(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Buffer.isBuffer(value)) return "a Buffer";
  return `${typeof value} ${JSON.stringify(value)?.slice(0, 40)}`;
}

/** The names of a shape's columns of one kind (nullable or not): what an engine coerces. */
export function columnsOfKind(shape: RowShape<unknown>, kind: Kind): string[] {
  const columns = shape.columns as Record<string, ColumnType>;
  return shape.names.filter((name) => columns[name] === kind || columns[name] === `${kind}?`);
}

/**
 * What an engine remembers of one compiled statement's rows: the shape its columns were checked against, and
 * whether a row of it was checked yet. Both happen once per statement and shape, so a hot statement costs nothing.
 */
export class RowCheck {
  private shape: RowShape<unknown> | undefined;
  private rowChecked = false;

  /** Whether `shape` is a new shape for this statement (its columns are then checked by `check`). */
  isNew(shape: RowShape<unknown>): boolean {
    return shape !== this.shape;
  }

  /** Call with the rows about to be delivered, after the engine's coercion; `columnNames` is asked only when needed. */
  check(shape: RowShape<unknown>, columnNames: () => readonly string[], rows: readonly Readonly<Record<string, unknown>>[], text: string): void {
    if (shape !== this.shape) {
      checkColumnNames(shape, columnNames(), text);
      this.shape = shape;
      this.rowChecked = false;
    }
    if (!this.rowChecked && rows.length > 0) {
      checkRowKinds(shape, rows[0]!, text);
      this.rowChecked = true;
    }
  }
}

/** The row type a shape delivers (`ShapeRow<typeof RECORD_ROW>`). */
export type ShapeRow<S> = S extends RowShape<infer Row> ? Row : never;
