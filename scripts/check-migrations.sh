#!/usr/bin/env bash
# Fails when the entities and the migrations disagree: migrates a scratch
# database, asks TypeORM to generate a migration, and expects "No changes".
# Needs a build (dist/) and a Postgres that may create databases.
set -euo pipefail
cd "$(dirname "$0")/.."
admin=${TEST_PG_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
db="mw_schema_check_$$"
url="${admin%/*}/$db"
cleanup() { psql "$admin" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true; }
trap cleanup EXIT
DATABASE_URL="$url" LOG_LEVEL=silent node dist/cli.js migrate >/dev/null
DATABASE_URL="$url" npx typeorm -d dist/database/data-source.js migration:generate --check --dryrun src/database/migrations/SchemaCheck
