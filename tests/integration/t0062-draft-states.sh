#!/bin/bash
# Draft states (issue 12, items 7-9): after a decision, review and draft list
# say the draft's state and each path's outcome (applied, discarded); a run
# that changed nothing leaves a closed "empty" draft; a commit that changes
# nothing is refused ("nothing to apply", exit 9) and records nothing; a run
# cut short (cancelled, timed out, disk limit) marks its draft, and the disk
# limit names the files it cut.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P"
for f in a b c d e f g h; do echo "$f" > "$P/$f"; done
"$AL" project create s --from "$P" >/dev/null
hd() { "$AL" project head s; }
commits() { "$AL" project log s | wc -l; }
entries() { "$AL" audit | wc -l; }
draft_from() { rm -rf "$T/w"; "$AL" snapshot export "$(hd)" "$T/w" >/dev/null; (cd "$T/w" && eval "$1"); "$AL" draft create s --from "$T/w"; }
jf() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d,sort_keys=True,separators=(",",":")))' "$1"; }

# ---- 7: a partial apply says what happened to every change --------------------------
D=$(draft_from 'for f in a b c d e f g h; do echo X >> $f; done')
H0=$(hd)
run "$AL" apply "$D" --accept nosuch
is "$rc:$(hd)" "6:$H0" "a bad --accept path is refused and nothing moves"
run "$AL" review "$D"
ok "…the draft stays open, no outcome shown" -- test -z "$(printf '%s' "$out" | grep -E '\[(applied|discarded)\]|is open')"
is "$("$AL" draft list --json s | jf 0.state)" open "…draft list: open"
run "$AL" apply "$D" --accept a b
is "$rc" 0 "accept_selected of 2 of 8 changes"
like "$err" "^applied 2 of 8 changes; 6 discarded$" "the apply says: applied 2 of 8 changes; 6 discarded"
H1=$(hd)
run "$AL" review "$D"
like "$out" "^draft $D is partially_applied: 2 applied, 6 discarded" "review says the draft's state first"
like "$out" "M a \(file, mode 0644\) \[applied\]" "…each path tagged applied"
like "$out" "M c \(file, mode 0644\) \[discarded\]" "…or discarded"
is "$(printf '%s\n' "$out" | grep -c '\[discarded\]')" 6 "…all six others discarded"
run "$AL" review --stat "$D"
like "$out" "M h \| \+1 -0 \[discarded\]" "review --stat tags paths too"
run "$AL" review --json "$D"
is "$(echo "$out" | jf state):$(echo "$out" | jf applied):$(echo "$out" | jf discarded)" "partially_applied:2:6" "review --json: state and counts"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(f["path"]+"="+f["outcome"] for f in json.load(sys.stdin)["files"]))')" \
	"a=applied b=applied c=discarded d=discarded e=discarded f=discarded g=discarded h=discarded" "review --json: every file's outcome"
run "$AL" draft list s
like "$out" "^$D partially_applied base .* \(2 applied, 6 discarded\)" "draft list: the state and counts"
like "$out" "    applied   a
    applied   b
    discarded c" "draft list: one line per path"
run "$AL" draft list --json s
is "$(echo "$out" | jf 0.paths.2)" '{"outcome":"discarded","path":"c"}' "draft list --json: per-path outcomes"
run "$AL" apply "$D" --accept c
is "$rc:$(hd)" "9:$H1" "a decided draft cannot be applied again: exit 9, nothing moves"
like "$err" "draft $D was already partially_applied" "…saying its state"
is "$("$AL" draft list --json s | jf 0.discarded)" 6 "…and its outcomes are unchanged"

D2=$(draft_from 'echo Y > a; rm h; echo n > new')
run "$AL" apply "$D2" --reject-all
like "$err" "^rejected: 3 changes discarded$" "reject_all says what it discarded"
run "$AL" review "$D2"
like "$out" "^draft $D2 is rejected: 0 applied, 3 discarded" "review of a rejected draft"
is "$(printf '%s\n' "$out" | grep -c '\[discarded\]')" 3 "…every path discarded"
D3=$(draft_from 'echo Z > g')
run "$AL" apply "$D3" --accept-all
like "$err" "^applied 1 of 1 changes$" "accept_all: applied 1 of 1 changes"
is "$("$AL" draft list --json s | jf 2.state)" applied "…state applied"

