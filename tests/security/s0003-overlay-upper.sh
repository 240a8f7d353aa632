#!/bin/bash
# A run's upper layer, produced by a real overlayfs mount, comes back as
# exactly its changes; what a run may not hand back is neutralised.
. "$(dirname "$0")/../lib.sh"
need_root
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/keep" "$S/gone/deep" "$S/replaced"
echo same > "$S/same.txt"; echo old > "$S/edit.txt"; echo bye > "$S/del.txt"; echo x > "$S/gone/deep/x"
echo r > "$S/replaced/old"; echo m > "$S/mode.sh"; echo k > "$S/keep/k"
B=$("$AL" snapshot import "$S")
L="$T/lower"; U="$T/upper"; W="$T/work"; M="$T/merged"
"$AL" snapshot export "$B" "$L" >/dev/null; mkdir -p "$U" "$W" "$M"
mount -t overlay overlay -o "lowerdir=$L,upperdir=$U,workdir=$W" "$M" || skip_all "overlay mount failed"
trap 'umount "$M" 2>/dev/null; chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
(
	cd "$M"
	echo new >> edit.txt
	rm del.txt
	rm -rf gone
	rm -rf replaced; mkdir replaced; echo fresh > replaced/new
	chmod 755 mode.sh
	cat same.txt > same.tmp && cat same.tmp > same.txt && rm same.tmp   # copy-up, same bytes
	mkdir -p added/empty; echo a > added/a
	ln -s /etc/shadow escape; ln -s ../../.. up
	mkfifo pipe; mknod dev c 1 3
	echo s > suid; chmod 4755 suid
	echo h > hard1; ln hard1 hard2
	touch "$(printf 'bad\nname')"
)
umount "$M"
run "$AL" snapshot apply-upper "$B" "$U" --json
is "$rc" 0 "the upper layer applies to the base"
R=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
like "$out" '"unchanged_copyups":1' "a copied-up but identical file is not a change"
run "$AL" snapshot diff "$B" "$R"
is "$out" "A added
A added/a
A added/empty
D del.txt
M edit.txt
A escape
D gone
D gone/deep
D gone/deep/x
A hard1
A hard2
M mode.sh
A replaced/new
D replaced/old
A suid
A up" "exactly the run's changes: edits, deletions (whiteouts), an opaque directory, new files and dirs"
"$AL" snapshot export "$R" "$T/out" >/dev/null
is "$(readlink "$T/out/escape")" "/etc/shadow" "a symlink is kept as a symlink, not followed"
is "$(stat -c %a "$T/out/suid")" 755 "setuid bits are removed"
is "$(stat -c %h "$T/out/hard1")" 1 "hardlinks become independent files"
ok "FIFOs and device files are not kept" -- test ! -e "$T/out/pipe" -a ! -e "$T/out/dev"
run "$AL" snapshot apply-upper "$B" "$U"
like "$err" "pipe: FIFO not kept" "the FIFO is reported"
like "$err" "dev: device file not kept" "the device file is reported"
like "$err" "suid: setuid/setgid bits removed" "the setuid bit removal is reported"
like "$err" "hard1: hardlink kept as an independent file" "the hardlink is reported"
like "$err" 'bad\\x0aname: control character in a name, not kept' "an invalid name is reported and not kept"
is "$(cat "$T/out/edit.txt")" "old
new" "contents come back exactly"
run "$AL" snapshot apply-upper "$B" "$T/nope"
is "$rc" 3 "a missing upper directory is not found"
run "$AL" fsck
is "$rc" 0 "fsck is clean"
done_testing
