#!/usr/bin/env bash
# Writes prisma/migrations/<timestamp>_<name>/migration.sql for the changes made to
# prisma/schema.prisma since the last commit. Prisma 6.19's JavaScript schema
# engine cannot diff against a database or a shadow database when a driver
# adapter is configured, so this diffs the committed schema against the edited
# one (see docs/decisions/0001-prisma-js-engine-and-migrations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: npm run migration:new -- <name>}"
[[ "$name" =~ ^[a-z0-9_]+$ ]] || { echo "name must be lowercase letters, digits and underscores" >&2; exit 1; }
previous="$(mktemp --suffix=.prisma)"
# prisma.config.ts opens the database named by DATABASE_URL even for a diff of two schema files: a scratch file
# keeps this working in a fresh clone (no ./data yet) and away from any real database.
scratch="$(mktemp -d)"
trap 'rm -rf "$previous" "$scratch"' EXIT
git show HEAD:prisma/schema.prisma > "$previous"
dir="prisma/migrations/$(date -u +%Y%m%d%H%M%S)_${name}"
sql="$(DATABASE_URL="file:$scratch/diff.db" npx prisma migrate diff --from-schema-datamodel "$previous" --to-schema-datamodel prisma/schema.prisma --script | grep -v '^Loaded Prisma config')"
if [ -z "$(printf '%s' "$sql" | grep -v '^--' | tr -d '[:space:]')" ]; then
  echo "prisma/schema.prisma has no changes since the last commit" >&2
  exit 1
fi
mkdir -p "$dir"
printf '%s\n' "$sql" > "$dir/migration.sql"
echo "wrote $dir/migration.sql"
