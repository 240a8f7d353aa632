#!/bin/bash
# The web UI in a real browser: Playwright (playwright-core, web/package.json)
# drives Debian's Chromium headless against a daemon on 127.0.0.1, port 0
# (web/tests/e2e.mjs, one TAP line per check): log in; a run's review;
# inline and side by side (remembered); two of three files ticked and the
# hunk request's shape; accept selected; the head moves; the audit group
# shows the apply with its paths; inclusion proofs verified in the browser,
# and failed for a tampered entry; another tenant's token gets the missing
# object's page; an agent gets no apply button; a review done with the
# keyboard only; axe-core finds nothing serious; hostile names and contents
# execute nothing (no dialog, no console error, no CSP violation).
# Every API answer the browser received is checked against docs/openapi.json.
. "$(dirname "$0")/../lib.sh"
CHROMIUM=${AIRLOCK_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip_all "no Chromium at $CHROMIUM (scripts/deps.sh installs Debian's)"
[ -f "$SRC_ROOT/web/node_modules/playwright-core/package.json" ] || skip_all "web/node_modules is not installed (make)"
unshare -U true 2>/dev/null || skip_all "no user namespaces: the test's drafts come from runs"
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/docs"
printf 'alpha\n' > "$S/a.txt"; printf 'bravo\n' > "$S/b.txt"
seq 1 60 | sed 's/^/line /' > "$S/c.txt"
printf '# notes\n' > "$S/docs/notes.md"
"$AL" project create p --from "$S" >/dev/null
"$AL" admin principal create rv --role reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" admin tenant create acme >/dev/null
"$AL" --tenant acme admin principal create eve --role admin,author,reviewer,agent >/dev/null
export RV_TOKEN=$("$AL" admin token create rv 2>/dev/null)
export AG_TOKEN=$("$AL" admin token create ag 2>/dev/null)
export OTHER_TOKEN=$("$AL" --tenant acme admin token create eve 2>/dev/null)

# the run whose draft is reviewed: three files changed (c.txt in two hunks), one added
rid() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
export RUN=$("$AL" run p --json --group web-review -- sh -c 'echo alpha2 >> a.txt; echo bravo2 >> b.txt; sed -i -e "s/^line 5$/line five/" -e "s/^line 50$/line fifty/" c.txt; echo new > docs/new.md' | rid)
# a second run for the keyboard-only review
export RUN2=$("$AL" run p --json -- sh -c 'echo kb >> docs/notes.md' | rid)
# hostile names and contents (docs/threat-model.md, the web UI)
export RUN3=$("$AL" run p --json -- sh -c '
	printf "<img src=x onerror=alert(1)>\n</script><script>alert(2)</script>\n[x](javascript:alert(3))\n\342\200\256txt.exe\n" > "<img src=x onerror=alert(1)>.md"
	printf "a\342\200\256b" > "$(printf "bidi-\342\200\256gnp.txt")"
	printf "%s\n" "javascript:alert(4)" > "javascript:alert(4)"
	head -c 1048576 /dev/zero | tr "\0" "x" > long-line.txt
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\" onload=\"alert(5)\"><script>alert(6)</script><rect width=\"10\" height=\"10\"/></svg>" > evil.svg
	printf "\211PNG\r\n\032\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\10\6\0\0\0\37\25\304\211\0\0\0\rIDATx\234c\370\377\377?\0\5\376\2\376\247\65\201\204\0\0\0\0IEND\256B\140\202" > dot.png
' | rid)
[ -n "$RUN" ] && [ -n "$RUN2" ] && [ -n "$RUN3" ] || { echo "not ok 1 - the runs the test reviews"; echo "1..1"; exit 1; }
serve_start
export URL CHROMIUM API_LOG T
# the agent's own run (an agent sees its own runs only)
api POST /projects/p/runs "$AG_TOKEN" '{"argv":["sh","-c","echo agent >> a.txt"],"wait":true}'
export AGENT_RUN=$(echo "$out" | field id)
export HEAD_BEFORE=$("$AL" project head p)
mkdir -p "$API_LOG"
node "$SRC_ROOT/web/tests/e2e.mjs" >"$T/e2e.tap" 2>"$T/e2e.err"
rc=$?
# renumber its TAP lines into this test's
while IFS= read -r line; do
	case $line in
	"ok "*) _n=$((_n + 1)); echo "ok $_n ${line#ok [0-9]* }" ;;
	"not ok "*) _n=$((_n + 1)); _failed=$((_failed + 1)); echo "not ok $_n ${line#not ok [0-9]* }" ;;
	1..*) ;; # its plan: this test prints one plan, at its end
	*) echo "$line" ;;
	esac
done <"$T/e2e.tap"
if [ "$rc" != 0 ] && ! grep -q '^not ok' "$T/e2e.tap"; then
	_n=$((_n + 1)); _failed=$((_failed + 1))
	echo "not ok $_n - the browser suite ran to its end (exit $rc)"
	sed 's/^/# /' "$T/e2e.err" | tail -30
fi
is "$("$AL" project head p)" "$(cat "$T/head-after" 2>/dev/null || echo none)" "the head the page showed is the project's head"
serve_stop
done_testing
