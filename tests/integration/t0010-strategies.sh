#!/bin/bash
# Commits by compare-and-swap: every strategy on every overlap kind.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P/dir/sub"
echo a > "$P/a.txt"; echo b > "$P/b.txt"; echo x > "$P/dir/x"; echo y > "$P/dir/sub/y"; echo f > "$P/f"
B=$("$AL" project create fin --from "$P")

# proj NAME: a fresh project at the same base
n=0
fresh() { n=$((n + 1)); name="p$n"; "$AL" project create "$name" --from "$P" >/dev/null; }
edit() { rm -rf "$T/w"; cp -a "$P" "$T/w"; (cd "$T/w" && eval "$1"); }
commit() { "$AL" commit "$name" "$T/w" --base "$B" "$@"; }
tree() { "$AL" snapshot show "$("$AL" project head "$name")" | awk '{print $1, $5}' | tr '\n' ' '; }
content() { "$AL" snapshot export "$("$AL" project head "$name")" "$T/x$n$1" >/dev/null && cat "$T/x$n$1/$1"; }

fresh
edit 'echo A2 >> a.txt'
run commit
is "$rc" 0 "a commit on the head it declares lands"
is "$("$AL" project head "$name")" "$out" "  and moves the head to its snapshot"

# ours: what lands first; theirs: the commit declaring the old base
declare -A OURS THEIRS KIND
OURS[same]='echo ours >> a.txt';             THEIRS[same]='echo theirs >> a.txt';           KIND[same]="same path"
OURS[deldir]='rm -rf dir';                   THEIRS[deldir]='echo t >> dir/x';               KIND[deldir]="deleted dir vs change beneath"
OURS[under]='echo o >> dir/sub/y';           THEIRS[under]='rm -rf dir';                    KIND[under]="change beneath vs deleted dir"
OURS[type]='rm f; mkdir f; echo in > f/in';  THEIRS[type]='echo t >> f';                    KIND[type]="file on one side, dir on the other"
OURS[del]='echo o >> b.txt';                 THEIRS[del]='rm b.txt';                        KIND[del]="modified vs deleted"

for k in same deldir under type del; do
	for s in strict rebase_if_disjoint; do
		fresh
		edit "${OURS[$k]}"; commit >/dev/null
		head=$("$AL" project head "$name")
		edit "${THEIRS[$k]}"
		run commit --strategy "$s"
		is "$rc" 5 "$s refuses an overlap: ${KIND[$k]} (exit 5)"
		is "$("$AL" project head "$name")" "$head" "  and the head does not move"
		run commit --strategy "$s" --json
		like "$out" "\"head\":\"$head\"" "  --json names the current head"
		[ "$s" = rebase_if_disjoint ] && like "$out" '"paths":\["[a-z./]+"' "  and the overlapping paths"
	done
done

# strict refuses even disjoint changes; rebase_if_disjoint replays them
fresh; edit 'echo o >> a.txt'; commit >/dev/null
edit 'echo t >> b.txt; mkdir newdir; echo n > newdir/n'
run commit
is "$rc" 5 "strict refuses a stale base even when disjoint"
run commit --strategy rebase_if_disjoint
is "$rc" 0 "rebase_if_disjoint replays a disjoint change"
is "$(content a.txt | tail -1)" "o" "  ours is kept"
is "$(content b.txt | tail -1)" "t" "  theirs is applied"
like "$(tree)" "dir newdir file newdir/n" "  with its new directory"
run "$AL" project log --json "$name"
like "$out" '"kind":"commit","strategy":"rebase_if_disjoint"' "  and the log records the strategy"

# both sides making the same change do not conflict
fresh; edit 'echo same >> a.txt; mkdir both'; commit >/dev/null
edit 'echo same >> a.txt; mkdir both; echo t > b.txt'
run commit --strategy rebase_if_disjoint
is "$rc" 0 "identical changes on both sides are not an overlap"
fresh; edit 'rm -rf dir b.txt'; commit >/dev/null
edit 'rm -rf dir b.txt; echo t >> a.txt'
run commit --strategy rebase_if_disjoint
is "$rc" 0 "a deletion made on both sides replays cleanly"
is "$(tree)" "file a.txt file f " "  leaving both deletions and the edit"

