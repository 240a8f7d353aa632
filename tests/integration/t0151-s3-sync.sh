#!/bin/bash
# airlock --blobs … admin blobs sync: a home that stored objects before
# --blobs was used uploads them.  Against a real S3 server (Swift with
# s3api), through the fault-injecting proxy to cut a sync short: it is
# idempotent, resumable, shows progress on a terminal and reports in JSON.
. "$(dirname "$0")/../lib.sh"
s3_server
fault_proxy
B="s3://blobs/m?endpoint=$PEP"
TTY="python3 $SRC_ROOT/tests/helpers/ttyrun.py"
keys() {
	s3 GET "blobs?list-type=2&prefix=m%2Fdefault%2F" | grep -o '<Key>[^<]*</Key>' |
		sed 's|<Key>m/default/||; s|</Key>||' | sort
}
local_ids() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT lower(hex(id)) FROM objects" | sort
}
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"
for i in $(seq 40); do echo "file $i" >"$S/f$i"; done
head -c 900000 /dev/urandom >"$S/big.bin"
"$AL" project create p --from "$S" >/dev/null # no --blobs: nothing in the bucket
N=$(local_ids | wc -l)
is "$(keys | wc -l)" 0 "(a home with $N objects and an empty bucket)"

run "$AL" admin blobs sync
is "$rc" 2 "without --blobs the sync is refused (exit 2)"
like "$err" "pass --blobs" "  saying what is missing"
run env AIRLOCK_URL=http://127.0.0.1:1 "$AL" --blobs "$B" admin blobs sync
is "$rc" 2 "with --server it is refused: it works on a local home"

run "$AL" --blobs "$B" admin blobs sync
is "$rc" 0 "admin blobs sync uploads"
is "$out" "objects $N, in the bucket already 0, uploaded $N ($(sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" 'SELECT sum(size) FROM objects') bytes)" \
	"  every object, saying how many and how much"
is "$(comm -3 <(local_ids) <(keys) | wc -l)" 0 "  the bucket holds exactly the local store's objects"
: >"$LOG"
run "$AL" --blobs "$B" admin blobs sync --json
is "$rc" 0 "a second sync"
is "$(printf '%s' "$out" | jq -c .)" "{\"tenant\":\"default\",\"objects\":$N,\"present\":$N,\"uploaded\":0,\"bytes\":0}" \
	"  uploads nothing (--json)"
is "$(grep -c '^PUT' "$LOG")" 0 "  (no PUT was sent)"

# ---- cut short, then resumed
for i in $(seq 200); do echo "more $i" >"$S/g$i"; done
"$AL" snapshot import "$S" >/dev/null
N2=$(local_ids | wc -l)
MISSING=$((N2 - N))
{ for i in $(seq 64); do echo "PUT pass"; done; echo "always PUT 503"; } >"$PLAN"
: >"$LOG"
run "$AL" --blobs "$B" admin blobs sync
ok "a sync whose store fails after the first batch fails" -- test "$rc" -ne 0
like "$err" "after 64 objects uploaded: s3: PUT failed: HTTP 503 SlowDown \(after 5 attempts\)" \
	"  saying how far it got and why"
is "$(keys | wc -l)" $((N + 64)) "  the first batch of 64 is in the bucket"
: >"$PLAN"
: >"$LOG"
run "$AL" --blobs "$B" admin blobs sync --json
is "$rc" 0 "run again, it resumes"
is "$(printf '%s' "$out" | jq -c '[.objects, .present, .uploaded]')" "[$N2,$((N + 64)),$((MISSING - 64))]" \
	"  uploading only what the bucket still lacks"
is "$(awk '$1 == "PUT" && $4 == 200' "$LOG" | wc -l)" $((MISSING - 64)) "  (one PUT for each)"
is "$(comm -3 <(local_ids) <(keys) | wc -l)" 0 "  and the bucket holds every object"

# ---- a cold node reads what the sync uploaded
HEAD=$("$AL" project head p)
sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "DELETE FROM objects"
find "$AIRLOCK_HOME/tenants/default/objects" -type f -delete
run "$AL" --blobs "$B" snapshot export "$HEAD" "$T/out"
is "$rc" 0 "a cold store exports the synced project from the bucket"
ok "  exactly" -- bash -c "diff -r <(cd '$T/out' && find . -name 'f*' -o -name big.bin | sort | xargs sha256sum) <(cd '$S' && find . -name 'f*' -o -name big.bin | sort | xargs sha256sum)"

# ---- progress on a terminal, never in a pipe
"$AL" admin tenant create other >/dev/null
mkdir -p "$T/o"; for i in $(seq 70); do echo "theirs $i" >"$T/o/t$i"; done
"$AL" --tenant other snapshot import "$T/o" >/dev/null
run "$AL" --tenant other --blobs "$B" admin blobs sync --json
ok "(a tenant's sync in a pipe)" -- test "$rc" -eq 0
ok "  shows no progress when stderr is not a terminal" -- bash -c "! grep -q 'blobs sync:' <<<'$err'"
"$AL" admin tenant create third >/dev/null
"$AL" --tenant third snapshot import "$T/o" >/dev/null
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" --tenant third --blobs "$B" admin blobs sync)
like "$out" "blobs sync: 64 objects, [0-9.]+ MiB uploaded" "on a terminal it shows progress on stderr"
like "$out" "uploaded 7[0-9] " "  then the summary"
done_testing
