#!/bin/bash
# The metadata seam's driver conformance suite (tests/unit/test_db.c) on a
# real PostgreSQL (Debian's, a throwaway cluster started once for this
# file), as a role that is no superuser and has no BYPASSRLS, so the
# row-level security of its tables binds it: the same SQL and the same
# answers as on SQLite (which make check runs in test_db itself), and the
# tenant of every transaction.  A superuser, whom row-level security does
# not bind, fails the tenant checks: the suite can tell.
. "$(dirname "$0")/../lib.sh"
pg_server
su_sql -c "CREATE ROLE airlock_test LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE conformance OWNER airlock_test"
URL="postgresql://airlock_test@/conformance?host=$H&port=$P"

suite() { # suite URL: test_db on SQLite and on the PostgreSQL at URL (cmocka's own output)
	run env -u CMOCKA_MESSAGE_OUTPUT AIRLOCK_TEST_PG="$1" "$AIRLOCK_BUILD/tests/test_db"
}
suite "$URL"
is "$rc" 0 "the driver conformance suite passes on SQLite and PostgreSQL (socket)"
[ "$rc" = 0 ] || grep -Ev '^\[ +(RUN|OK) ' <<<"$out$err" | head -40 | sed 's/^/# /'
is "$(grep -c '^\[       OK \]' <<<"$out")" 25 "(every test of the three groups ran and passed: 11 + 10 + 4)"

suite "postgresql://airlock_test@127.0.0.1:$P/conformance"
is "$rc" 0 "the suite passes over TCP too"

# the tenant checks bind a role that RLS binds, and nobody else
su_sql -c "CREATE ROLE airlock_su LOGIN SUPERUSER" -c "ALTER DATABASE conformance OWNER TO airlock_su"
suite "postgresql://airlock_su@/conformance?host=$H&port=$P"
isnt_zero=$([ "$rc" != 0 ] && echo yes)
is "$isnt_zero" yes "as a superuser (row-level security does not bind it), the tenant checks fail"
like "$(grep FAILED <<<"$out$err" | sort -u)" "^\[  FAILED  \] pg_tenants$" "(pg_tenants is the one that fails)"
done_testing
