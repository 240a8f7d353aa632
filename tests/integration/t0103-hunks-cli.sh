#!/bin/bash
# Hunk-level accept from the CLI (issue 15): review numbers each hunk;
# apply --hunks PATH=LIST takes some hunks of a file (a path with ':' or
# '=' named exactly), with --accept beside it; every refusal (a hunk the
# file lacks, hunks of an added, deleted or binary file or of a path the
# draft does not change, a path named both ways, a malformed list) changes
# nothing; the outcome and the ledger entry record the hunks; --patch asks
# hunk by hunk, reading the answers from stdin.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P"
seq 1 30 > "$P/n.txt"
seq 1 20 > "$P/we:ird=name.txt"
printf 'x\0y' > "$P/bin"
echo bye > "$P/gone.txt"
echo zed > "$P/z.txt"
"$AL" project create s --from "$P" >/dev/null
hd() { "$AL" project head s; }
entries() { "$AL" audit | wc -l; }
draft_from() { rm -rf "$T/w"; "$AL" snapshot export "$(hd)" "$T/w" >/dev/null; (cd "$T/w" && eval "$1"); "$AL" draft create s --from "$T/w"; }
at_head() { rm -rf "$T/h"; "$AL" snapshot export "$(hd)" "$T/h" >/dev/null; cat "$T/h/$1"; }
jf() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d,sort_keys=True,separators=(",",":")))' "$1"; }
state_of() { "$AL" draft list --json s | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin) if d["id"]==sys.argv[1]][0]["state"])' "$1"; }

