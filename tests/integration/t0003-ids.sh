#!/bin/bash
# Snapshot ids: the golden vector, independence from order and mtimes, and
# sensitivity to every byte, mode bit and name; the stat cache never lies.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null

# The golden tree of docs/formats.md.
g="$T/golden"; mkdir -p "$g/sub" "$g/empty"
printf 'hello\n' > "$g/hello.txt"; chmod 0644 "$g/hello.txt"
printf '#!/bin/sh\n' > "$g/sub/run.sh"; chmod 0755 "$g/sub/run.sh"
ln -s hello.txt "$g/link"
chmod 0755 "$g/sub" "$g/empty"
is "$("$AL" snapshot import "$g")" "$(python3 "$(dirname "$0")/../golden/tree_id.py" "$g")" \
	"the id matches an independent implementation of the encoding"
is "$("$AL" snapshot import "$g")" "$(cat "$(dirname "$0")/../golden/golden-tree.id")" \
	"the golden tree has the documented id"

mk() { # mk DIR ORDER: the same tree, created in a different order
	local d=$1; mkdir -p "$d"
	if [ "$2" = fwd ]; then
		mkdir -p "$d/a/b" "$d/c"; for i in 1 2 3 4 5; do echo "$i" > "$d/a/f$i"; done
		echo z > "$d/c/z"; echo top > "$d/top"
	else
		echo top > "$d/top"; mkdir -p "$d/c"; echo z > "$d/c/z"
		mkdir -p "$d/a"; for i in 5 4 3 2 1; do echo "$i" > "$d/a/f$i"; done; mkdir "$d/a/b"
	fi
	chmod 0755 "$d" "$d/a" "$d/a/b" "$d/c"; find "$d" -type f -exec chmod 0644 {} +
}
mk "$T/t1" fwd; mk "$T/t2" rev
touch -d '2001-02-03 04:05:06' "$T/t2/a/f1" "$T/t2/top"
id1=$("$AL" snapshot import "$T/t1"); id2=$("$AL" snapshot import "$T/t2")
is "$id2" "$id1" "creation order and mtimes do not change the id"
is "$("$AL" snapshot import --no-cache "$T/t1")" "$id1" "the id is the same with and without the stat cache"

check_diff() { # check_diff DESCRIPTION -- mutate commands
	local desc=$1; shift; shift
	rm -rf "$T/m"; cp -a "$T/t1" "$T/m"; "$@"
	local id; id=$("$AL" snapshot import "$T/m")
	_n=$((_n + 1))
	if [ -n "$id" ] && [ "$id" != "$id1" ]; then echo "ok $_n - $desc changes the id"; else
		echo "not ok $_n - $desc changes the id"; _failed=$((_failed + 1)); fi
}
check_diff "one changed byte" -- sed -i 's/3/4/' "$T/m/a/f3"
check_diff "one mode bit" -- chmod 0645 "$T/m/a/f3"
check_diff "a directory's mode" -- chmod 0700 "$T/m/a/b"
check_diff "a renamed file" -- mv "$T/m/a/f3" "$T/m/a/f33"
check_diff "an added empty directory" -- mkdir "$T/m/a/new"
check_diff "a file replaced by a symlink" -- bash -c "rm $T/m/top && ln -s a $T/m/top"

# the stat cache: same size, same mtime, new content must still be seen
rm -rf "$T/c"; cp -a "$T/t1" "$T/c"; touch -d '2020-01-01 00:00:00' "$T/c/a/f1" "$T/c/top"
# files changed in the import's second are never cached (racy): the imports
# run a few seconds later by the injected clock (AIRLOCK_NOW), not by sleeping
LATER=$(( $(date +%s) + 5 ))
idc=$(AIRLOCK_NOW=$LATER "$AL" snapshot import "$T/c")
AIRLOCK_NOW=$LATER run "$AL" snapshot import --json "$T/c"
like "$out" '"cache_hits":[1-9]' "re-import of old files uses the stat cache"
like "$out" "\"id\":\"$idc\"" "with the same id"
echo 9 > "$T/c/a/f1"; touch -d '2020-01-01 00:00:00' "$T/c/a/f1"   # same size and mtime
run "$AL" snapshot import "$T/c"
ok "a same-size, same-mtime rewrite is not hidden by the cache" -- test "$out" != "$idc"
is "$out" "$("$AL" snapshot import --no-cache "$T/c")" "and matches a full read"

# diff between snapshots
rm -rf "$T/d"; cp -a "$T/t1" "$T/d"
echo changed > "$T/d/a/f1"; rm "$T/d/top"; mkdir "$T/d/new"; echo n > "$T/d/new/n"; chmod 0600 "$T/d/c/z"
rm -rf "$T/d/a/b"; echo now-a-file > "$T/d/a/b"
idd=$("$AL" snapshot import "$T/d")
run "$AL" snapshot diff "$id1" "$idd"
is "$out" "M a/b
M a/f1
M c/z
A new
A new/n
D top" "diff lists added, modified (content, mode, type) and deleted paths"
run "$AL" snapshot diff "$id1" "$id1"
is "$rc:$out" "0:" "diff of a snapshot with itself is empty"
run "$AL" snapshot diff --json "$id1" "$idd"
like "$out" '\{"new":\{"mode":"0644","sha256":"sha256:[0-9a-f]+","size":11,"type":"file"\},"old":\{"mode":"0755","sha256":"sha256:[0-9a-f]+","size":0,"type":"dir"\},"op":"M","path":"a/b"\}' "diff --json shows a type change with old and new"
done_testing
