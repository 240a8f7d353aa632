#!/bin/bash
# The merge_lines strategy (issue 15): when the head moved and both sides
# changed one text file in hunks that do not overlap, the three-way merge
# lands: two agents adding rows at different places of one CSV both land,
# through the CLI (apply, commit) and the API (apply, commits).  Overlapping
# hunks, a binary file, and every other overlap fail as rebase_if_disjoint
# does (exit 5 / 409, nothing changed, the refusal in the ledger), and
# conflict_copy is still there for them.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
RV=$("$AL" admin token create rv 2>/dev/null)
P="$T/p"; mkdir -p "$P"
{ echo "date,account,amount"; for i in $(seq 1 12); do echo "2026-11-$(printf %02d "$i"),acct$i,$((i * 100))"; done; } > "$P/ledger.csv"
printf 'x\0y' > "$P/bin"
"$AL" project create s --from "$P" >/dev/null
hd() { "$AL" project head s; }
entries() { "$AL" audit | wc -l; }
from_head() { rm -rf "$T/$1"; "$AL" snapshot export "$(hd)" "$T/$1" >/dev/null; }
draft_in() { (cd "$T/$1" && eval "$2"); "$AL" draft create s --from "$T/$1"; }
at_head() { rm -rf "$T/h"; "$AL" snapshot export "$(hd)" "$T/h" >/dev/null; cat "$T/h/$1"; }
state_of() { "$AL" draft list --json s | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin) if d["id"]==sys.argv[1]][0]["state"])' "$1"; }
ROW_A='2026-11-03,acct3-correction,-50'
ROW_B='2026-11-30,acct99,9900'

# ---- the CSV: two agents' rows at different places ----------------------------------------
from_head a; from_head b
A=$(draft_in a "sed -i '4a $ROW_A' ledger.csv")
B=$(draft_in b "echo '$ROW_B' >> ledger.csv")
"$AL" apply "$A" --accept-all >/dev/null 2>&1
H=$(hd); L=$(entries)
run "$AL" apply "$B" --accept-all
is "$rc:$(hd)" "5:$H" "the second agent's rows with rebase_if_disjoint (the default): exit 5, nothing moves"
like "$err" "overlapping paths: ledger.csv" "…ledger.csv overlaps"
is "$(state_of "$B")" open "…the draft stays open"
run "$AL" apply "$B" --accept-all --strategy merge_lines
is "$rc" 0 "with --strategy merge_lines the apply lands"
like "$err" "merged ledger.csv: both sides' lines \(merge_lines\)" "…saying ledger.csv was merged"
is "$(at_head ledger.csv | grep -c -e "$ROW_A" -e "$ROW_B")" 2 "both agents' rows are in the head"
is "$(at_head ledger.csv | sed -n '5p;15p' | tr '\n' '|')" "$ROW_A|$ROW_B|" "…each at its place"
is "$(at_head ledger.csv | wc -l)" 15 "…and nothing else changed (header, 12 rows, 2 new)"
like "$("$AL" project log s | tail -1)" "apply merge_lines" "project log: the apply's strategy is merge_lines"
E=$("$AL" audit --kind apply --json | python3 -c 'import json,sys; d=json.load(sys.stdin)[-1]["data"]; print(json.dumps([d["strategy"], d["merged"], d["rebased"]]))')
is "$E" '["merge_lines", ["ledger.csv"], true]' "the apply's ledger entry: strategy, merged paths, rebased"

# ---- overlapping hunks: refused, as rebase_if_disjoint ---------------------------------------
from_head c; from_head d
C=$(draft_in c "sed -i 's/^2026-11-07,acct7,700$/2026-11-07,acct7,701/' ledger.csv")
Dd=$(draft_in d "sed -i 's/^2026-11-07,acct7,700$/2026-11-07,acct7,702/' ledger.csv")
"$AL" apply "$C" --accept-all >/dev/null 2>&1
H=$(hd); L=$(entries)
run "$AL" apply "$Dd" --accept-all --strategy merge_lines
is "$rc:$(hd)" "5:$H" "the same row changed two ways: merge_lines refuses (exit 5), nothing moves"
like "$err" "not the declared base \(merge_lines: changes overlap\); overlapping paths: ledger.csv" "…naming the overlap"
is "$(entries):$(state_of "$Dd")" "$((L + 1)):open" "…one entry (the refusal), the draft open"
like "$("$AL" audit --kind conflict --json)" '"outcome":"refused","paths":\["ledger.csv"\],"strategy":"merge_lines"' "…the refusal's entry names merge_lines"
run "$AL" apply "$Dd" --accept-all --strategy merge_lines --json
is "$(echo "$out" | field error.paths)" '["ledger.csv"]' "--json: the error lists the overlapping path"
run "$AL" apply "$Dd" --accept-all --strategy conflict_copy
is "$rc" 0 "conflict_copy still lands it beside ours"
like "$err" "conflict ledger.csv: incoming version at ledger.conflict-[0-9a-f]{8}.csv" "…as a conflict copy"

