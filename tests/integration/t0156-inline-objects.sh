#!/bin/bash
# Small objects in the database (architecture.md, "Small objects in the
# database"): a node on PostgreSQL with --blobs keeps the objects up to
# inline= bytes (16 KiB by default) as rows of blobs_inline, the tenant's
# by row-level security, and the larger ones in the bucket.  The object
# backends' conformance suite against the database alone and against the
# tier of both; a project's small files land in the database and not the
# bucket, its large file the reverse; a node with a cold store reads both
# back, verified; a corrupt row is detected and not served; inline=0 puts
# every object in the bucket; a bad inline= and inline= on a home of its
# own are refused.  And the sweeps across nodes (t0155's for the bucket):
# a pass deletes an unreferenced row past the grace period and records
# it, and a node that still holds the object puts it back before its
# commit names it.  Real PostgreSQL and Swift (s3api), throwaway servers.
. "$(dirname "$0")/../lib.sh"
pg_server
s3_server
trap '"$SW" stop "$T/swift"; "$PG" stop "$T/pg"; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
pg_metadata
db_sql() { DB=airlock su_sql -c "$1"; }
rows() { # the default tenant's inline object ids, sorted
	db_sql "SET airlock.tenant = 'default'; SELECT encode(id, 'hex') FROM blobs_inline ORDER BY 1"
}
keys() { # the bucket's object ids under PREFIX/default/, sorted
	s3 GET "blobs?list-type=2&max-keys=1000&prefix=$1%2Fdefault%2F" | grep -o '<Key>[^<]*</Key>' |
		sed "s|<Key>$1/default/||; s|</Key>||" | sort
}
sha() { sha256sum <"$1" | cut -c1-64; }
is_row() { rows | grep -qx "$1"; }
no_row() { ! is_row "$1"; }
in_bucket() { keys "$1" | grep -qx "$2"; }    # in_bucket PREFIX ID
not_in_bucket() { ! in_bucket "$1" "$2"; }

# ---- the conformance suite: the database alone, and the tier
env -u CMOCKA_MESSAGE_OUTPUT AIRLOCK_TEST_PG="$AIRLOCK_METADATA" AIRLOCK_TEST_S3="s3://blobs/conformance?endpoint=$EP" \
	AIRLOCK_TEST_S3_NETRC="$T/swift/netrc" "$AIRLOCK_BUILD/tests/test_odb" >"$T/odb.log" 2>&1
is "$?" 0 "the object backend conformance suite passes on the database and on the tier of it and S3"
grep -E '^\[  (FAILED|ERROR) |Failure|error' "$T/odb.log" | head -20 | sed 's/^/# /'
is "$(grep -c -e '^\[       OK \] test_pg_limits' -e '^\[       OK \] test_tier_sweep' "$T/odb.log")" 2 \
	"  (the database's group and the tier's ran)"

# ---- where a project's objects go
export AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP"
NA="$T/a" NB="$T/b"
run env AIRLOCK_HOME="$NA" "$AL" init
is "$rc" 0 "node A's home"
cp -a "$NA" "$NB"
S="$T/src"; mkdir -p "$S/d"
echo one >"$S/a.txt"; echo deep >"$S/d/f"
# names in other scripts: their tree nodes are rows (a control character in
# a name is refused at import, before any store: t0004)
mkdir -p "$S/é 文件"; echo utf8 >"$S/é 文件/ü.txt"
: >"$S/empty" # a row of no bytes
head -c 16384 /dev/urandom >"$S/edge.bin"  # exactly the threshold: the database's
head -c 16385 /dev/urandom >"$S/above.bin" # one byte more: the bucket's
run env AIRLOCK_HOME="$NA" "$AL" project create p --from "$S"
is "$rc" 0 "project created through node A"
local_ids() { sqlite3 "$1/tenants/default/objects.db" "SELECT lower(hex(id)) FROM objects" | sort; }
is "$(comm -23 <(local_ids "$NA") <(sort -u <(rows) <(keys team)) | wc -l)" 0 \
	"every object A stored is in the database or the bucket"
