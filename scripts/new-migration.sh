#!/usr/bin/env bash
# Writes one migration per storage engine for the changes made to prisma/schema.prisma since the last commit:
#   prisma/migrations/<timestamp>_<name>/migration.sql              (SQLite)
#   prisma/postgresql/migrations/<timestamp>_<name>/migration.sql   (PostgreSQL, same folder name)
# and rewrites prisma/postgresql/schema.prisma, the PostgreSQL data model derived from prisma/schema.prisma, and
# app/.server/db/rows.generated.ts, the row types of the stores (docs/decisions/0034).
# Prisma 6.19's JavaScript schema engine cannot diff against a database or a shadow database when a driver
# adapter is configured, so this diffs the committed schema against the edited one, once as SQLite and once as
# PostgreSQL (docs/decisions/0001-prisma-js-engine-and-migrations.md, docs/decisions/0015-postgresql-migrations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: npm run migration:new -- <name>}"
[[ "$name" =~ ^[a-z0-9_]+$ ]] || { echo "name must be lowercase letters, digits and underscores" >&2; exit 1; }
# prisma.config.ts opens the database named by DATABASE_URL even for a diff of two schema files: a scratch file
# keeps this working in a fresh clone (no ./data yet) and away from any real database.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
git show HEAD:prisma/schema.prisma > "$scratch/previous.prisma"
npx tsx scripts/derive-postgres-schema.ts "$scratch/previous.prisma" "$scratch/previous-postgresql.prisma"
npx tsx scripts/derive-postgres-schema.ts prisma/schema.prisma "$scratch/next-postgresql.prisma"

diff_schemas() {
  DATABASE_URL="file:$scratch/diff.db" npx prisma migrate diff --from-schema-datamodel "$1" --to-schema-datamodel "$2" --script |
    grep -v '^Loaded Prisma config'
}
has_statements() { [ -n "$(printf '%s' "$1" | grep -v '^--' | tr -d '[:space:]')" ]; }

# Prisma declares a BigInt key the database numbers as a column SQLite does not number: written as SQLite's rowid.
sqlite="$(diff_schemas "$scratch/previous.prisma" prisma/schema.prisma | npx tsx scripts/lib/sqlite-autoincrement.ts prisma/schema.prisma)"
postgresql="$(diff_schemas "$scratch/previous-postgresql.prisma" "$scratch/next-postgresql.prisma")"
if ! has_statements "$sqlite" && ! has_statements "$postgresql"; then
  echo "prisma/schema.prisma has no changes since the last commit" >&2
  exit 1
fi
# Both folders get the migration, even when one engine has nothing to do, so that their histories stay in step.
has_statements "$postgresql" || postgresql="-- Nothing to change on PostgreSQL for this schema change."
has_statements "$sqlite" || sqlite="-- Nothing to change on SQLite for this schema change."

folder="$(date -u +%Y%m%d%H%M%S)_${name}"
for engine in sqlite postgresql; do
  if [ "$engine" = sqlite ]; then dir="prisma/migrations/$folder"; else dir="prisma/postgresql/migrations/$folder"; fi
  mkdir -p "$dir"
  printf '%s\n' "${!engine}" > "$dir/migration.sql"
  echo "wrote $dir/migration.sql"
done
cp "$scratch/next-postgresql.prisma" prisma/postgresql/schema.prisma
echo "wrote prisma/postgresql/schema.prisma"
npx tsx scripts/generate-row-types.ts
