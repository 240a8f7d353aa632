#!/bin/bash
# airlock --blobs … gc: the bucket's copies of objects nothing retains are
# deleted once the bucket has held them longer than the grace period (by
# S3's LastModified against the real clock); retained objects, young ones
# (another node's upload whose metadata may not be committed yet), other
# tenants' keys and keys that are not objects stay.  Against a real S3
# server (Swift with s3api); a failing bucket (the fault proxy) fails the
# pass with nothing swept locally.  AIRLOCK_NOW moves the clock: no sleeps.
. "$(dirname "$0")/../lib.sh"
s3_server
fault_proxy
B="s3://blobs/g?endpoint=$EP"
NOW=$(date +%s)
keys() { # keys PREFIX: the bucket's keys under PREFIX/, without it, sorted
	s3 GET "blobs?list-type=2&prefix=$(printf %s "$1/" | sed 's|/|%2F|g')" |
		grep -o '<Key>[^<]*</Key>' | sed "s|<Key>$1/||; s|</Key>||" | sort
}
local_ids() {
	sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "SELECT lower(hex(id)) FROM objects" | sort
}
# put_raw KEY FILE: an upload of the test's own (another node's, say)
put_raw() {
	command curl -sf -o /dev/null --netrc-file "$T/swift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
		-H "x-amz-content-sha256: $(sha256sum <"$2" | cut -c1-64)" -T "$2" "$EP/blobs/$1"
}
field() { jq -r ".$1"; }
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo a >"$S/a"; echo b >"$S/b"
"$AL" --blobs "$B" project create p --from "$S" >/dev/null
X="$T/x"; mkdir -p "$X"; echo "only in a snapshot 1" >"$X/x1"; echo "only in a snapshot 2" >"$X/x2"
"$AL" --blobs "$B" snapshot import "$X" >/dev/null
ALL=$(local_ids)
echo "fresh from another node" >"$T/fresh"
FRESH=$(sha256sum <"$T/fresh" | cut -c1-64)
put_raw "g/default/$FRESH" "$T/fresh"
put_raw "g/default/not-an-object" "$T/fresh"
put_raw "g/other/$FRESH" "$T/fresh"
put_raw "h/default/$FRESH" "$T/fresh"
is "$(keys g/default | wc -l)" $(( $(echo "$ALL" | wc -l) + 2 )) \
	"(the bucket: the home's objects, another node's, a stray key)"
"$AL" gc retention 0 >/dev/null

# ---- young: swept locally, kept in the bucket
run env AIRLOCK_NOW=$((NOW + 3600)) "$AL" --blobs "$B" gc --json
is "$rc" 0 "gc an hour on, with --blobs"
HEADOBJ=$(local_ids) # what is retained: the head's
UNREF=$(comm -23 <(echo "$ALL") <(echo "$HEADOBJ"))
NU=$(echo "$UNREF" | wc -l)
ok "  sweeps the objects only an expired snapshot names locally ($NU)" -- \
	test "$(echo "$out" | field objects)" = "$NU" -a "$NU" -ge 3
is "$(echo "$out" | field blobs_objects)" 0 "  but deletes nothing from the bucket: all of it is younger than a day"
is "$(echo "$out" | field blobs_young)" $((NU + 1)) "  counting the $NU and another node's upload as young"
is "$(comm -12 <(echo "$UNREF") <(keys g/default) | wc -l)" "$NU" "  (they are in the bucket still)"

# ---- past the grace period: a dry run, then the pass
LATER=$((NOW + 2 * 86400))
run env AIRLOCK_NOW=$LATER "$AL" --blobs "$B" gc --dry-run --json
is "$(echo "$out" | field blobs_objects)" $((NU + 1)) "a dry run two days on would delete $((NU + 1)) from the bucket"
is "$(comm -12 <(echo "$UNREF") <(keys g/default) | wc -l)" "$NU" "  and deletes nothing"
run env AIRLOCK_NOW=$LATER "$AL" gc --json
is "$(echo "$out" | field blobs_objects)" 0 "gc without --blobs leaves the bucket alone"
is "$(comm -12 <(echo "$UNREF") <(keys g/default) | wc -l)" "$NU" "  (the keys are there)"

