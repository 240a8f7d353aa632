#!/bin/bash
# The modules on the metadata seam on a real PostgreSQL (Debian's, a
# throwaway cluster started once for this file), migrated by `airlock admin
# metadata migrate` and reached as its service role, whom row-level
# security binds: tests/unit/test_meta_engines.c runs the same scenario
# (projects and commits, integrations, images, snapshots, a ledger whose
# export verifies, and on PostgreSQL another tenant seeing none of it) on
# meta.db and on PostgreSQL.
. "$(dirname "$0")/../lib.sh"
pg_server
su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE airlock OWNER airlock_owner" -c "REVOKE ALL ON DATABASE airlock FROM PUBLIC" \
	-c "GRANT CONNECT ON DATABASE airlock TO airlock"
run "$AL" --metadata "postgresql://airlock_owner@/airlock?host=$H&port=$P" admin metadata migrate --service-role airlock
is "$rc" 0 "the schema is migrated"

suite() { run env -u CMOCKA_MESSAGE_OUTPUT AIRLOCK_TEST_PG="$1" "$AIRLOCK_BUILD/tests/test_meta_engines"; }
suite "postgresql://airlock@/airlock?host=$H&port=$P"
is "$rc" 0 "the modules' scenario passes on meta.db and on PostgreSQL as the service role"
[ "$rc" = 0 ] || grep -Ev '^\[ +(RUN|OK) ' <<<"$out$err" | head -40 | sed 's/^/# /'
is "$(grep -c '^\[       OK \]' <<<"$out")" 2 "(both engines ran it)"

# on a schema before 3 (no ids from the database, no integrations' tables)
# the same scenario fails: the test can tell
su_sql -c "CREATE DATABASE old OWNER airlock_owner"
psql -h "$H" -p "$P" -U airlock_owner -d old -qtAX -v ON_ERROR_STOP=1 \
	-c "CREATE TABLE airlock_schema(version INTEGER PRIMARY KEY, applied TIMESTAMPTZ NOT NULL DEFAULT now())" \
	-c "INSERT INTO airlock_schema(version) VALUES (3)" >/dev/null
run env -u CMOCKA_MESSAGE_OUTPUT AIRLOCK_TEST_PG="postgresql://airlock_owner@/old?host=$H&port=$P" \
	"$AIRLOCK_BUILD/tests/test_meta_engines"
isnt_zero=$([ "$rc" != 0 ] && echo yes)
is "$isnt_zero" yes "without the schema, the PostgreSQL scenario fails"
done_testing