# ---- 8: nothing to apply --------------------------------------------------------------
E=$("$AL" draft create s)
H=$(hd); N=$(commits); L=$(entries)
run "$AL" apply "$E" --accept-all
is "$rc:$(hd):$(commits):$(entries)" "9:$H:$N:$L" "applying a draft with no change: exit 9, no commit, no entry"
like "$err" "nothing to apply" "…saying nothing to apply"
is "$("$AL" draft list --json s | jf 3.state)" open "…the draft stays open"
"$AL" snapshot export "$H" "$T/same" >/dev/null
run "$AL" commit s "$T/same" --base "$H"
is "$rc:$(hd):$(commits)" "9:$H:$N" "airlock commit of the head's own content: exit 9, no commit"
like "$err" "nothing to apply" "…nothing to apply"
# the same bundle twice
B=$(draft_from 'echo bundled > b2')
"$AL" bundle export "$B" "$T/b.tar.zst" >/dev/null
BASE=$("$AL" draft list --json s | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin) if d["id"]==sys.argv[1]][0]["base"])' "$B")
run "$AL" bundle apply "$T/b.tar.zst" s --base "$BASE"
is "$rc" 0 "a bundle applies once"
H=$(hd); N=$(commits)
for st in rebase_if_disjoint conflict_copy; do
	run "$AL" bundle apply "$T/b.tar.zst" s --base "$BASE" --strategy "$st"
	is "$rc:$(hd):$(commits)" "9:$H:$N" "the same bundle again ($st): exit 9, no commit"
	like "$err" "nothing to apply" "…nothing to apply"
done
run "$AL" bundle apply "$T/b.tar.zst" s --base "$BASE"
is "$rc" 5 "…strict: still a conflict (the head moved)"
# convergent drafts: the second one's change is already in the head
C1=$(draft_from 'echo same > conv'); C2=$(draft_from 'echo same > conv')
"$AL" apply "$C1" --accept-all 2>/dev/null >/dev/null
H=$(hd); N=$(commits)
for st in rebase_if_disjoint conflict_copy; do
	run "$AL" apply "$C2" --accept-all --strategy "$st"
	is "$rc:$(hd):$(commits)" "9:$H:$N" "a convergent draft ($st): nothing to apply, no commit"
done
is "$("$AL" draft list --json s | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin) if d["id"]==sys.argv[1]][0]["state"])' "$C2")" open \
	"…and it stays open (it can be rejected)"
# a run that changes nothing
run "$AL" run s --json -- true
R=$(echo "$out" | jf id); RD=$(echo "$out" | jf draft)
is "$("$AL" draft list --json s | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin) if d["id"]==sys.argv[1]][0]["state"])' "$RD")" empty \
	"a run that changed nothing: its draft is closed as empty"
like "$("$AL" audit --kind run --json)" "\"id\":\"$R\"" "…its record is in the ledger"
run "$AL" review "$R"
like "$out" "^draft $RD is empty" "review says empty"
H=$(hd); N=$(commits)
run "$AL" apply "$R" --accept-all
is "$rc:$(hd):$(commits)" "9:$H:$N" "applying an empty draft: exit 9, nothing changes"
like "$err" "is empty \(its run changed nothing\): nothing to apply" "…saying why"
run "$AL" apply "$R" --reject-all
is "$rc" 9 "…nor can it be rejected: it is closed"
run "$AL" run s -- true
like "$err" "^run r[0-9a-f]{13}: no changes; draft d[0-9a-f]{13} closed: empty$" "the run's summary says its draft is closed, empty"

# a run cut short: marked in review, draft list and the apply
run "$AL" run s --timeout 1 -- sh -c 'echo partial > part; sleep 30'
TR=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' | head -1)
like "$TR" '^r[0-9a-f]{13}$' "a timed-out run leaves a draft"
run "$AL" review "$TR"
like "$out" "warning: run $TR hit its time limit \(1000 ms\): the draft holds only what it had written by then" "review marks a timed-out run's draft"
run "$AL" review --json "$TR"
is "$(echo "$out" | jf marks)" '["timed_out"]' "review --json: marks"
like "$("$AL" draft list s)" "open base .*\[timed_out\]" "draft list marks it"
run "$AL" apply "$TR" --accept-all
like "$err" "warning: run $TR hit its time limit" "the apply warns too"

