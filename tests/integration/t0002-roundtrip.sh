#!/bin/bash
# import -> export gives back the same tree: contents, modes, symlinks, empty dirs.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null

S="$T/src"
mkdir -p "$S/dir/sub" "$S/empty" "$S/ro" "$S/sticky" "$S/uni/çé日本"
echo "hello" > "$S/hello.txt"
: > "$S/zero"
printf 'x\0y' > "$S/dir/bin"
head -c 700000 /dev/urandom > "$S/dir/large.bin"          # loose object
yes "line of text" | head -c 400000 > "$S/dir/large.txt"   # loose, compressible
echo "spaces" > "$S/dir/a file with spaces"
echo "script" > "$S/dir/run.sh"; chmod 0755 "$S/dir/run.sh"
echo "secret" > "$S/dir/sub/private"; chmod 0600 "$S/dir/sub/private"
echo "readonly" > "$S/ro/file"; chmod 0444 "$S/ro/file"; chmod 0555 "$S/ro"
chmod 1777 "$S/sticky"; chmod 0711 "$S/dir/sub"
ln -s hello.txt "$S/rel-link"
ln -s /etc/passwd "$S/abs-link"
ln -s does/not/exist "$S/dangling"
ln -s ../.. "$S/dir/up-link"
ln "$S/hello.txt" "$S/hardlink"
echo unicode > "$S/uni/çé日本/ファイル"

listing() { (cd "$1" && find . -mindepth 1 -printf '%P %y %m %s %l\n' | LC_ALL=C sort); }

run "$AL" snapshot import "$S"
is "$rc" 0 "import a tree with every kind of entry"
id=$out
run "$AL" snapshot export "$id" "$T/out"
is "$rc" 0 "export it"
# directory sizes differ between filesystems; compare everything else
is "$(listing "$S" | awk '$2=="d"{$4=""}1')" "$(listing "$T/out" | awk '$2=="d"{$4=""}1')" \
	"types, modes, sizes and symlink targets come back exactly"
ok "contents come back exactly (diff -r, links not followed)" -- diff -r --no-dereference "$S" "$T/out"
is "$(stat -c %h "$T/out/hardlink")" 1 "a hardlink comes back as an independent file"
is "$("$AL" snapshot import "$T/out")" "$id" "re-importing the export gives the same id"

run "$AL" snapshot show "$id"
like "$out" "^dir 0755 [0-9]+ sha256:[0-9a-f]{64} dir$" "show lists a directory"
like "$out" "file 0600 7 sha256:[0-9a-f]{64} dir/sub/private" "show lists a file with its mode and size"
like "$out" "symlink 0777 9 sha256:[0-9a-f]{64} rel-link" "show lists a symlink"
like "$out" "dir 0755 0 sha256:[0-9a-f]{64} empty" "show lists an empty directory"
like "$(echo "$out" | grep -c '')" "^22$" "show has one line per entry"
run "$AL" snapshot show --json "$id"
like "$out" '"path":"abs-link","sha256":"sha256:[0-9a-f]+","size":11,"target":"/etc/passwd","type":"symlink"' "show --json gives symlink targets"

# refusal to write into a non-empty directory, and --force
mkdir -p "$T/busy" && echo keep > "$T/busy/keep"
run "$AL" snapshot export "$id" "$T/busy"
is "$rc" 7 "export into a non-empty directory is refused (7)"
like "$err" "not empty \(use --force" "and says to use --force"
is "$(ls "$T/busy")" "keep" "and writes nothing"
echo old > "$T/busy/hello.txt"
ln -s /nonexistent "$T/busy/zero"
run "$AL" snapshot export --force "$id" "$T/busy"
is "$rc" 0 "export --force writes into it"
is "$(cat "$T/busy/hello.txt")" "hello" "replacing a file in the way"
ok "and a symlink in the way (replaced by the file, not followed)" -- test -f "$T/busy/zero" -a ! -L "$T/busy/zero"
is "$(cat "$T/busy/keep")" "keep" "other files are left alone"

mkdir -p "$T/busy2/hello.txt/inner"
run "$AL" snapshot export --force "$id" "$T/busy2"
is "$rc" 7 "--force never replaces a directory with a file"
like "$err" "refusing to replace directory hello.txt" "and names it"
# A digest loads no OpenSSL configuration or provider (src/lib/util.c):
# with the configuration file a FIFO that nobody writes, reading it would
# block until the timeout.  These commands hash and verify, and sign
# nothing (test_util shows a signature's setup does read it).
mkfifo "$T/openssl.cnf"
for c in "snapshot import $S" "snapshot show $id" "snapshot export $id $T/nocnf" \
	"snapshot diff $id $("$AL" snapshot import "$T/busy")"; do
	# shellcheck disable=SC2086 # the words of c are the arguments
	OPENSSL_CONF="$T/openssl.cnf" timeout 30 "$AL" $c >/dev/null
	is "$?" 0 "${c%% sha256*} reads no OpenSSL configuration"
done
done_testing
