#!/bin/bash
# Every hostile DeltaBundle is refused with its reason, by inspect and by
# apply, and a refused bundle changes nothing.
. "$(dirname "$0")/../lib.sh"
MK="$(dirname "$0")/../bundles/mkbundle.py"
"$AL" init >/dev/null
mkdir -p "$T/p" && echo a > "$T/p/a.txt"
B=$("$AL" project create proj --from "$T/p")

python3 "$MK" "$T/good.tar.zst" "$B" good
run "$AL" bundle inspect "$T/good.tar.zst"
is "$rc" 0 "the forged good bundle verifies (the generator speaks the format)"
before=$(store_state); head0=$("$AL" project head proj)

refused() { # refused CASE PATTERN
	python3 "$MK" "$T/$1.tar.zst" "$B" "$1"
	run "$AL" bundle inspect "$T/$1.tar.zst"
	is "$rc" 6 "$1: inspect refuses it (6)"
	like "$err" "$2" "  because: $2"
	run "$AL" bundle apply "$T/$1.tar.zst" proj --base "$B"
	is "$rc" 6 "  apply refuses it too"
	is "$(store_state):$("$AL" project head proj)" "$before:$head0" "  and nothing changed"
}
refused absolute "absolute path"
refused dotdot "'\.\.' are not names"
refused dotdot-inner "'\.\.' are not names"
refused empty-comp "empty name"
refused dot "'\.' and '\.\.' are not names"
refused backslash "backslash in path"
refused long "name longer than 255 bytes"
refused reserved "reserved name"
refused reserved-case "reserved name"
refused nul "NUL inside a name|not JSON"
refused newline "control character"
refused casefold "paths differ only in case"
refused hardlink "is a hardlink"
refused device "device, FIFO or socket"
refused fifo "device, FIFO or socket"
refused setuid-index "setuid/setgid"
refused setuid-member "setuid/setgid"
refused extra-member "more members than index entries|not in the index"
refused missing-member "no member for other.txt"
refused duplicate-member "more members than index entries|duplicate member"
refused size "size differs from the index"
refused digest "does not match its digest"
refused noncanonical "not in canonical form"
refused index-not-first "first member is not .airlock/bundle.json"
refused plain-tar "not zstd-compressed"
refused unsorted "not sorted"
refused outside-member "unexpected member"
head -c 5000 /dev/urandom > "$T/garbage.tar.zst"
run "$AL" bundle inspect "$T/garbage.tar.zst"
is "$rc" 6 "random bytes are refused"

run "$AL" bundle apply "$T/good.tar.zst" proj --base "$B"
is "$rc" 0 "the good bundle applies"
run "$AL" snapshot export "$out" "$T/x"
is "$(cat "$T/x/new.txt")" "hello from a bundle" "  with its content"
run "$AL" bundle apply "$T/good.tar.zst" proj --base "$("$AL" project head proj)"
is "$rc" 6 "applying it again on a head that already has the file is refused"
like "$err" "new.txt already exists" "  naming the path"
done_testing
