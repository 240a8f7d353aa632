#!/bin/bash
# The same tests on both engines: integration tests written for the embedded
# home run unchanged with their metadata on a real PostgreSQL (each in a
# fresh database, migrated, reached as the service role through
# AIRLOCK_METADATA): commit strategies and conflicts, drafts, concurrent
# writers on one head (none lost, every conflict loud), runs and their
# attempts, bundles, principals, grants and tokens.  (Tests that open
# meta.db or airlock.db with sqlite3 to tamper with them stay SQLite's;
# t0144 is the PostgreSQL-specific one.)  Each runs twice: on PostgreSQL,
# then on PostgreSQL with its objects on S3 (Debian's Swift, --blobs; the
# small ones in the database, the default): the issue's conformance on
# both engines.
. "$(dirname "$0")/../lib.sh"
need_userns
pg_server
s3_server
trap '"$SW" stop "$T/swift"; "$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
su_sql -c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS"
D=$(cd "$(dirname "$0")" && pwd)
n=0
for t in t0010-strategies t0011-drafts t0012-concurrency t0015-bundles t0040-run \
	t0064-run-attempts t0125-people; do
	# each on PostgreSQL, then on PostgreSQL with its objects on S3
	for blobs in "" s3; do
		n=$((n + 1))
		db="suite$n"
		on="PostgreSQL${blobs:++S3}"
		su_sql -c "CREATE DATABASE $db OWNER airlock_owner" -c "GRANT CONNECT ON DATABASE $db TO airlock"
		"$AL" --metadata "postgresql://airlock_owner@/$db?host=$H&port=$P" admin metadata migrate \
			--service-role airlock >/dev/null
		AIRLOCK_METADATA="postgresql://airlock@/$db?host=$H&port=$P" \
			AIRLOCK_BLOBS="${blobs:+s3://blobs/$db?endpoint=$EP}" bash "$D/$t.sh" >"$T/$t.tap" 2>"$T/$t.err"
		rc=$?
		plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$T/$t.tap")
		passed=$(grep -c '^ok ' "$T/$t.tap")
		is "$rc:$passed" "0:$plan" "$t passes on $on ($passed of $plan)"
		[ "$rc" = 0 ] || grep -A3 '^not ok' "$T/$t.tap" | head -20 | sed 's/^/# /'
		# and it did run there: its projects are rows of the database
		is "$(psql -h "$H" -p "$P" -U airlock_owner -d "$db" -qtAX -c "BEGIN;
			ALTER TABLE ledger NO FORCE ROW LEVEL SECURITY;
			SELECT count(*) > 0 FROM ledger; ROLLBACK;")" t "…its ledger is in the database"
		[ -n "$blobs" ] || continue
		keys=$(s3 GET "blobs?list-type=2&max-keys=1000&prefix=$db%2F" | grep -o '<Key>' | wc -l)
		rows=$(psql -h "$H" -p "$P" -U airlock_owner -d "$db" -qtAX -c "BEGIN;
			ALTER TABLE blobs_inline NO FORCE ROW LEVEL SECURITY;
			SELECT count(*) FROM blobs_inline; ROLLBACK;")
		# the small ones in the database (up to 16 KiB, the default), the others in the bucket
		ok "…its objects are in the database and the bucket ($rows, $keys)" -- test "$rows" -gt 0 -a "$((rows + keys))" -gt 0
	done
done
done_testing
