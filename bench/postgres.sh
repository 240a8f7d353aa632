#!/bin/bash
# Metadata on PostgreSQL (Debian's, a throwaway cluster started here, fsync
# on) against the embedded home's SQLite, side by side in the same run on
# the same machine (issue 19):
#   - commits per second with 8 writers at once (8 processes, each
#     committing a changed file to a project of its own, COMMITS each, a
#     CLI process per commit, as a script would): the CLI on the database
#     itself (the admin path, `airlock --metadata`: each process opens its
#     own libpq connection), then the issue's deployment, the same writers
#     as clients of a node (`airlock serve`, CLI with --server);
#   - run start through a node: `airlock serve` on each, a run printing a
#     uuid (so its output is a new object) with "wait": true, the median of
#     RUNS answers: PostgreSQL with the objects in the home, then
#     PostgreSQL with --blobs on a Swift started here (where installed),
#     each against the embedded home.
# Prints rows in bench/run.sh's format, PostgreSQL in the first column and
# SQLite in the second; never fails on time.  bench/postgres.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=${1:-$root/bench/out}
COMMITS=${COMMITS:-25} RUNS=${RUNS:-15}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PGS="$root/tests/servers/postgres.sh"
rm -rf "$OUT/pg" "$OUT/pgb"; mkdir -p "$OUT/pgb"
chmod 711 "$OUT"
read -r PH PP < <("$PGS" start "$OUT/pg")
SRV=
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; "$PGS" stop "$OUT/pg"' EXIT
runuser -u postgres -- psql -h "$PH" -p "$PP" -qtAX -v ON_ERROR_STOP=1 \
	-c "CREATE ROLE airlock_owner LOGIN" -c "CREATE ROLE airlock LOGIN NOSUPERUSER NOBYPASSRLS" \
	-c "CREATE DATABASE airlock OWNER airlock_owner" -c "GRANT CONNECT ON DATABASE airlock TO airlock"
"$AL" --metadata "postgresql://airlock_owner@/airlock?host=$PH&port=$PP" admin metadata migrate \
	--service-role airlock >/dev/null
SVC="postgresql://airlock@/airlock?host=$PH&port=$PP"

# one home per engine, 8 projects each
setup() { # setup NAME [METADATA]
	local h="$OUT/pgb/$1"
	export AIRLOCK_HOME="$h" AIRLOCK_METADATA="${2:-}"
	"$AL" init >/dev/null 2>&1
	for w in 1 2 3 4 5 6 7 8; do
		mkdir -p "$OUT/pgb/$1-src$w"; echo 0 >"$OUT/pgb/$1-src$w/f"
		"$AL" project create "p$w" --from "$OUT/pgb/$1-src$w" >/dev/null
	done
}
writer() { # writer NAME W: COMMITS commits on pW
	local d="$OUT/pgb/$1-src$2" i
	for i in $(seq "$COMMITS"); do
		echo "$i" >"$d/f"
		"$AL" commit "p$2" "$d" --base "p$2" -m "c$i" >/dev/null || echo "commit failed" >&2
	done
}
commits_s() { # commits_s NAME [METADATA]: commits per second, 8 writers
	setup "$@"
	local s w pids=()
	s=$(date +%s%N)
	for w in 1 2 3 4 5 6 7 8; do writer "$1" "$w" & pids+=($!); done
	wait "${pids[@]}"
	awk -v n=$((8 * COMMITS)) -v ms="$(ms "$s")" 'BEGIN { printf "%.1f", n * 1000 / ms }'
}
# COMMITS=0: the homes only (the run start figures alone)
if [ "$COMMITS" -gt 0 ]; then
	echo "== metadata: 8 writers x $COMMITS commits, PostgreSQL vs SQLite" >&2
	cs=$(commits_s sqlite)
	cp=$(commits_s pg "$SVC")
	row "commits/s, 8 writers, CLI on the database: PostgreSQL vs SQLite" "$cp" "$cs" \
		"$(ratio "$cp" "$cs")" "(admin path: a libpq connection per process)"
else
	setup sqlite >/dev/null
	setup pg "$SVC" >/dev/null
fi