# a binary file both changed: never merged
from_head e; from_head f
Ee=$(draft_in e "printf 'x\0e' > bin; echo e > e.txt")
F=$(draft_in f "printf 'x\0f' > bin")
"$AL" apply "$Ee" --accept-all >/dev/null 2>&1
run "$AL" apply "$F" --accept-all --strategy merge_lines
is "$rc" 5 "a binary file both sides changed: merge_lines refuses (exit 5)"
like "$err" "overlapping paths: bin" "…naming it"

# airlock commit --strategy merge_lines (an author's commit from an old base)
BASE=$(hd); from_head g; from_head i
sed -i '2a 2026-11-01,acct-g,1' "$T/g/ledger.csv"
sed -i '$a 2026-12-01,acct-i,2' "$T/i/ledger.csv"
"$AL" commit s "$T/g" --base "$BASE" >/dev/null 2>&1
run "$AL" commit s "$T/i" --base "$BASE"
is "$rc" 5 "commit from a stale base, strict: exit 5"
run "$AL" commit s "$T/i" --base "$BASE" --strategy merge_lines --json
is "$rc:$(echo "$out" | field merged)" '0:["ledger.csv"]' "commit --strategy merge_lines: lands, merged [ledger.csv]"
is "$(at_head ledger.csv | grep -c -e acct-g -e acct-i)" 2 "…both lines in the head"
run "$AL" commit s "$T/i" --base "$BASE" --strategy merge_line
is "$rc" 2 "a misspelt strategy: a usage error (exit 2)"
like "$err" "unknown strategy 'merge_line' \(strict, rebase_if_disjoint, conflict_copy, merge_lines\)" "…listing merge_lines"

# ---- the API ----------------------------------------------------------------------------------
serve_start
from_head j; from_head k
J=$(draft_in j "sed -i '3a 2026-11-02,api-j,5' ledger.csv")
K=$(draft_in k "echo '2026-12-31,api-k,6' >> ledger.csv")
api POST "/drafts/$J/apply" "$RV" '{"mode":"accept_all"}'
is "$status" 200 "API: the first draft applies"
api POST "/drafts/$K/apply" "$RV" '{"mode":"accept_all"}'
is "$status:$(echo "$out" | field error.code)" "409:VolumeConflictError" "API: the second with rebase_if_disjoint: 409"
api POST "/drafts/$K/apply" "$RV" '{"mode":"accept_all","strategy":"merge_lines"}'
is "$status:$(echo "$out" | field strategy):$(echo "$out" | field merged)" '200:merge_lines:["ledger.csv"]' \
	"API: strategy merge_lines: 200, merged [ledger.csv]"
is "$(at_head ledger.csv | grep -c -e api-j -e api-k)" 2 "…both rows in the head"
from_head m; from_head n
M=$(draft_in m "sed -i 's/api-j,5/api-j,55/' ledger.csv")
N=$(draft_in n "sed -i 's/api-j,5/api-j,56/' ledger.csv")
api POST "/drafts/$M/apply" "$RV" '{"mode":"accept_all"}'
H=$(hd)
api POST "/drafts/$N/apply" "$RV" '{"mode":"accept_all","strategy":"merge_lines"}'
is "$status:$(echo "$out" | field error.paths):$(hd)" "409:[\"ledger.csv\"]:$H" "API: overlapping rows with merge_lines: 409 with the path, nothing moves"
api POST "/drafts/$N/apply" "$RV" '{"mode":"accept_all","strategy":"merge"}'
is "$status" 422 "API: an unknown strategy is 422"
# a tree committed from an old base with merge_lines
BASE=$(hd); from_head q; from_head r
sed -i '2a 2026-10-01,tree-q,7' "$T/q/ledger.csv"; sed -i '$a 2027-01-01,tree-r,8' "$T/r/ledger.csv"
(cd "$T/q" && tar -cf "$T/q.tar" .); (cd "$T/r" && tar -cf "$T/r.tar" .)
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/q.tar" "$URL/api/projects/s/commits?base=$BASE")
is "$code" 201 "API: a tree commit"
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/r.tar" "$URL/api/projects/s/commits?base=$BASE&strategy=merge_lines")
is "$code:$(field merged < "$T/.api")" '201:["ledger.csv"]' "API: another from the same base with strategy=merge_lines: 201, merged"
is "$(at_head ledger.csv | grep -c -e tree-q -e tree-r)" 2 "…both lines in the head"
serve_stop
ok "fsck is clean (the tables agree with the ledger)" -- "$AL" fsck
ok "audit verify" -- sh -c "'$AL' audit export '$T/l.exp' && '$AL' audit verify '$T/l.exp'"
done_testing