# ---- 9: the disk limit names what it cut ------------------------------------------------
run "$AL" run s --json --disk-limit 1M -- sh -c 'dd if=/dev/zero of=big bs=64k count=64 2>/dev/null; true'
DR=$(echo "$out" | jf id)
is "$(echo "$out" | jf disk_limit_hit):$(echo "$out" | jf disk_limit.full)" "True:True" "a full disk: the record says the limit was hit"
is "$(echo "$out" | jf disk_limit.truncated):$(echo "$out" | jf disk_limit.limit)" '["big"]:1048576' "…names the file it cut and the limit"
run "$AL" review "$DR"
like "$out" "warning: run $DR hit its disk limit \(1048576 bytes\): possibly truncated: big" "review names the limit and the file"
like "$out" "A big \(file, mode 0644\) \[possibly truncated by the disk limit\]" "…and tags the file"
run "$AL" apply "$DR" --accept-all
is "$rc" 0 "the draft still applies"
like "$err" "warning: run $DR hit its disk limit \(1048576 bytes\): possibly truncated: big" "…the apply warns, naming limit and file"
run "$AL" run s --json --disk-limit 16M -- sh -c 'truncate -s 10M s1; truncate -s 10M s2'
DR2=$(echo "$out" | jf id)
is "$(echo "$out" | jf disk_limit.full):$(echo "$out" | jf disk_limit.dropped_count)" "False:1" "sparse files over the budget: one dropped, the disk not full"
like "$(echo "$out" | jf disk_limit.dropped)" '^\["s[12]"\]$' "…the record names it"
run "$AL" review "$DR2"
like "$out" "warning: run $DR2 hit its disk limit \(16777216 bytes\): not kept: s[12]" "review names the dropped file"
run "$AL" run s --json --disk-limit 16M -- sh -c 'echo small > small'
is "$(echo "$out" | jf disk_limit_hit)" False "a run within its limit is not marked"
run "$AL" review "$(echo "$out" | jf id)"
ok "…and its review has no warning" -- test -z "$(printf '%s' "$out" | grep warning)"

# ---- the API: the same states, outcomes and marks ------------------------------------
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create au --role author >/dev/null
RV=$("$AL" admin token create rv 2>/dev/null); AU=$("$AL" admin token create au 2>/dev/null)
serve_start
api GET "/drafts/$D" "$RV"
is "$status:$(echo "$out" | jf state):$(echo "$out" | jf applied):$(echo "$out" | jf discarded)" "200:partially_applied:2:6" "GET /drafts/ID: state and counts"
is "$(echo "$out" | jf paths.0)" '{"outcome":"applied","path":"a"}' "…per-path outcomes"
api GET "/drafts/$D/review" "$RV"
is "$(echo "$out" | jf files.7.outcome)" discarded "GET /drafts/ID/review: per-file outcome"
A=$(draft_from 'echo 1 > a; echo 2 > b; echo 3 > c')
api POST "/drafts/$A/apply" "$RV" '{"mode":"accept_selected","paths":["a"]}'
is "$status:$(echo "$out" | jf state):$(echo "$out" | jf applied):$(echo "$out" | jf discarded)" "200:partially_applied:1:2" "POST apply: state and counts in the answer"
H=$(hd)
api POST "/drafts/$A/apply" "$RV" '{"mode":"accept_all"}'
is "$status:$(hd)" "409:$H" "a second apply: 409, nothing moves"
api POST "/drafts/$RD/apply" "$RV" '{"mode":"accept_all"}'
is "$status:$(echo "$out" | jf error.code)" "409:InvalidState" "an empty draft: 409"
api POST "/drafts/$C2/apply" "$RV" '{"mode":"accept_all"}'
like "$status:$out" "^409:.*nothing to apply" "a convergent draft: 409 nothing to apply"
api GET "/drafts/$TR" "$RV"
is "$(echo "$out" | jf marks)" '["timed_out"]' "GET /drafts/ID: the run's marks"
# a cancelled run
api POST /projects/s/runs "$AU" '{"argv":["sh","-c","echo p > cancelled; echo written; sleep 30"]}'
CR=$(echo "$out" | jf id)
# (cancel once the run has written its file: it says so on stdout)
for i in $(seq 200); do api GET "/runs/$CR/output" "$AU"; [ "$out" = written ] && break; sleep 0.05; done
api POST "/runs/$CR/cancel" "$AU"
for i in $(seq 200); do api GET "/runs/$CR" "$AU"; [ "$(echo "$out" | jf state 2>/dev/null)" = ended ] && break; sleep 0.1; done
api GET "/drafts/$CR/review" "$RV"
is "$(echo "$out" | jf marks)" '["cancelled"]' "a cancelled run's draft is marked cancelled"
like "$(echo "$out" | jf warnings.0)" "run $CR was cancelled: the draft holds only what it had written by then" "…with a warning"
serve_stop
run "$AL" fsck
is "$rc" 0 "fsck is clean"
done_testing
