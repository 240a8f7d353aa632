#!/bin/sh
# The layers the build enforces, checked on the objects (make check-layers):
#  - no include path escapes its directory's layer ("../");
#  - within each front-end (src/cli, src/server) and src/front, the files'
#    symbol dependencies form a DAG (tsort fails on a cycle), and src/front
#    calls nothing in src/cli or src/server.
# The include paths themselves are per directory in the Makefile: a
# forbidden #include does not compile.
# usage: scripts/layers.sh BUILD_DIR
set -eu
B=${1:-build}
fail=0
if grep -nE '#[[:space:]]*include[[:space:]]*[<"][^">]*\.\./' src/cli/*.[ch] src/server/*.[ch] src/front/*.[ch]; then
	echo "layers: an include reaches outside its layer (\"../\")" >&2
	fail=1
fi
# defs: "file symbol" for each global definition; refs: "file symbol" for each undefined one
defs=$(mktemp) refs=$(mktemp) edges=$(mktemp)
trap 'rm -f "$defs" "$refs" "$edges"' EXIT
for f in src/cli/*.c src/server/*.c src/front/*.c; do
	o=$B/${f%.c}.o
	nm -g --defined-only "$o" | awk -v f="$f" 'NF == 3 { print $3, f }' >>"$defs"
	nm -u "$o" | awk -v f="$f" '{ print $NF, f }' >>"$refs"
done
sort -o "$defs" "$defs"
sort -o "$refs" "$refs"
# "user provider" for each reference resolved by another file of the front-ends
join "$refs" "$defs" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$edges"
if awk '$1 ~ /^src\/front\// && $2 !~ /^src\/front\//' "$edges" | grep .; then
	echo "layers: src/front uses a front-end's symbols (above)" >&2
	fail=1
fi
for d in src/cli src/server src/front; do
	if ! grep "^$d/[^ ]* $d/" "$edges" | tsort >/dev/null; then
		echo "layers: the files of $d depend on each other in a cycle (tsort above)" >&2
		fail=1
	fi
done
[ "$fail" = 0 ] && echo "layers: ok"
exit "$fail"
