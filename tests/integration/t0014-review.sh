#!/bin/bash
# review: every change of a draft, unified diffs for text, binary reported
# with sizes and digests, side-by-side hunks in --json.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P/d"
printf 'one\ntwo\nthree\n' > "$P/text.txt"; printf 'bin\0old' > "$P/blob.bin"; echo gone > "$P/d/gone"
echo keep > "$P/mode.sh"; ln -s text.txt "$P/link"
"$AL" project create r --from "$P" >/dev/null
rm -rf "$T/w"; cp -a "$P" "$T/w"
printf 'one\nTWO\nthree\nfour\n' > "$T/w/text.txt"; printf 'bin\0new!' > "$T/w/blob.bin"; rm "$T/w/d/gone"
chmod 755 "$T/w/mode.sh"; ln -sfn mode.sh "$T/w/link"; echo added > "$T/w/new.txt"
D=$("$AL" draft create r --from "$T/w")

run "$AL" review "$D"
is "$rc" 0 "review succeeds"
like "$out" "M text.txt \(file, mode 0644\)" "a modified text file is listed"
like "$out" "@@ -1,3 \+1,4 @@" "  with a unified diff hunk"
like "$out" "-two
\+TWO" "  showing removed and added lines"
like "$out" "M blob.bin \(file, mode 0644\)
    binary: 7 bytes sha256:[0-9a-f]{64} -> 8 bytes sha256:[0-9a-f]{64}" "a binary file: sizes and digests, no diff"
like "$out" "D d/gone" "a deleted file"
like "$out" "\+\+\+ /dev/null" "  diffed against /dev/null"
like "$out" "M mode.sh \(file, mode 0644 -> 0755\)" "a mode change"
like "$out" "symlink text.txt -> mode.sh" "a symlink retarget"
like "$out" "A new.txt" "an added file"

run "$AL" review --stat "$D"
like "$out" "M text.txt \| \+2 -1" "--stat counts lines"
like "$out" "6 files changed, 3 insertions\(\+\), 2 deletions\(-\)" "--stat total"

run "$AL" review --json "$D"
like "$out" '"stat":\{"files":6,"additions":3,"deletions":2\}' "--json stat"
like "$out" '"side_by_side":\[\{"left":\{"no":1,"text":"one"\},"right":\{"no":1,"text":"one"\}\},\{"left":\{"no":2,"text":"two"\},"right":\{"no":2,"text":"TWO"\}\}' \
	"--json hunks carry a side-by-side form (removed paired with added)"
like "$out" '\{"left":null,"right":\{"no":4,"text":"four"\}\}' "  an added line has no left side"
like "$out" '"path":"blob.bin","binary":true' "--json marks binary files"
like "$out" '"target":"mode.sh"' "--json gives symlink targets"
ok "--json is valid JSON" -- python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out"

run "$AL" review d0000000000000
is "$rc" 3 "an unknown draft is not found"
run "$AL" review dnothere
is "$rc" 6 "a malformed draft id is invalid input (6), as a malformed --base is"
done_testing
