#!/bin/bash
# Import refuses what a snapshot cannot hold, names the path, stores nothing.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
mkdir -p "$T/base" && echo base > "$T/base/f" && "$AL" snapshot import "$T/base" >/dev/null
before=$(store_state)

refused() { # refused DESCRIPTION PATTERN  (tree in $T/bad)
	run "$AL" snapshot import "$T/bad"
	is "$rc" 6 "$1 is refused (exit 6)"
	like "$err" "$2" "  with a message naming the path"
	is "$(store_state)" "$before" "  and the store is unchanged"
	rm -rf "$T/bad"
}
fresh() { rm -rf "$T/bad"; mkdir -p "$T/bad/d"; echo ok > "$T/bad/a"; head -c 300000 /dev/urandom > "$T/bad/big"; }

fresh; mkfifo "$T/bad/d/pipe"
refused "a FIFO" "cannot import d/pipe: it is a FIFO"
fresh; python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$T/bad/d/sock"
refused "a socket" "cannot import d/sock: it is a socket"
if [ "$(id -u)" = 0 ]; then
	fresh; mknod "$T/bad/d/null" c 1 3
	refused "a device file" "cannot import d/null: it is a device file"
else
	_n=$((_n + 3)); echo "ok $((_n-2)) # skip device files need root"; echo "ok $((_n-1)) # skip"; echo "ok $_n # skip"
fi
fresh; touch "$T/bad/d/$(printf 'bad\xffname')"
refused "a name that is not UTF-8" 'cannot import d/bad\\xffname: name is not valid UTF-8'
fresh; touch "$T/bad/d/$(printf 'new\nline')"
refused "a name with a control character" 'cannot import d/new\\x0aline: control character'
fresh; touch "$T/bad/d/$(printf 'esc\033[31m')"
refused "a name with a terminal escape" 'cannot import d/esc\\x1b\[31m: control character'
fresh; ln -s "$(printf 'tar\x01get')" "$T/bad/d/l"
refused "a symlink target with a control character" "cannot import d/l: symlink target"

# the FIFO is refused without being opened (opening one would block)
fresh; mkfifo "$T/bad/zz-fifo"
run timeout 10 "$AL" snapshot import "$T/bad"
is "$rc" 6 "a FIFO never blocks the import"
rm -rf "$T/bad"

# deep trees and long paths are bounded
mkdir -p "$T/deep"; p="$T/deep"; for i in $(seq 1 260); do p="$p/d"; done
mkdir -p "$p" 2>/dev/null || (cd "$T/deep" && for i in $(seq 1 260); do mkdir d && cd d; done)
run "$AL" snapshot import "$T/deep"
is "$rc" 8 "a tree deeper than 256 levels is refused (limit, exit 8)"
like "$err" "deeper than 256 levels" "  and says so"
is "$(store_state)" "$before" "  and the store is unchanged"

# hardlinks are independent files (documented); unreadable files are an error
mkdir -p "$T/hl" && echo same > "$T/hl/one" && ln "$T/hl/one" "$T/hl/two"
run "$AL" snapshot import "$T/hl"
is "$rc" 0 "hardlinked files import"
show=$("$AL" snapshot show "$out")
is "$(echo "$show" | awk '{print $1, $3, $4, $5}' | uniq -c -f0 | wc -l)" 2 "as two independent entries"
is "$(echo "$show" | awk '{print $4}' | sort -u | wc -l)" 1 "  sharing one stored object"
done_testing
