#!/bin/bash
# Hunk-level accept over the API (issue 15): an apply's paths may be
# objects {path, hunks} beside plain strings; refusals are 422 with nothing
# changed; the answer, the draft, its review and the ledger entry say which
# hunks were taken; the CLI's --hunks and --patch work through --server.
# Every answer is checked against docs/openapi.json (done_testing).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
"$AL" admin principal create au --role author >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create ag --role agent --project s >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
RV=$("$AL" admin token create rv 2>/dev/null)
AG=$("$AL" admin token create ag 2>/dev/null)
P="$T/p"; mkdir -p "$P"
seq 1 30 > "$P/n.txt"; printf 'x\0y' > "$P/bin"; echo keep > "$P/k.txt"
"$AL" project create s --from "$P" >/dev/null
hd() { "$AL" project head s; }
draft_from() { rm -rf "$T/w"; "$AL" snapshot export "$(hd)" "$T/w" >/dev/null; (cd "$T/w" && eval "$1"); "$AL" draft create s --from "$T/w"; }
at_head() { rm -rf "$T/h"; "$AL" snapshot export "$(hd)" "$T/h" >/dev/null; cat "$T/h/$1"; }
nentries() { api GET /audit "$RV"; echo "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
serve_start

D=$(draft_from 'sed -i "s/^2$/TWO/; s/^15$/FIFTEEN/; s/^29$/TWENTY-NINE/" n.txt; echo new > new.txt; printf "x\0z" > bin')

# ---- the review: numbers, and which files' hunks can be chosen ------------------------
api GET "/drafts/$D/review" "$RV"
is "$status" 200 "GET review"
is "$(echo "$out" | python3 -c 'import json,sys
for f in json.load(sys.stdin)["files"]:
    print(f["path"], f["hunks_selectable"], [h["number"] for h in f.get("hunks", [])])' | tr '\n' ';')" \
	"bin False [];n.txt True [1, 2, 3];new.txt False [1];" "review: hunks[].number and hunks_selectable"
is "$(echo "$out" | field partial)" 0 "…partial 0 while open"

# ---- refusals: 422, nothing changed ----------------------------------------------------
H0=$(hd); L0=$(nentries); S0=$(store_state)
refuse() { # refuse STATUS BODY MESSAGE DESCRIPTION
	api POST "/drafts/$D/apply" "$RV" "$2"
	is "$status:$(hd)" "$1:$H0" "$4: $1, the head unchanged"
	like "$out" "$3" "…$3"
}
sel() { echo "{\"mode\":\"accept_selected\",\"paths\":[$1]}"; }
refuse 422 "$(sel '{"path":"n.txt","hunks":[4]}')" '"message":"n.txt has 3 hunks: no hunk 4"' "a hunk the file lacks"
refuse 422 "$(sel '{"path":"new.txt","hunks":[1]}')" "new.txt is added in draft $D: only its whole change" "hunks of an added file"
refuse 422 "$(sel '{"path":"bin","hunks":[1]}')" "bin is binary" "hunks of a binary file"
refuse 422 "$(sel '{"path":"nosuch","hunks":[1]}')" "nosuch is not changed by draft" "hunks of a path not in the draft"
refuse 422 "$(sel '"n.txt",{"path":"n.txt","hunks":[1]}')" "selected both whole and by hunks" "a path both whole and by hunks"
refuse 422 "$(sel '"new.txt",{"path":"n.txt","hunks":[1,9]}')" "no hunk 9" "a good path beside a bad hunk"
refuse 422 "$(sel '{"path":"n.txt","hunks":[]}')" "'hunks' is a non-empty array" "an empty list"
refuse 422 "$(sel '{"path":"n.txt","hunks":null}')" "'hunks' is a non-empty array" "hunks: null"
for h in '[0]' '[-1]' '["1"]' '[1.5]' '[4294967296]' '[true]'; do
	refuse 422 "$(sel "{\"path\":\"n.txt\",\"hunks\":$h}")" "is not a hunk number" "hunks $h"
done
refuse 422 "$(sel '{"path":"n.txt","hunks":[1],"mode":"x"}')" "unknown field 'mode'" "an unknown field in a path object"
refuse 422 "$(sel '{"hunks":[1]}')" "item 0 is not a path" "a path object without a path"
refuse 422 "$(sel '7')" "item 0 is not a path" "a number for a path"
refuse 422 '{"mode":"accept_all","paths":[{"path":"n.txt","hunks":[1]}]}' "required by accept_selected, and only by it" "hunks with accept_all"
is "$(nentries):$(store_state)" "$L0:$S0" "…no ledger entry and nothing stored by any refusal"
api GET "/drafts/$D" "$RV"
is "$(echo "$out" | field state)" open "…the draft is still open"
api POST "/drafts/$D/apply" "$AG" "$(sel '{"path":"n.txt","hunks":[1]}')"
is "$status" 403 "an agent cannot apply hunks either: 403"

# ---- hunks taken -------------------------------------------------------------------------
api POST "/drafts/$D/apply" "$RV" '{"mode":"accept_selected","paths":["new.txt",{"path":"n.txt","hunks":[3,1,3]}],"message":"two hunks"}'
is "$status" 200 "apply with a string and a {path, hunks} object: 200"
is "$(echo "$out" | field hunks):$(echo "$out" | field partial):$(echo "$out" | field applied):$(echo "$out" | field discarded)" \
	'{"n.txt": [1, 3]}:1:2:1' "…hunks {n.txt: [1, 3]} (sorted, once), partial 1, applied 2, discarded 1"
is "$(echo "$out" | field paths):$(echo "$out" | field state):$(echo "$out" | field merged)" \
	'["new.txt", "n.txt"]:partially_applied:[]' "…paths as asked (strings), state partially_applied"
is "$(echo "$out" | field head)" "$(hd)" "…the head moved to the answer's head"
is "$(at_head n.txt | sed -n '2p;15p;29p' | tr '\n' ' ')" "TWO 15 TWENTY-NINE " "n.txt: hunks 1 and 3"
api GET "/drafts/$D" "$RV"
is "$(echo "$out" | field paths)" \
	'[{"outcome": "discarded", "path": "bin"}, {"hunks": [1, 3], "outcome": "partially_applied", "path": "n.txt"}, {"outcome": "applied", "path": "new.txt"}]' \
	"GET /drafts/ID: each path's outcome, hunks for n.txt"
is "$(echo "$out" | field partial)" 1 "…partial 1"
api GET "/drafts/$D/review" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys
for f in json.load(sys.stdin)["files"]:
    print(f["path"], f["outcome"], f.get("applied_hunks"))' | tr '\n' ';')" \
	"bin discarded None;n.txt partially_applied [1, 3];new.txt applied None;" "review: outcome and applied_hunks"
api GET "/audit?kind=apply" "$RV"
is "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin)[-1]["data"]; print(json.dumps([d["hunks"], d["paths"], d["partial"], d["state"]]))')" \
	'[{"n.txt": [1, 3]}, ["new.txt", "n.txt"], 1, "partially_applied"]' "the apply's ledger entry records the hunks"

# plain strings still work as they did
D2=$(draft_from 'echo two > k.txt; echo other > o.txt')
api POST "/drafts/$D2/apply" "$RV" '{"mode":"accept_selected","paths":["k.txt"]}'
is "$status:$(echo "$out" | field hunks):$(echo "$out" | field partial)" "200:{}:0" "plain string paths: as before (hunks {}, partial 0)"
is "$(at_head k.txt)" two "…k.txt taken"

# ---- the CLI through --server --------------------------------------------------------------
D3=$(draft_from 'sed -i "s/^5$/five/; s/^20$/twenty/" n.txt')
export AIRLOCK_TOKEN=$RV
run "$AL" --server "$URL" review "$D3"
like "$out" "\[hunk 2\]" "--server review numbers the hunks"
run "$AL" --server "$URL" apply "$D3" --hunks n.txt=5
is "$rc" 6 "--server apply --hunks n.txt=5: exit 6 (422)"
like "$err" "n.txt has 2 hunks: no hunk 5" "…the server's message"
run "$AL" --server "$URL" apply "$D3" --hunks n.txt=2
is "$rc" 0 "--server apply --hunks n.txt=2"
like "$err" "applied 1 of 1 changes \(1 in part\)" "…says it took it in part"
is "$(at_head n.txt | sed -n '5p;20p' | tr '\n' ' ')" "5 twenty " "…hunk 2 only"
D4=$(draft_from 'sed -i "s/^6$/six/; s/^21$/twenty-one/" n.txt; echo p > p.txt')
run sh -c "printf 'y\nn\ny\n' | '$AL' --server '$URL' apply '$D4' --patch --json"
is "$rc" 0 "--server apply --patch, answers piped"
is "$(echo "$out" | field hunks)" '{"n.txt": [1]}' "…the answer: n.txt hunk 1"
is "$(at_head n.txt | sed -n '6p;21p' | tr '\n' ' '):$(at_head p.txt)" "six 21 :p" "…hunk 1 and p.txt taken"
unset AIRLOCK_TOKEN
serve_stop
ok "fsck is clean" -- "$AL" fsck
done_testing
