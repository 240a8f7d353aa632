#!/bin/bash
# A hostile S3 server (tests/servers/hostile-s3.py: each bucket name one
# misbehaviour) against --blobs: listings that never end or repeat
# themselves, an XML "billion laughs" listing, 503 SlowDown forever with a
# Retry-After of a day, a 503 whose error document is 9 MiB, objects whose
# bytes are not their id.  Each is bounded (attempts, time, memory) and
# ends in a clear error with nothing stored; nothing wrong is accepted.
. "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || skip_all "needs python3"
HLOG="$T/hostile.log"
python3 "$SRC_ROOT/tests/servers/hostile-s3.py" "$HLOG" >"$T/hostile.port" 2>/dev/null &
HOSTILE=$!
trap 'kill "$HOSTILE"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do [ -s "$T/hostile.port" ] && break; sleep 0.05; done
HEP="http://127.0.0.1:$(cat "$T/hostile.port")"
export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_REGION AWS_DEFAULT_REGION
bucket() { echo "s3://$1/p?endpoint=$HEP"; }
# most METHOD BUCKET: the most requests of that method for any one key
most() { grep "^$1 /$2/" "$HLOG" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $1 }'; }
secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", b - a }'; }
"$AL" init >/dev/null
mkdir -p "$T/src"; echo one >"$T/src/a"; echo two >"$T/src/b"
"$AL" project create p --from "$T/src" >/dev/null
HEAD=$("$AL" project head p)

# ---- the unit-level caps (listings, sizes, error documents) on this server
ok "a 9 MiB listing, a 1 TiB object, a 9 MiB error document, endless/looping/empty listings, a billion-laughs listing: each refused or harmless (unit)" -- \
	env AIRLOCK_TEST_S3_HOSTILE="$HEP" "$AIRLOCK_BUILD/tests/test_odb"

# ---- listings: gc and the sync read the whole listing
run "$AL" --blobs "$(bucket loop)" gc --dry-run
ok "a listing that repeats its continuation token ends the pass" -- test "$rc" -ne 0
like "$err" "repeats its continuation token" "  saying why"
run "$AL" --blobs "$(bucket empty)" admin blobs sync
ok "truncated listing pages that bring no keys end the sync" -- test "$rc" -ne 0
like "$err" "a truncated listing page without keys under the prefix" "  saying why"
: >"$HLOG"
t0=$(date +%s.%N)
run "$AL" --blobs "$(bucket bomb)" gc --dry-run --json
is "$rc" 0 "a listing with a billion-laughs DOCTYPE is read without expanding anything"
is "$(printf '%s' "$out" | jq .blobs_young)" 0 "  and its entity 'keys' are no objects of ours"
ok "  quickly ($(secs "$t0") s)" -- test "$(secs "$t0")" -lt 10

# ---- 503 SlowDown forever, with Retry-After: 100000
mkdir -p "$T/new"; echo fresh >"$T/new/f"
before=$(store_state)
: >"$HLOG"
t0=$(date +%s.%N)
run "$AL" --blobs "$(bucket slow)" snapshot import "$T/new"
took=$(secs "$t0")
ok "an upload answered 503 SlowDown forever fails" -- test "$rc" -ne 0
like "$err" "HTTP 503 SlowDown \(after 5 attempts\)" "  after 5 attempts"
is "$(most PUT slow)" 5 "  (5 PUTs of an object, no more)"
ok "  within seconds: Retry-After is not obeyed (${took}s)" -- test "$took" -lt 20
is "$(store_state)" "$before" "  nothing was stored"

# ---- a 503 whose error document is 9 MiB: capped, and not retried
: >"$HLOG"
run "$AL" --blobs "$(bucket big503)" snapshot import "$T/new"
ok "a 503 with a 9 MiB error document fails" -- test "$rc" -ne 0
like "$err" "answer larger than 8388608 bytes" "  at the cap"
is "$(most PUT big503)" 1 "  at once: a body over the cap is not retried"
is "$(store_state)" "$before" "  nothing was stored"

# ---- objects whose bytes are not their id: read twice, then refused
sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "DELETE FROM objects"
find "$AIRLOCK_HOME/tenants/default/objects" -type f -delete
: >"$HLOG"
run "$AL" --blobs "$(bucket blobs)" snapshot export "$HEAD" "$T/out"
is "$rc" 4 "a cold export from a server that lies about every object fails as corrupt"
like "$err" "digest mismatch \(read twice\)" "  after reading it twice"
bad=$(printf '%s' "$err" | grep -o '[0-9a-f]\{64\} is corrupt' | cut -c1-64)
is "$(grep -c "^GET /blobs/p/default/$bad\$" "$HLOG")" 2 "  exactly twice: never retried into acceptance"
is "$(sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT count(*) FROM objects")" 0 \
	"  and nothing it sent is kept"
ok "  nor written out" -- bash -c "! grep -rqs 'not the object' '$T/out'"
done_testing
