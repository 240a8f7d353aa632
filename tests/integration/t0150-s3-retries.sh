#!/bin/bash
# --blobs: transient failures of the object store are retried, permanent
# ones are not, and corrupt answers are never accepted.  A real S3 server
# (Swift with s3api, started once for this file) behind a fault-injecting
# proxy (tests/servers/fault-proxy.py) that resets connections mid-upload,
# closes them unanswered, answers 503 SlowDown / 500 / 403, or flips a byte
# of an answer, as its plan says, and logs every request it saw.
. "$(dirname "$0")/../lib.sh"
s3_server
fault_proxy
B="s3://blobs/r?endpoint=$PEP"
# puts ID: the PUTs of ID the proxy saw, one "FATE STATUS" a line
puts() { awk -v k="/blobs/r/default/$1" '$1 == "PUT" && $2 == k { print $3, $4 }' "$LOG"; }
# most_puts: the most PUTs the proxy saw for any one key
most_puts() { awk '$1 == "PUT" { print $2 }' "$LOG" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $1 }'; }
gets() { awk -v k="/blobs/r/default/$1" '$1 == "GET" && $2 == k { print $3, $4 }' "$LOG"; }
sha() { sha256sum <"$1" | cut -c1-64; }
local_has() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" \
		"SELECT count(*) FROM objects WHERE lower(hex(id)) = '$1'"
}
"$AL" init >/dev/null

# ---- transient faults mid-upload: retried, each object lands once
S="$T/src"; mkdir -p "$S"
head -c 3000000 /dev/urandom >"$S/big.bin" # a loose object, several MiB on the wire
for i in 1 2 3 4 5 6; do echo "file $i" >"$S/f$i"; done
BIG=$(sha "$S/big.bin")
printf 'PUT reset\nPUT close\nPUT 503\nPUT 500\nPUT 502\nPUT 504\n' >"$PLAN"
# the first PUT to start is big.bin's or another's: which one meets which
# fault does not matter, that each is retried does
run "$AL" --blobs "$B" snapshot import "$S"
is "$rc" 0 "an import whose uploads meet a reset, a closed connection, 503, 500, 502 and 504 succeeds"
is "$(cat "$PLAN")" "" "  (every fault was met)"
is "$(grep -c '^PUT .* \(reset\|close\|50[0-9]\) ' "$LOG")" 6 "  six uploads failed at the proxy"
ok "  one of them was reset mid-body" -- grep -q '^PUT .* reset -$' "$LOG"
is "$(awk '$1 == "PUT" && $4 == 200 { print $2 }' "$LOG" | sort | uniq -d | wc -l)" 0 \
	"  no object was stored twice (one 200 per key)"
is "$(awk '$1 == "PUT" && $4 == 200' "$LOG" | wc -l)" \
	"$(sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT count(*) FROM objects")" \
	"  and each object the local store holds once"
is "$(puts "$BIG" | tail -1)" "pass 200" "  big.bin's last upload went through"
is "$(local_has "$BIG")" 1 "  the local store holds it once"
SNAP=$(printf '%s' "$out" | tail -1)

# ---- a permanent failure: bounded retries, a clear error, nothing stored
: >"$LOG"
mkdir -p "$T/new"; echo "never stored" >"$T/new/n"
N=$(sha "$T/new/n")
before=$(store_state)
echo "always PUT 503" >"$PLAN"
start=$(date +%s)
run "$AL" --blobs "$B" snapshot import "$T/new"
took=$(( $(date +%s) - start ))
ok "an upload the store always answers 503 fails" -- test "$rc" -ne 0
like "$err" "s3: PUT failed: HTTP 503 SlowDown \(after 5 attempts\)" "  saying what and how often"
# the file's and its tree node's uploads run at once: the first to spend
# its 5 attempts fails the batch and abandons the other
is "$(most_puts)" 5 "  5 attempts in all for the object that failed it, none more"
ok "  with backoff, within a bounded time (${took}s)" -- test "$took" -lt 30
is "$(store_state)" "$before" "  and nothing was recorded as stored"
is "$(local_has "$N")" 0 "  (the object is not in the local index)"

# ---- a 4xx is not retried
: >"$LOG"
echo "always PUT 403" >"$PLAN"
run "$AL" --blobs "$B" snapshot import "$T/new"
is "$rc" 10 "a 403 fails as unauthorized"
is "$(most_puts)" 1 "  after one attempt: a 4xx is never retried"
echo "always PUT 400" >"$PLAN"
: >"$LOG"
run "$AL" --blobs "$B" snapshot import "$T/new"
is "$(most_puts)" 1 "  nor is a 400"
is "$(store_state)" "$before" "  and nothing was stored"
: >"$PLAN"
run "$AL" --blobs "$B" snapshot import "$T/new"
is "$rc" 0 "once the store recovers the import succeeds"

# ---- reads: a transient fault is retried; a corrupt answer is read once more, then refused
cold() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "DELETE FROM objects"
	find "$AIRLOCK_HOME/tenants/default/objects" -type f -delete
}
cold; : >"$LOG"
printf 'GET 503\nGET reset\nGET close\n' >"$PLAN"
run "$AL" --blobs "$B" snapshot export "$SNAP" "$T/out1"
is "$rc" 0 "a cold export through 503, a reset and a closed connection succeeds"
ok "  with the files exactly" -- diff -r "$S" "$T/out1"
is "$(cat "$PLAN")" "" "  (every fault was met)"
cold; : >"$LOG"
printf 'GET corrupt\n' >"$PLAN"
run "$AL" --blobs "$B" snapshot export "$SNAP" "$T/out2"
is "$rc" 0 "a corrupted answer read once more, verified, passes"
ok "  with the files exactly" -- diff -r "$S" "$T/out2"
is "$(grep -c '^GET .* corrupt ' "$LOG")" 1 "  (one answer was corrupted)"
cold; : >"$LOG"
echo "always GET corrupt" >"$PLAN"
before=$(store_state)
run "$AL" --blobs "$B" snapshot export "$SNAP" "$T/out3"
is "$rc" 4 "an object whose every answer is corrupt fails as corrupt (exit 4)"
like "$err" "is corrupt in the object store: digest mismatch \(read twice\)" "  clearly"
bad=$(printf '%s' "$err" | grep -o '[0-9a-f]\{64\} is corrupt' | cut -c1-64)
is "$(gets "$bad" | wc -l)" 2 "  after exactly two reads: never retried into acceptance"
is "$(local_has "$bad")" 0 "  and its bytes are not kept"
is "$(store_state)" "$before" "  nothing was stored"
: >"$PLAN"
done_testing