# conflict_copy on each kind: nothing is lost
for k in same deldir under type del; do
	fresh
	edit "${OURS[$k]}"; commit >/dev/null
	edit "${THEIRS[$k]}"
	run commit --strategy conflict_copy --json
	is "$rc" 0 "conflict_copy commits despite: ${KIND[$k]}"
	eval "res_$k=\$out"
	eval "tree_$k=\"\$(tree)\""
done
like "$res_same" '"conflicts":\[\{"path":"a.txt","copy_path":"a.conflict-[0-9a-f]{8}.txt"' "  same path: incoming lands as a.conflict-<id>.txt (extension kept)"
like "$tree_same" "file a.conflict-[0-9a-f]{8}.txt file a.txt" "  beside ours"
like "$res_deldir" '"path":"dir","copy_path":"dir.conflict-[0-9a-f]{8}"' "  deleted dir: theirs lands as dir.conflict-<id>"
like "$tree_deldir" "dir dir.conflict-[0-9a-f]{8} .*file dir.conflict-[0-9a-f]{8}/sub/y file dir.conflict-[0-9a-f]{8}/x" "  with their whole directory"
like "$res_under" '"path":"dir","copy_path":null,.*"theirs":null' "  their deletion of a changed dir is not applied (recorded, theirs null)"
like "$tree_under" "file dir/sub/y" "  ours kept"
like "$res_type" '"path":"f","copy_path":"f.conflict-[0-9a-f]{8}"' "  file vs dir: theirs file lands beside our dir"
like "$tree_type" "dir f file f/in file f.conflict-[0-9a-f]{8}" "  both present"
like "$res_del" '"path":"b.txt","copy_path":null' "  modified vs deleted: ours kept, recorded"
run "$AL" project log "$name"
like "$out" "conflict b.txt -> \(ours kept\)" "  the log lists the conflict"

# conflict names: deterministic, never overwrite, never nest
fresh; edit 'echo o >> a.txt'; commit >/dev/null
edit 'echo t >> a.txt'
c1=$(commit --strategy conflict_copy --json | grep -o 'a.conflict-[0-9a-f]*.txt')
fresh; edit 'echo o >> a.txt'; commit >/dev/null
edit 'echo t >> a.txt'
c2=$(commit --strategy conflict_copy --json | grep -o 'a.conflict-[0-9a-f]*.txt')
is "$c2" "$c1" "the conflict name is deterministic (from the change's id)"
fresh; edit "echo o >> a.txt; echo squatter > $c1"; commit >/dev/null
edit 'echo t >> a.txt'
run commit --strategy conflict_copy --json
like "$out" "\"copy_path\":\"${c1%.txt}-2.txt\"" "an existing path is never overwritten (-2 suffix)"
fresh; edit "echo c > $c1"; commit >/dev/null; B2=$("$AL" project head "$name")
edit "echo c > $c1; echo o >> $c1"; "$AL" commit "$name" "$T/w" --base "$B2" >/dev/null
edit "echo c > $c1; echo t >> $c1"
run "$AL" commit "$name" "$T/w" --base "$B2" --strategy conflict_copy --json
like "$out" '"copy_path":"a.conflict-[0-9a-f]{8}.txt"' "conflict markers never nest"
ok "  (no a.conflict-x.conflict-y)" -- test -z "$(echo "$out" | grep -o 'conflict-[0-9a-f]*.conflict')"

# bad input
run "$AL" project create fin
is "$rc" 7 "a duplicate project name is refused (7)"
run "$AL" project create "../x"
is "$rc" 6 "an invalid project name is refused (6)"
run "$AL" project head nope
is "$rc" 3 "an unknown project is not found (3)"
run "$AL" commit fin "$T/w" --base "$B" --strategy yolo
is "$rc" 2 "an unknown strategy is a usage error (2), as an unknown --role is"
run "$AL" commit fin "$T/w"
is "$rc" 2 "--base is required"
run "$AL" commit fin "$T/w" --base "sha256:$(printf '%064d' 1)"
is "$rc" 3 "a base that does not exist is not found"
run "$AL" fsck
is "$rc" 0 "fsck is clean after all of it"
done_testing
