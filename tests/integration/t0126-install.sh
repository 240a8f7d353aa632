#!/bin/bash
# Around the CLI: the man page (docs/man/airlock.1.scd, built by scdoc) is in
# step with every --help (each command path has its section with the same
# usage line, each flag --help names is in the page and each flag the page
# names is in some --help); make install with PREFIX and DESTDIR puts the
# programs, the man page, the bash and zsh completions and the web UI's
# files where they belong, and the installed airlock works; the completions
# offer verbs, subcommands, flags, project names and ids.
. "$(dirname "$0")/../lib.sh"
SRC="$SRC_ROOT"
SCD="$SRC/docs/man/airlock.1.scd"

# --- the man page and --help
python3 "$SRC/tests/helpers/helptree.py" "$AL" > "$T/tree.json"
is "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))) > 50)' "$T/tree.json")" True \
	"every command path's --help (over 50 of them)"
run python3 - "$T/tree.json" "$SCD" <<'PY'
import json, re, sys
tree = json.load(open(sys.argv[1]))
page = open(sys.argv[2]).read()
flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
in_help = set()
bad = []
for path, text in tree.items():
    in_help |= set(flag.findall(text))
    if not path:
        continue
    m = re.search(r"^## airlock %s\n\n```\n(.*?)```" % re.escape(path), page, re.S | re.M)
    if not m:
        bad.append("no section for 'airlock %s'" % path)
        continue
    want = text.split("\n\n")[0].strip()
    if m.group(1).split("\n\n")[0].strip() != want:
        bad.append("'airlock %s': the page's usage is not --help's" % path)
in_page = set(flag.findall(page))
bad += ["%s: in --help, not in the man page" % f for f in sorted(in_help - in_page)]
bad += ["%s: in the man page, in no --help" % f for f in sorted(in_page - in_help)]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
is "$rc" 0 "the man page's sections, usage lines and flags are --help's"
[ "$rc" = 0 ] || printf '%s\n' "$out" | head -20 | sed 's/^/# /'
# the check fails when they drift: a flag --help has and the page lacks
sed 's/--side-by-side/--side-by-sid/g' "$SCD" > "$T/drift.scd"
run python3 - "$T/tree.json" "$T/drift.scd" <<'PY'
import json, re, sys
tree = json.load(open(sys.argv[1])); page = open(sys.argv[2]).read()
flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
h = set().union(*(set(flag.findall(t)) for t in tree.values()))
sys.exit(0 if h == set(flag.findall(page)) else 1)
PY
is "$rc" 1 "  (a page missing --side-by-side is caught)"

# --- make install into a temporary directory
D="$T/dest"
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$SRC" install BUILD="$AIRLOCK_BUILD" PREFIX=/opt/al DESTDIR="$D"
is "$rc" 0 "make install PREFIX=/opt/al DESTDIR=..."
[ "$rc" = 0 ] || printf '%s\n' "$err" | tail -5 | sed 's/^/# /'
P="$D/opt/al"
ok "  bin/airlock, a link to lib/airlock/airlock" -- test -L "$P/bin/airlock" -a -x "$P/lib/airlock/airlock"
ok "  lib/airlock/airlock-init" -- test -x "$P/lib/airlock/airlock-init"
ok "  the busybox image" -- test -x "$P/lib/airlock/image/busybox/bin/busybox"
ok "  the microVM guest" -- test -f "$P/lib/airlock/guest/vmlinux" -a -f "$P/lib/airlock/guest/initramfs.cpio"
ok "  the man page" -- test -f "$P/share/man/man1/airlock.1"
ok "  the bash completion" -- test -f "$P/share/bash-completion/completions/airlock"
ok "  the zsh completion" -- test -f "$P/share/zsh/site-functions/_airlock"
ok "  the web UI's files" -- test -f "$P/share/airlock/web/index.html"
ok "  nothing outside DESTDIR/PREFIX" -- test "$(ls "$D")" = opt
run "$P/bin/airlock" --version
like "$out" "^airlock [0-9]" "the installed airlock runs"
run env MANWIDTH=80 man -l "$P/share/man/man1/airlock.1"
like "$out" "airlock review" "man -l the installed page: it renders"
like "$out" "CONFIGURATION" "  with the config file's section"
if have_userns; then
	H2="$T/home2"
	AIRLOCK_HOME="$H2" "$P/bin/airlock" init >/dev/null
	mkdir -p "$T/s"; echo a > "$T/s/a"
	AIRLOCK_HOME="$H2" "$P/bin/airlock" project create q --from "$T/s" >/dev/null
	run env AIRLOCK_HOME="$H2" "$P/bin/airlock" run q -- sh -c 'echo b > a'
	is "$rc" 0 "the installed airlock runs a sandbox: airlock-init and the image found beside it"
fi
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$SRC" install BUILD="$AIRLOCK_BUILD" PREFIX=/opt/al DESTDIR="$D"
is "$rc" 0 "make install again over it"

# --- completion
"$AL" init >/dev/null
mkdir -p "$T/p"; echo x > "$T/p/f"
"$AL" project create proj1 --from "$T/p" >/dev/null
DR=$("$AL" draft create proj1 --from "$T/p")
mkdir -p "$T/bin"; ln -s "$AL" "$T/bin/airlock"
BC="$P/share/bash-completion/completions/airlock"
# comp LINE: what bash completes at the end of "airlock LINE"
comp() {
	PATH="$T/bin:$PATH" bash -c 'source "$1"; shift
		read -ra COMP_WORDS <<<"airlock $1"; [ "${1: -1}" = " " ] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _airlock; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$BC" "$1" | sort | tr '\n' ' '
}
like "$(comp 'pro')" "^project $" "bash: a verb"
like "$(comp 'project ')" "contract create head list log" "bash: subcommands"
like "$(comp 'review --s')" "^--side-by-side --stat $" "bash: a verb's flags"
like "$(comp 'run proj1 --net')" "^--network $" "bash: run's flags"
like "$(comp 'run proj1 --network ')" "^egress none $" "bash: a flag's values"
like "$(comp 'runs ')" "^proj1 $" "bash: project names"
like "$(comp 'review ')" "^$DR @ $|^@ $DR $" "bash: draft ids and @"
AIRLOCK_HOME="$T/h3" "$AL" init >/dev/null
AIRLOCK_HOME="$T/h3" "$AL" project create other --from "$T/p" >/dev/null
like "$(comp "--home $T/h3 runs ")" "^other $" "bash: --home on the line is the home asked"
like "$(comp 'audit --kind ru')" "^run $" "bash: audit kinds, from its help"
like "$(comp 'admin token ')" "create list revoke" "bash: nested subcommands"
ZC="$P/share/zsh/site-functions"
run env PATH="$T/bin:$PATH" zsh -fc 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -D
	print -r -- "comps:$_comps[airlock]"
	source "$1/_airlock"
	_airlock_candidates runs ""; _airlock_candidates review --s' _ "$ZC"
like "$out" "comps:_airlock" "zsh: compinit finds _airlock for airlock"
like "$out" "proj1" "zsh: the candidates (project names)"
like "$out" "--side-by-side" "zsh: flags"
done_testing
