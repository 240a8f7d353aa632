#!/bin/bash
# Every fenced example in docs/cli.md runs: each ```sh block as it is (with
# set -e) in a directory whose home has a project p made from ./work; the
# ```ini config example is parsed by airlock; ```text blocks are output or
# formats. A fence without one of these marks fails the test, so a new
# example cannot go unchecked.
. "$(dirname "$0")/../lib.sh"
DOC="$SRC_ROOT/docs/cli.md"
python3 - "$DOC" "$T/blocks" <<'PY'
import os, re, sys
text = open(sys.argv[1]).read()
os.makedirs(sys.argv[2])
n = 0
for m in re.finditer(r"^```([^\n]*)\n(.*?)^```$", text, re.S | re.M):
    n += 1
    open(os.path.join(sys.argv[2], "%02d.%s" % (n, m.group(1) or "unmarked")), "w").write(m.group(2))
PY
ls "$T/blocks" > "$T/list"
is "$(grep -vcE '\.(sh|ini|text)$' "$T/list")" 0 "every fenced block in docs/cli.md is marked sh, ini or text"
is "$(grep -cE '\.sh$' "$T/list")" 1 "  the sh examples (count it when adding one)"
"$AL" init >/dev/null
W="$T/cwd"; mkdir -p "$W/work"; echo one > "$W/work/a"
(cd "$W" && "$AL" project create p --from ./work >/dev/null)
mkdir -p "$T/bin"; ln -s "$AL" "$T/bin/airlock"
if have_userns; then
	for b in "$T"/blocks/*.sh; do
		run env PATH="$T/bin:$PATH" bash -ec "cd '$W'; $(cat "$b")"
		is "$rc" 0 "docs/cli.md example $(basename "$b") runs"
		[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -5 | sed 's/^/# /'
	done
	run "$AL" project log p
	is "$(printf '%s\n' "$out" | wc -l)" 3 "  it committed twice (apply, commit)"
fi
for b in "$T"/blocks/*.ini; do
	mkdir -p "$XDG_CONFIG_HOME/airlock"
	cp "$b" "$XDG_CONFIG_HOME/airlock/config"
	run "$AL" --server= whoami
	is "$rc" 0 "docs/cli.md config example $(basename "$b") parses"
	run "$AL" whoami
	like "$err" "token_file ~/.config/airlock/token: No such file" "  and its server and token_file are used"
	rm "$XDG_CONFIG_HOME/airlock/config"
done
done_testing