D=$(draft_from 'sed -i "s/^2$/TWO/; s/^15$/FIFTEEN/; s/^29$/TWENTY-NINE/" n.txt;
	sed -i "s/^1$/ONE/; s/^19$/NINETEEN/" "we:ird=name.txt"; echo new > new.txt; rm gone.txt; printf "x\0z" > bin')

# ---- review numbers the hunks --------------------------------------------------------
run "$AL" review "$D"
like "$out" "@@ -1,5 \+1,5 @@ \[hunk 1\]" "review: hunk 1 numbered on its header"
like "$out" "@@ -12,7 \+12,7 @@ \[hunk 2\]" "…hunk 2"
like "$out" "@@ -26,5 \+26,5 @@ \[hunk 3\]" "…hunk 3"
run "$AL" review --json "$D"
is "$(echo "$out" | python3 -c 'import json,sys
for f in json.load(sys.stdin)["files"]:
    print(f["path"], f["hunks_selectable"], [h["number"] for h in f.get("hunks", [])])' | tr '\n' ';')" \
	"bin False [];gone.txt False [1];n.txt True [1, 2, 3];new.txt False [1];we:ird=name.txt True [1, 2];" \
	"review --json: each hunk's number, and which files' hunks can be chosen"

# ---- refusals: nothing changes --------------------------------------------------------
H0=$(hd); L0=$(entries); S0=$(store_state)
refuse() { # refuse EXIT MESSAGE DESCRIPTION -- ARGS...
	local want=$1 msg=$2 desc=$3; shift 4
	run "$AL" apply "$D" "$@"
	is "$rc:$(hd):$(entries)" "$want:$H0:$L0" "$desc: exit $want, head and ledger unchanged"
	like "$err" "$msg" "…saying: $msg"
}
refuse 6 "n.txt has 3 hunks: no hunk 4" "a hunk the file lacks" -- --hunks n.txt=1,4
refuse 6 "new.txt is added in draft $D: only its whole change can be taken, not hunks" "hunks of an added file" -- --hunks new.txt=1
refuse 6 "gone.txt is deleted in draft $D" "hunks of a deleted file" -- --hunks gone.txt=1
refuse 6 "bin is binary" "hunks of a binary file" -- --hunks bin=1
refuse 6 "nosuch is not changed by draft $D" "hunks of a path the draft does not change" -- --hunks nosuch=1
refuse 6 "n.txt is selected both whole and by hunks" "a path named whole and by hunks" -- --accept n.txt --hunks n.txt=1
refuse 6 "no hunk 3" "a good selection beside a bad one takes nothing" -- --accept new.txt --hunks "we:ird=name.txt=3"
for bad in n.txt n.txt= =1 n.txt=0 n.txt=a n.txt=3-1 n.txt=1, n.txt=-1 n.txt=1,,2; do
	refuse 2 "--hunks '$bad': expected PATH=LIST" "--hunks $bad (malformed)" -- --hunks "$bad"
done
refuse 2 "give exactly one of" "--hunks with --accept-all" -- --accept-all --hunks n.txt=1
refuse 2 "give exactly one of" "--patch with --hunks" -- --patch --hunks n.txt=1
is "$(state_of "$D"):$(store_state)" "open:$S0" "…the draft is still open and nothing was stored"

# ---- hunks taken --------------------------------------------------------------------
run "$AL" apply "$D" --hunks "we:ird=name.txt=2" --hunks n.txt=3,1 --accept new.txt
is "$rc" 0 "apply --hunks we:ird=name.txt=2 --hunks n.txt=3,1 --accept new.txt"
like "$err" "^applied 3 of 5 changes \(2 in part\); 2 discarded" "…applied 3 of 5 changes (2 in part)"
like "$err" "took n.txt hunks 1,3" "…naming the hunks taken"
is "$(at_head n.txt | tr '\n' ' ')" "1 TWO $(seq 3 28 | tr '\n' ' ')TWENTY-NINE 30 " "n.txt: hunks 1 and 3, not 2"
is "$(at_head 'we:ird=name.txt' | tr '\n' ' ')" "$(seq 1 18 | tr '\n' ' ')NINETEEN 20 " "we:ird=name.txt: hunk 2 only (the list after the last '=')"
is "$(at_head new.txt):$(at_head gone.txt)" "new:bye" "new.txt taken whole, gone.txt left"
run "$AL" draft list s
like "$out" "^$D partially_applied .* \(3 applied, 2 discarded; 2 in part\)" "draft list: the counts"
like "$out" "    partially_applied n.txt \[hunks 1,3\]" "…n.txt partially_applied [hunks 1,3]"
like "$out" "    partially_applied we:ird=name.txt \[hunks 2\]" "…we:ird=name.txt [hunks 2]"
like "$out" "    applied   new.txt" "…new.txt applied"
run "$AL" review "$D"
like "$out" "^draft $D is partially_applied: 3 applied \(2 in part\), 2 discarded" "review: the state"
like "$out" "M n.txt \(file, mode 0644\) \[partially_applied: hunks 1,3\]" "…the path tagged with its hunks"
run "$AL" draft list --json s
is "$(echo "$out" | jf 0.paths.2)" '{"hunks":[1,3],"outcome":"partially_applied","path":"n.txt"}' "draft list --json: outcome and hunks"
is "$(echo "$out" | jf 0.partial)" 2 "…and the partial count"
A=$("$AL" audit --kind apply --json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[-1]["data"],sort_keys=True))')
is "$(echo "$A" | jf hunks)" '{"n.txt":[1,3],"we:ird=name.txt":[2]}' "the apply's ledger entry records the hunks per path"
is "$(echo "$A" | jf paths):$(echo "$A" | jf partial)" '["we:ird=name.txt","n.txt","new.txt"]:2' "…the paths asked for and the partial count"
ok "audit verify: the ledger with the new entry verifies" -- sh -c "'$AL' audit export '$T/l.exp' && '$AL' audit verify '$T/l.exp'"
ok "fsck is clean" -- "$AL" fsck

# a range, and every hunk of a file: the whole change, "applied"
D2=$(draft_from 'sed -i "s/^3$/three/; s/^20$/twenty/" n.txt')
run "$AL" apply "$D2" --hunks n.txt=1-2
is "$rc:$(state_of "$D2")" "0:applied" "--hunks n.txt=1-2: every hunk is the whole change (state applied)"
like "$("$AL" draft list s)" "    applied   n.txt \[hunks 1,2\]" "…outcome applied, with its hunks"