for f in a.txt d/f edge.bin; do
	id=$(sha "$S/$f")
	ok "  $f (up to 16 KiB) is a row of the database" -- is_row "$id"
	ok "  and not in the bucket" -- not_in_bucket team "$id"
done
ABOVE=$(sha "$S/above.bin")
ok "  above.bin (16 KiB + 1) is in the bucket" -- in_bucket team "$ABOVE"
ok "  and not a row" -- no_row "$ABOVE"
is "$(psql -qtAX "$AIRLOCK_METADATA" -c "SELECT count(*) FROM blobs_inline")" 0 \
	"the service role's session without a tenant sees no row"
is "$(psql -qtAX "$AIRLOCK_METADATA" -c "BEGIN; SET LOCAL airlock.tenant = 'other';
	SELECT count(*) FROM blobs_inline; COMMIT;")" 0 "  nor does another tenant's"

# ---- a node with a cold store reads both back, verified
HEAD=$(AIRLOCK_HOME=$NA "$AL" project head p)
run env AIRLOCK_HOME="$NB" "$AL" snapshot export "$HEAD" "$T/out"
is "$rc" 0 "node B, its store empty, exports the project"
ok "  exactly: rows and bucket objects alike" -- diff -r "$S" "$T/out"
ok "  and keeps what it fetched" -- test "$(local_ids "$NB" | wc -l)" -gt 3

# ---- a corrupt row is detected, never served
A_ID=$(sha "$S/a.txt")
db_sql "SET airlock.tenant = 'default'; UPDATE blobs_inline SET bytes = 'evil bytes' WHERE id = '\\x$A_ID'"
NC="$T/c"
cp -a "$NA" "$NC"
sqlite3 "$NC/tenants/default/objects.db" "DELETE FROM objects"
find "$NC/tenants/default/objects" -type f -delete
run env AIRLOCK_HOME="$NC" "$AL" snapshot export "$HEAD" "$T/out2"
is "$rc" 4 "an export of a corrupt row fails as corrupt (exit 4)"
like "$err" "$A_ID is corrupt in the database: digest mismatch" "  naming the object"
ok "  and its bytes are not served" -- bash -c "! grep -rqs 'evil bytes' '$T/out2'"
is "$(sqlite3 "$NC/tenants/default/objects.db" "SELECT count(*) FROM objects WHERE lower(hex(id)) = '$A_ID'")" 0 \
	"  nor kept"
# the listing a sync compares with is of rows that are their object (the
# server hashes them): the corrupt row is not among it, so it is written again
run env AIRLOCK_HOME="$NA" "$AL" admin blobs sync
is "$rc" 0 "a node that holds it uploads again what the tier lacks (admin blobs sync)"
is "$(db_sql "SET airlock.tenant = 'default'; SELECT encode(sha256(bytes), 'hex') FROM blobs_inline WHERE id = '\\x$A_ID'" | tail -1)" \
	"$A_ID" "  the corrupt row is written again with the object's bytes"
run env AIRLOCK_HOME="$NC" "$AL" snapshot export "$HEAD" "$T/out3"
is "$rc" 0 "  and the cold node reads it"
ok "  whole" -- diff -r "$S" "$T/out3"
db_sql "SET airlock.tenant = 'default'; DELETE FROM blobs_inline WHERE id = '\\x$A_ID'"
run env AIRLOCK_HOME="$NA" "$AL" admin blobs sync
is "$rc" 0 "a row lost from the database"
ok "  is put back by sync" -- is_row "$A_ID"
rm -rf "$T/out4"
run env AIRLOCK_HOME="$NC" "$AL" snapshot export "$HEAD" "$T/out4"
is "$rc" 0 "and the cold node reads it"
ok "  whole" -- diff -r "$S" "$T/out4"