# a failing bucket fails the pass, with nothing swept
"$AL" snapshot import "$X" >/dev/null # stored locally again, unretained
before=$(store_state)
echo "always DELETE 503" >"$PLAN"
run env AIRLOCK_NOW=$LATER "$AL" --blobs "s3://blobs/g?endpoint=$PEP" gc
ok "a bucket that fails its DELETEs fails the pass" -- test "$rc" -ne 0
like "$err" "gc: the bucket: s3: DELETE failed: HTTP 503 SlowDown \(after 5 attempts\)" "  saying so"
is "$(store_state)" "$before" "  and nothing was swept locally"
: >"$PLAN"
is "$(sqlite3 "$AIRLOCK_HOME/tenants/default/meta.db" "SELECT count(*) FROM blobs_swept WHERE gen = 1")" \
	$((NU + 1)) "  what it meant to delete is recorded all the same (sweep generation 1)"

run env AIRLOCK_NOW=$LATER "$AL" --blobs "$B" gc --json
is "$rc" 0 "gc two days on, with --blobs"
is "$(echo "$out" | field blobs_objects)" $((NU + 1)) "  deletes the $NU and another node's upload from the bucket"
is "$(comm -12 <(echo "$UNREF") <(keys g/default) | wc -l)" 0 "  they are gone from it"
is "$(keys g/default | grep -c "$FRESH")" 0 "  another node's old upload too"
is "$(comm -3 <(echo "$HEADOBJ") <(keys g/default | grep -v not-an-object) | wc -l)" 0 \
	"  the bucket holds exactly what the head names"
is "$(keys g/default | grep -c not-an-object)" 1 "  a key that is not an object is not touched"
is "$(keys g/other | wc -l)" 1 "  nor another tenant's"
is "$(keys h/default | wc -l)" 1 "  nor another prefix's"
meta() { sqlite3 "$AIRLOCK_HOME/tenants/default/meta.db" "$1"; }
is "$(meta "SELECT value FROM settings WHERE name = 'blobs_gen'")" 2 \
	"  the tenant's sweep generation is 2 (the failed pass's was 1)"
is "$(meta "SELECT count(*) FROM blobs_swept WHERE gen = 2")" $((NU + 1)) \
	"  with the $((NU + 1)) ids it deleted recorded under it (gc_sweeps.c)"

# ---- the grace period, and --now does not move the bucket's clock
put_raw "g/default/$FRESH" "$T/fresh"
run env AIRLOCK_NOW=$((NOW + 100)) "$AL" --blobs "$B" gc --json --blobs-grace 3600
is "$(echo "$out" | field blobs_young)" 1 "--blobs-grace 3600: an upload a minute old stays"
run "$AL" --blobs "$B" gc --json --now $((NOW + 3650 * 86400))
is "$(echo "$out" | field blobs_objects)" 0 "--now ten years on does not age the bucket's copies"
run env AIRLOCK_NOW=$((NOW + 3600)) "$AL" --blobs "$B" gc --json --blobs-grace 60
is "$(echo "$out" | field blobs_objects)" 1 "--blobs-grace 60: an hour later it goes"
is "$(meta "SELECT count(*) FROM blobs_swept WHERE gen = 3")" 1 "  (recorded under generation 3)"
put_raw "g/default/$FRESH" "$T/fresh"
run env AIRLOCK_NOW=$((NOW + 40 * 86400)) "$AL" --blobs "$B" gc --json --blobs-grace 60
is "$(echo "$out" | field blobs_objects)" 1 "a pass 40 days on deletes it once more (generation 4)"
is "$(meta "SELECT group_concat(DISTINCT gen) FROM blobs_swept")" 4 \
	"  and forgets the ids of passes older than 30 days"
is "$(meta "SELECT value FROM settings WHERE name = 'blobs_pruned'")" 3 "  saying up to which generation"
run "$AL" --blobs "$B" gc --blobs-grace 0
is "$rc" 2 "--blobs-grace 0 is refused"
run "$AL" --blobs "$B" gc --blobs-grace 2592001
is "$rc" 2 "  and so is more than 30 days"
run "$AL" --blobs "$B" gc --dry-run
like "$out" "bucket: would delete 0 objects \(0 bytes\); 0 unretained kept" "the text report has a bucket line"

# ---- what is retained is whole in the bucket: a cold node exports the head
sqlite3 "$AIRLOCK_HOME/tenants/default/objects.db" "DELETE FROM objects"
find "$AIRLOCK_HOME/tenants/default/objects" -type f -delete
run "$AL" --blobs "$B" snapshot export "$("$AL" project head p)" "$T/out"
is "$rc" 0 "a cold store exports the head from the bucket after the passes"
ok "  exactly" -- diff -r "$S" "$T/out"
done_testing