# ---- --patch, answers piped ------------------------------------------------------------
D3=$(draft_from 'echo a > a.txt; sed -i "s/^5$/five/; s/^16$/sixteen/; s/^27$/twenty-seven/" n.txt;
	mkdir newdir; echo x > newdir/x.txt; echo y > newdir/y.txt; rm z.txt')
H=$(hd)
run sh -c "printf 'y\nn\ny\n?\nn\ny\ny\nn\n' | '$AL' apply '$D3' --patch"
is "$rc" 0 "--patch with answers on stdin"
like "$out" "Apply this change to a.txt \[y,n,q,a,d,\?\]\? " "…asks about an added file as one change"
like "$out" "\(1/3\) Apply this hunk to n.txt \[y,n,q,a,d,\?\]\? " "…asks about each hunk of n.txt"
like "$out" "@@ -13,7 \+13,7 @@ \[hunk 2\]" "…showing the hunk and its number"
like "$out" "a - apply this hunk and all later hunks in the file" "…? prints the help and asks again"
like "$out" "Apply this change to newdir/x.txt" "…asks about the files in a new directory, not the directory"
is "$(at_head n.txt | sed -n '5p;16p;27p' | tr '\n' ' ')" "5 sixteen 27 " "n.txt: only hunk 2 taken"
is "$(at_head a.txt):$(at_head newdir/x.txt):$(at_head newdir/y.txt):$(at_head z.txt)" "a:x:y:zed" "a.txt and newdir taken, z.txt's deletion left"
like "$("$AL" draft list s)" "    applied   newdir
    applied   newdir/x.txt" "newdir went whole with its files"
like "$("$AL" draft list s)" "    partially_applied n.txt \[hunks 2\]
    discarded z.txt" "n.txt [hunks 2], z.txt discarded"

# a: this hunk and the file's later ones (the whole file); q: stop there
D4=$(draft_from 'sed -i "s/^7$/seven/; s/^25$/twenty-five/" n.txt; echo b > b.txt; rm z.txt')
run sh -c "printf 'n\na\nq\n' | '$AL' apply '$D4' --patch"
is "$rc:$(at_head b.txt 2>/dev/null || echo none)" "0:none" "--patch: n to b.txt"
is "$(at_head n.txt | sed -n '7p;25p' | tr '\n' ' ')" "seven twenty-five " "…a on n.txt's first hunk takes the rest of the file"
is "$(at_head z.txt)" "zed" "…q leaves the remaining changes"
like "$("$AL" draft list s)" "    applied   n.txt
    discarded z.txt" "…n.txt (all hunks) is applied whole"

# d: skip the file's later hunks; end of input is q
D5=$(draft_from 'sed -i "s/^8$/eight/; s/^24$/twenty-four/" n.txt; echo c > c.txt')
run sh -c "printf 'y\nd\n' | '$AL' apply '$D5' --patch"
is "$rc:$(at_head c.txt):$(at_head n.txt | sed -n '8p;24p' | tr '\n' ' ')" "0:c:8 24 " "--patch: d skips a file's hunks; end of input stops"

# nothing selected: no apply, the draft stays open
D6=$(draft_from 'echo q > q.txt')
H=$(hd); L=$(entries)
run sh -c "printf 'n\n' | '$AL' apply '$D6' --patch"
is "$rc:$(hd):$(entries):$(state_of "$D6")" "0:$H:$L:open" "--patch answered n to everything: no commit, no entry, draft open"
like "$err" "nothing selected: draft $D6 stays open" "…saying so"
run sh -c "printf 'n\n' | '$AL' apply '$D6' --patch --json"
is "$(echo "$out" | jf state)" open "…with --json one document on stdout (the questions on stderr)"
like "$err" "Apply this change to q.txt" "…the questions went to stderr"
# a decided draft is refused before any question
run sh -c "printf 'y\n' | '$AL' apply '$D' --patch"
is "$rc" 9 "--patch on a decided draft: exit 9"
like "$err" "draft $D was already partially_applied" "…saying so, asking nothing"
# the hunks --patch shows are the agent's bytes: on a terminal, only text,
# tabs, line ends and colour pass (as a run's output); piped, as they are
D7=$(draft_from 'printf "a\033]0;title\007b\033[2Jc\n" > esc.txt')
script -qfc "printf 'n\n' | '$AL' apply '$D7' --patch" "$T/tty.out" >/dev/null 2>&1
like "$(cat -v "$T/tty.out")" '\+a\\x1b\]0;title\\x07b\\x1b\[2Jc' "--patch on a terminal shows a hunk's title and clear-screen escapes as \\xNN"
run sh -c "printf 'n\n' | '$AL' apply '$D7' --patch"
like "$(printf '%s' "$out" | od -An -c | tr -s ' ' | tr -d '\n')" 'a 033 ] 0 ; t i t l e \\a b 033 \[ 2 J c' "…piped, the bytes as they are"
ok "fsck is clean" -- "$AL" fsck
done_testing
