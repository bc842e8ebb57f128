/**
 * Writes app/.server/db/rows.generated.ts, the row types and row shapes of every model of prisma/schema.prisma
 * (scripts/lib/row-types.ts, docs/decisions/0034). Offline: it reads the schema file and nothing else.
 *
 *   npm run db:types
 */
import { ROW_TYPES_PATH, writeRowTypes } from "./lib/row-types.ts";

writeRowTypes();
console.log(`wrote ${ROW_TYPES_PATH}`);
