#!/bin/bash
# Metadata on PostgreSQL (Debian's, a throwaway cluster started here, fsync
# on) against the embedded home's SQLite, side by side in the same run on
# the same machine (issue 19):
#   - commits per second with 8 writers at once (8 processes, each
#     committing a changed file to a project of its own, COMMITS each,
#     through the CLI: a process per commit, as a script would);
#   - run start through a node: `airlock serve` on each, a run of `true`
#     with "wait": true, the median of RUNS answers (the embedded home's
#     objects in both: no --blobs here).
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
echo "== metadata: 8 writers x $COMMITS commits, PostgreSQL vs SQLite" >&2
cs=$(commits_s sqlite)
cp=$(commits_s pg "$SVC")
row "commits/s, 8 writers: PostgreSQL vs SQLite" "$cp" "$cs" "$(ratio "$cp" "$cs")" ">= 0.5x (issue 19)"

run_start() { # run_start NAME [METADATA]: median ms of a waited run of true through airlock serve
	export AIRLOCK_HOME="$OUT/pgb/$1" AIRLOCK_METADATA="${2:-}"
	"$AL" admin principal create bench --role admin,author >/dev/null 2>&1 || true
	local tok u i s
	tok=$("$AL" admin token create bench 2>/dev/null)
	"$AL" serve --listen 127.0.0.1:0 >"$OUT/pgb/$1.serve" 2>"$OUT/pgb/$1.log" &
	SRV=$!
	for i in $(seq 200); do
		u=$(sed -n 's/^airlock serve: listening on //p' "$OUT/pgb/$1.serve")
		[ -n "$u" ] && break
		sleep 0.05
	done
	# the first run makes the image's and the workspace's layers: not counted
	command curl -sf -o /dev/null -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		--data-binary '{"argv":["true"],"wait":true}' "$u/api/projects/p1/runs"
	for i in $(seq "$RUNS"); do
		s=$(date +%s%N)
		command curl -sf -o /dev/null -H "Authorization: Bearer $tok" \
			-H 'Content-Type: application/json' \
			--data-binary '{"argv":["true"],"wait":true}' "$u/api/projects/p1/runs"
		ms "$s"
	done | median
	kill -TERM "$SRV"; wait "$SRV" 2>/dev/null || true
	SRV=
}
echo "== metadata: run start through airlock serve ($RUNS runs of true), PostgreSQL vs SQLite" >&2
rs=$(run_start sqlite)
rp=$(run_start pg "$SVC")
row "run start via serve, ms: PostgreSQL vs SQLite" "$rp" "$rs" "$(ratio "$rp" "$rs")" \
	"<= 1.5x (issue 19; objects local, no S3)"