# ---- inline=0: every object in the bucket; bad settings are refused
N0="$T/n0"
cp -a "$NA" "$N0"
mkdir -p "$T/s0" && echo "a small file, to the bucket" >"$T/s0/small"
SMALL=$(sha "$T/s0/small")
run env AIRLOCK_HOME="$N0" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP&inline=0" "$AL" snapshot import "$T/s0"
is "$rc" 0 "an import with inline=0"
ok "  puts its small file in the bucket" -- in_bucket team "$SMALL"
ok "  not in the database" -- no_row "$SMALL"
sqlite3 "$N0/tenants/default/objects.db" "DELETE FROM objects"
find "$N0/tenants/default/objects" -type f -delete
rm -rf "$T/out0"
run env AIRLOCK_HOME="$N0" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP&inline=0" "$AL" snapshot export "$HEAD" "$T/out0"
is "$rc" 0 "a node with inline=0 and a cold store still reads the rows other nodes wrote"
ok "  exactly" -- diff -r "$S" "$T/out0"
for bad in "inline=abc" "inline=-1" "inline=1048577" "inline="; do
	run env AIRLOCK_HOME="$N0" AIRLOCK_BLOBS="s3://blobs/team?endpoint=$EP&$bad" "$AL" snapshot import "$T/s0"
	like "$rc:$err" "^[1-9].*inline= takes a size in bytes, 0 to 1048576" "--blobs …&$bad is refused"
done
NH="$T/home"
run env -u AIRLOCK_METADATA AIRLOCK_HOME="$NH" AIRLOCK_BLOBS= "$AL" init
run env -u AIRLOCK_METADATA AIRLOCK_HOME="$NH" AIRLOCK_BLOBS="s3://blobs/h?endpoint=$EP&inline=100" \
	"$AL" snapshot import "$T/s0"
like "$rc:$err" "^[1-9].*inline= keeps small objects in the PostgreSQL metadata database" \
	"inline= on a home whose metadata is its own is refused"
is "$(keys h | wc -l)" 0 "  with nothing stored"
run env -u AIRLOCK_METADATA AIRLOCK_HOME="$NH" AIRLOCK_BLOBS="s3://blobs/h?endpoint=$EP" \
	"$AL" snapshot import "$T/s0"
is "$rc" 0 "without it, such a home puts every object in the bucket"
ok "  (the small file there)" -- in_bucket h "$SMALL"

# ---- sweeps across nodes: A's pass deletes a row B still holds; B's
# commit puts it back before it names it
AIRLOCK_HOME=$NB "$AL" gc retention 0 >/dev/null
mkdir -p "$T/x" && echo "swept from the database by A, still held by B" >"$T/x/x1"
X=$(sha "$T/x/x1")
AIRLOCK_HOME=$NB "$AL" snapshot import "$T/x" >/dev/null
ok "B's import put the object in the database" -- is_row "$X"
LATER=$(($(date +%s) + 2 * 86400))
run env AIRLOCK_HOME="$NA" AIRLOCK_NOW=$LATER "$AL" gc --json
is "$rc" 0 "node A's gc two days on"
ok "  deletes the unreferenced row" -- no_row "$X"
ok "  counted with the bucket's ($(jq -r .blobs_objects <<<"$out"))" -- test "$(jq -r .blobs_objects <<<"$out")" -ge 1
is "$(db_sql "SELECT count(*) FROM blobs_swept WHERE id = '\\x$X'")" 1 "  and records it among what the pass deleted"
ok "  the project's objects stay" -- is_row "$(sha "$S/d/f")"
HEAD0=$(AIRLOCK_HOME=$NB "$AL" project head p)
rm -rf "$T/w" && AIRLOCK_HOME=$NB "$AL" snapshot export "$HEAD0" "$T/w" >/dev/null
cp "$T/x/x1" "$T/w/x1"
run env AIRLOCK_HOME="$NB" "$AL" commit p "$T/w" --base "$HEAD0" -m "the swept bytes again"
is "$rc" 0 "B commits a tree holding the swept object's bytes (deduped against its store)"
ok "  the catch-up put the row back" -- is_row "$X"
run env AIRLOCK_HOME="$NA" "$AL" snapshot export "$(AIRLOCK_HOME=$NA "$AL" project head p)" "$T/outa"
is "$rc" 0 "A exports the new head"
ok "  with the object's bytes" -- cmp "$T/x/x1" "$T/outa/x1"
run env AIRLOCK_HOME="$NA" AIRLOCK_NOW=$LATER "$AL" gc --json
ok "a later pass keeps what a head names" -- is_row "$X"
done_testing
