#!/bin/bash
# DeltaBundles carry a draft's changes to another machine (home).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P/dir/old"
echo a > "$P/a.txt"; echo gone > "$P/dir/old/gone"; echo keep > "$P/keep"
B=$("$AL" project create src --from "$P")
rm -rf "$T/w"; cp -a "$P" "$T/w"
echo A >> "$T/w/a.txt"; rm -rf "$T/w/dir/old"; mkdir -p "$T/w/dir/new/empty"; echo n > "$T/w/dir/new/n"
head -c 400000 /dev/urandom > "$T/w/big.bin"; ln -s a.txt "$T/w/link"; chmod 700 "$T/w/keep"
D=$("$AL" draft create src --from "$T/w")
DH=$("$AL" draft list --json src | grep -o '"head":"[^"]*"' | cut -d'"' -f4)

run "$AL" bundle export "$D" "$T/change.tar.zst"
is "$rc" 0 "bundle export writes the draft's changes"
id=$out
like "$id" '^sha256:[0-9a-f]{64}$' "  and prints the bundle id"
run tar --zstd -tf "$T/change.tar.zst"
is "$(echo "$out" | head -1)" ".airlock/bundle.json" "tar --zstd -tf lists it, the index first"
like "$out" "files/big.bin" "  with the new bytes"
is "$(tar --zstd -xOf "$T/change.tar.zst" .airlock/bundle.json | sha256sum | cut -c1-64)" "${id#sha256:}" \
	"the bundle id is the sha256 of its index"
"$AL" bundle export "$D" "$T/again.tar.zst" >/dev/null
ok "exporting twice gives the same bytes" -- cmp "$T/change.tar.zst" "$T/again.tar.zst"
run "$AL" bundle inspect "$T/change.tar.zst"
like "$out" "^bundle $id
base $B
head $DH" "inspect shows id, base and head"
like "$out" "D dir/old
D dir/old/gone" "  and the entries"
run "$AL" bundle inspect --json "$T/change.tar.zst"
like "$out" '"op":"A","path":"big.bin"' "inspect --json"

# another home: the same base tree, the bundle travels
export AIRLOCK_HOME="$T/other"
"$AL" init >/dev/null
B2=$("$AL" project create dst --from "$P")
is "$B2" "$B" "the other home has the same base snapshot"
run "$AL" bundle apply "$T/change.tar.zst" dst --base "$B2"
is "$rc:$out" "0:$DH" "applying the bundle there gives exactly the draft's head"
"$AL" snapshot export "$out" "$T/result" >/dev/null
ok "  byte for byte" -- diff -r --no-dereference "$T/w" "$T/result"
run "$AL" fsck
is "$rc" 0 "  and fsck is clean"

# a base that does not match the bundle's old versions is refused
"$AL" project create dst2 --from "$T/w" >/dev/null
B3=$("$AL" project head dst2)
before=$(store_state)
run "$AL" bundle apply "$T/change.tar.zst" dst2 --base "$B3"
is "$rc" 6 "a bundle whose old versions differ from the base is refused"
like "$err" "differs from the bundle's base" "  naming the path"
is "$(store_state):$("$AL" project head dst2)" "$before:$B3" "  nothing changed"

# the strategy applies when the project's head has moved
"$AL" project create dst3 --from "$P" >/dev/null
rm -rf "$T/w2"; cp -a "$P" "$T/w2"; echo other > "$T/w2/other"
"$AL" commit dst3 "$T/w2" --base "$B" >/dev/null
run "$AL" bundle apply "$T/change.tar.zst" dst3 --base "$B"
is "$rc" 5 "bundle apply on a moved head is strict by default (5)"
run "$AL" bundle apply "$T/change.tar.zst" dst3 --base "$B" --strategy rebase_if_disjoint
is "$rc" 0 "  and rebases with rebase_if_disjoint"
done_testing
