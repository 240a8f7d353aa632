#!/bin/bash
# airlock gc: lower layers within a budget (least recently used first, never
# one in use), objects nothing retained reaches (retention: forever by
# default), a ledger entry per pass, dry runs that change nothing, refusals
# that change nothing, beside concurrent commits, and on the daemon's
# schedule.
. "$(dirname "$0")/../lib.sh"
D="$AIRLOCK_HOME/tenants/default"
sql() { sqlite3 -cmd '.timeout 10000' "$D/meta.db" "$1"; }
# hold FILE: a process holding a shared flock on FILE (one process: killing it frees the lock)
hold() { python3 -c 'import fcntl,sys,time; f=open(sys.argv[1],"a"); fcntl.flock(f,fcntl.LOCK_SH); time.sleep(60)' "$1" & HOLD=$!
	for _ in $(seq 100); do flock -n -x "$1" true || return 0; sleep 0.05; done; }
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/a"; echo one > "$S/a/x"; head -c 300000 /dev/urandom > "$S/big"
"$AL" project create p --from "$S" >/dev/null
ledger_size() { "$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
last_entry() { "$AL" audit --kind "$1" --json | python3 -c 'import json,sys; e=json.load(sys.stdin)[-1]; print(json.dumps(e.get("data", e), sort_keys=True))'; }
loose_files() { find "$D/objects" -type f | wc -l; }
exports() { rm -rf "$T/x"; "$AL" snapshot export "$1" "$T/x" >/dev/null 2>&1; }

# refusals change nothing
before=$(store_state); n0=$(ledger_size)
for bad in "retention -1" "retention abc" "retention 36501" "retention 1 2" "--lower-budget 0" \
	   "--lower-budget 12Q" "--wait x" "--now -5" "bogus"; do
	run "$AL" gc $bad
	is "$rc" 2 "gc $bad: usage error"
done
run "$AL" --server http://127.0.0.1:1 gc
isnt_zero=$rc; ok "gc is local only (--server refused)" -- test "$isnt_zero" -ne 0
is "$(store_state)" "$before" "refusals changed no object"
is "$(ledger_size)" "$n0" "…and appended no ledger entry"

# a clean store: nothing to reclaim; a dry run records nothing
run "$AL" gc --dry-run --json
is "$(echo "$out" | field objects)" 0 "a clean store has nothing to reclaim"
is "$(ledger_size)" "$n0" "a dry run appends no ledger entry"

# an orphaned import (recorded nowhere): a dry run reports it, changes nothing
mkdir -p "$T/o"; echo orphan > "$T/o/f"; head -c 300000 /dev/urandom > "$T/o/big2"
O=$("$AL" snapshot import "$T/o")
run "$AL" gc --dry-run --json
is "$(echo "$out" | field objects)" 0 "a recorded snapshot is retained (forever by default)"
sql "DELETE FROM snapshots WHERE id = x'${O#sha256:}'"
files0=$(loose_files); before=$(store_state)
run "$AL" gc --dry-run --json
is "$(echo "$out" | field objects)" 3 "dry run: the orphan's 3 objects would go"
ok "dry run reports their bytes (the large file's 300000 and more)" -- test "$(echo "$out" | field bytes)" -gt 300000
is "$(store_state)" "$before" "a dry run deletes nothing"
# a stray file under objects/ (a dead writer's published, uncommitted object)
mkdir -p "$D/objects/ab"; head -c 1000 /dev/urandom > "$D/objects/ab/$(printf 'c%.0s' $(seq 62))"
run "$AL" gc --json
is "$rc" 0 "gc runs"
is "$(echo "$out" | field objects)" 3 "the orphan's objects are reclaimed"
is "$(echo "$out" | field orphan_files)" 1 "the stray file is removed"
is "$(loose_files)" "$((files0 - 1))" "the orphan's large file is gone, and the stray one"
ok "fsck is clean after gc" -- "$AL" fsck
ok "the project's head exports completely" -- exports "$("$AL" project head p)"
ok "the orphan snapshot is gone" -- bash -c "! '$AL' snapshot export '$O' '$T/y' 2>/dev/null"
like "$(last_entry gc)" '"bytes": [0-9]+, .*"objects": 3, "objects_skipped": false, "orphan_bytes": 1000, "orphan_files": 1' \
	"a gc ledger entry records what was reclaimed"
ok "the ledger verifies" -- "$AL" audit verify

# a rejected draft: kept forever by default, collected past a retention
mkdir -p "$T/d"; cp -a "$S/." "$T/d/"; echo draft-only > "$T/d/new"; head -c 280000 /dev/urandom > "$T/d/big3"
DR=$("$AL" draft create p --from "$T/d")
DH=$("$AL" draft list p --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["head"])')
"$AL" apply "$DR" --reject-all >/dev/null
NOW=$(date +%s)
run "$AL" gc --now $((NOW + 3650 * 86400)) --json
is "$(echo "$out" | field objects)" 0 "retention forever: a rejected draft's objects stay, even 10 years on"
ok "…and its snapshot exports" -- exports "$DH"
run "$AL" gc retention
is "$out" "forever" "the default retention is forever"
n1=$(ledger_size)
run "$AL" gc retention 30
is "$rc" 0 "set the retention to 30 days"
is "$("$AL" gc retention)" "30 days" "…it reads back"
is "$(ledger_size)" "$((n1 + 1))" "…and the change is one ledger entry"
like "$(last_entry gc_retention)" '"after": 30, "before": null' "…saying before and after"
run "$AL" gc --now $((NOW + 29 * 86400)) --json
is "$(echo "$out" | field objects)" 0 "29 days on, inside the retention, nothing goes"
run "$AL" gc --dry-run --now $((NOW + 31 * 86400)) --json
would=$(echo "$out" | field objects)
ok "31 days on, a dry run names the draft's objects" -- test "$would" -ge 3
run "$AL" gc --now $((NOW + 31 * 86400)) --json
is "$(echo "$out" | field objects)" "$would" "31 days on, the rejected draft's objects go"
ok "its snapshot is forgotten" -- test "$(echo "$out" | field snapshots)" -ge 1
ok "its snapshot no longer exports" -- bash -c "! '$AL' snapshot export '$DH' '$T/z' 2>/dev/null"
ok "the live head still exports" -- exports "$("$AL" project head p)"
ok "fsck is clean" -- "$AL" fsck
ok "the ledger verifies (entries are never removed)" -- "$AL" audit verify
"$AL" gc retention forever >/dev/null

# writers that do not pause: objects are skipped, layers still collected
sql "DELETE FROM snapshots WHERE id = x'$("$AL" snapshot import "$T/o" | sed 's/sha256://')'"
hold "$D/gc.lock"
run "$AL" gc --wait 1 --json
is "$(echo "$out" | field objects_skipped)" True "a writer holding gc.lock: objects are not swept"
is "$(echo "$out" | field objects)" 0 "…none deleted"
kill $HOLD; wait $HOLD 2>/dev/null
run "$AL" gc --json
is "$(echo "$out" | field objects)" 3 "once it is gone, they are"

# lower layers: least recently used first, never one in use
L="$D/lower"; mkdir -p "$L"
mk_layer() { mkdir -p "$L/$1"; head -c 100000 /dev/urandom > "$L/$1/f"; touch "$L/$1.lock"; touch -d "$2" "$L/$1.lock"; }
A=$(printf 'a%.0s' $(seq 64))-0; B=$(printf 'b%.0s' $(seq 64))-0; C=$(printf 'c%.0s' $(seq 64))-0
mk_layer "$A" "3 days ago"; mk_layer "$B" "2 days ago"; mk_layer "$C" "1 day ago"
# a materialisation cut short (its lock file left, held by nobody) and a
# live one (its lock held)
mkdir -p "$L/.tmp-old" "$L/.tmp-new" "$L/.gc-$A"; touch "$L/.tmp-old.lock"
hold "$L/.tmp-new.lock"; TMPHOLD=$HOLD
run "$AL" gc --dry-run --lower-budget 250K --json
is "$(echo "$out" | field layers)" 1 "dry run: one layer over a 250K budget would go"
ok "…but stays" -- test -d "$L/$A"
run "$AL" gc --lower-budget 250K --json
is "$(echo "$out" | field layers)" 1 "over the budget: one layer removed"
ok "the least recently used one" -- test ! -e "$L/$A" -a -d "$L/$B" -a -d "$L/$C"
is "$(echo "$out" | field staging)" 2 "a dead run's old temporary layer and a cut-short removal are cleared"
ok "a temporary layer a live run is making (its lock held) stays" -- test -d "$L/.tmp-new"
kill $TMPHOLD; wait $TMPHOLD 2>/dev/null
hold "$L/$B.lock"
run "$AL" gc --lower-budget 50K --json
is "$(echo "$out" | field layers_in_use)" 1 "a layer in use is counted as such"
ok "…and kept, while the other goes" -- test -d "$L/$B" -a ! -e "$L/$C"
kill $HOLD; wait $HOLD 2>/dev/null
run "$AL" gc --lower-budget 50K --json
ok "no longer in use, it goes" -- test ! -e "$L/$B" -a ! -e "$L/$B.lock"
like "$(last_entry gc)" '"layer_bytes": [1-9][0-9]*, "layers": 1' "the gc entry records the layers removed"

# a real run marks its layers; after they are collected a run materialises them again
if have_userns; then
	run "$AL" run p -- true
	is "$rc" 0 "a run"
	is "$(ls "$L" | grep -c '\.lock$')" 2 "its two layers have lock files (last use)"
	run "$AL" gc --lower-budget 1 --json
	is "$(echo "$out" | field layers)" 2 "both are collected when not in use"
	run "$AL" run p -- cat a/x
	is "$out" "one" "a later run materialises them again"
fi

# concurrent commits: each lands, nothing they use is collected
for i in $(seq 1 12); do mkdir -p "$T/g$i"; echo "garbage $i" > "$T/g$i/f"; done
( for i in $(seq 1 12); do
	sql "DELETE FROM snapshots WHERE id = x'$("$AL" snapshot import "$T/g$i" | sed 's/sha256://')'"
  done ) &
GP=$!
( for i in $(seq 1 15); do
	rm -rf "$T/w$i"; cp -a "$S" "$T/w$i"; echo "$i" > "$T/w$i/c$i"; cp "$T/o/big2" "$T/w$i/big2"
	"$AL" commit p "$T/w$i" --base "$("$AL" project head p)" --strategy rebase_if_disjoint >/dev/null || echo "commit $i failed"
  done ) > "$T/commits.out" 2>&1 &
CP=$!
for i in $(seq 1 10); do "$AL" gc --json >/dev/null || echo "gc $i failed"; done > "$T/gcs.out" 2>&1
wait $CP; wait $GP
is "$(cat "$T/commits.out")" "" "15 commits beside 10 gc passes all land"
is "$(cat "$T/gcs.out")" "" "…and every gc pass succeeds"
is "$("$AL" project log p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 16 "the log has every commit"
ok "the head exports completely" -- exports "$("$AL" project head p)"
ok "fsck is clean" -- "$AL" fsck

# the daemon collects on its schedule
run "$AL" serve --gc-interval x
is "$rc" 2 "serve --gc-interval x: usage error"
n2=$("$AL" audit --kind gc --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
serve_start --gc-interval 1
got=0
for _ in $(seq 100); do
	n=$("$AL" audit --kind gc --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
	[ "$n" -gt "$n2" ] && { got=1; break; }
	sleep 0.1
done
serve_stop
is "$got" 1 "airlock serve --gc-interval 1 appends a gc entry on its own"
like "$(cat "$T/serve.log")" "gc default: .* reclaimed" "…and logs the pass"
done_testing