# the same 8 writers as clients of a node (airlock serve, the deployment
# issue 19 describes): the CLI with --server, each commit naming the head
# the previous one printed; the node keeps its database connections
serve_up() { # serve_up NAME: starts airlock serve on the home; sets SRV and U
	"$AL" serve --listen 127.0.0.1:0 >"$OUT/pgb/$1.serve" 2>>"$OUT/pgb/$1.log" &
	SRV=$!
	local i
	for i in $(seq 200); do
		U=$(sed -n 's/^airlock serve: listening on //p' "$OUT/pgb/$1.serve")
		[ -n "$U" ] && return 0
		sleep 0.05
	done
	echo "airlock serve did not start: $(cat "$OUT/pgb/$1.log")" >&2
	return 1
}
serve_down() { kill -TERM "$SRV"; wait "$SRV" 2>/dev/null || true; SRV=; }
bench_token() { # bench_token: a token of principal bench (admin, author)
	"$AL" admin principal create bench --role admin,author >/dev/null 2>&1 || true
	"$AL" admin token create bench 2>/dev/null
}
remote_writer() { # remote_writer NAME W
	local d="$OUT/pgb/$1-src$2" i b
	b=$(AIRLOCK_METADATA= "$AL" project head "p$2")
	for i in $(seq "$COMMITS"); do
		echo "r$i" >"$d/f"
		b=$(AIRLOCK_METADATA= "$AL" commit "p$2" "$d" --base "$b" -m "r$i") ||
			{ echo "commit failed" >&2; return 1; }
	done
}
commits_serve() { # commits_serve NAME [METADATA]: commits per second, 8 writers through a node
	export AIRLOCK_HOME="$OUT/pgb/$1" AIRLOCK_METADATA="${2:-}"
	local tok s w pids=()
	tok=$(bench_token)
	serve_up "$1"
	s=$(date +%s%N)
	for w in 1 2 3 4 5 6 7 8; do
		AIRLOCK_URL="$U" AIRLOCK_TOKEN="$tok" remote_writer "$1" "$w" & pids+=($!)
	done
	wait "${pids[@]}"
	awk -v n=$((8 * COMMITS)) -v ms="$(ms "$s")" 'BEGIN { printf "%.1f", n * 1000 / ms }'
	serve_down
}
if [ "$COMMITS" -gt 0 ]; then
	echo "== metadata: 8 writers x $COMMITS commits through airlock serve, PostgreSQL vs SQLite" >&2
	ss=$(commits_serve sqlite)
	sp=$(commits_serve pg "$SVC")
	row "commits/s, 8 writers through a node: PostgreSQL vs SQLite" "$sp" "$ss" "$(ratio "$sp" "$ss")" \
		">= 0.5x (issue 19)"
fi

# a run whose output is new each time (a fresh uuid): its record
# and its stdout are new objects, which a node with --blobs uploads
RUN_BODY='{"argv":["cat","/proc/sys/kernel/random/uuid"],"wait":true}'
run_start() { # run_start NAME [METADATA [BLOBS]]: median ms of a waited run (RUN_BODY) through airlock serve
	export AIRLOCK_HOME="$OUT/pgb/$1" AIRLOCK_METADATA="${2:-}" AIRLOCK_BLOBS="${3:-}"
	local tok u i s
	tok=$(bench_token)
	serve_up "$1"
	u=$U
	# the first run makes the image's and the workspace's layers: not counted
	command curl -sf -o /dev/null -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		--data-binary "$RUN_BODY" "$u/api/projects/p1/runs"
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N)
		command curl -sf -o /dev/null -H "Authorization: Bearer $tok" \
			-H 'Content-Type: application/json' \
			--data-binary "$RUN_BODY" "$u/api/projects/p1/runs" ||
			echo "bench: a run through the node failed (its time is not a run's): $OUT/pgb/$1.log" >&2
		ms "$s"
	done | median
	serve_down
}
echo "== metadata: run start through airlock serve ($RUNS runs printing a uuid), PostgreSQL vs SQLite" >&2
rs=$(run_start sqlite)
rp=$(run_start pg "$SVC")
row "run start via serve, ms: PostgreSQL vs SQLite" "$rp" "$rs" "$(ratio "$rp" "$rs")" \
	"<= 1.5x (issue 19; a run printing a uuid; objects local, no S3)"

# the issue's figure: a node on PostgreSQL and S3 (Debian's Swift with s3api
# on 127.0.0.1, started here: each run's new objects are uploaded before its
# record commits) against the embedded home
SW="$root/tests/servers/swift.sh"
if command -v swift-proxy-server >/dev/null && command -v memcached >/dev/null; then
	rm -rf "$OUT/pgswift"
	EP=$("$SW" start "$OUT/pgswift")
	trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; "$SW" stop "$OUT/pgswift"; "$PGS" stop "$OUT/pg"' EXIT
	export AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing
	command curl -sf -o /dev/null --netrc-file "$OUT/pgswift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
		-H "x-amz-content-sha256: $(printf '' | sha256sum | cut -c1-64)" -X PUT "$EP/bench"
	# every object in the bucket (inline=0), then the default: objects up
	# to 16 KiB in the database (architecture.md, "Small objects in the
	# database"), the larger ones in the bucket
	r4=$(run_start pg "$SVC" "s3://bench/pg0?endpoint=$EP&inline=0")
	r3=$(run_start pg "$SVC" "s3://bench/pg?endpoint=$EP")
	# where the runs' objects went
	keys() {
		command curl -sf --netrc-file "$OUT/pgswift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
			-H "x-amz-content-sha256: $(printf '' | sha256sum | cut -c1-64)" \
			"$EP/bench?list-type=2&max-keys=1000&prefix=$1%2F" | grep -o '<Key>' | wc -l
	}
	up0=$(keys pg0) up=$(keys pg)
	inl=$(runuser -u postgres -- psql -h "$PH" -p "$PP" -d airlock -qtAX \
		-c "SET airlock.tenant = 'default'" -c "SELECT count(*) FROM blobs_inline")
	row "run start via serve, ms: PostgreSQL+S3 (inline=0) vs SQLite" "$r4" "$rs" "$(ratio "$r4" "$rs")" \
		"(every object in the bucket: $up0 there)"
	row "run start via serve, ms: PostgreSQL+S3 vs SQLite" "$r3" "$rs" "$(ratio "$r3" "$rs")" \
		"<= 1.5x (issue 19: a node on PostgreSQL+S3 vs the embedded home; $inl objects in the database, $up in the bucket)"
else
	echo "== run start on PostgreSQL+S3 skipped (need OpenStack Swift and memcached)" >&2
fi
