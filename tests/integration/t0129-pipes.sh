#!/bin/bash
# Output for scripts: in a pipe, and with NO_COLOR on a terminal, no colour;
# in a pipe full ids in every list, no pager, no progress (whatever the
# delay); -q leaves out informational lines; --json is unchanged by all of it.
. "$(dirname "$0")/../lib.sh"
TTY="python3 $SRC_ROOT/tests/helpers/ttyrun.py"
ESC=$(printf '\033')
unset NO_COLOR PAGER LESS AIRLOCK_PAGER AIRLOCK_COLOR
export TERM=xterm
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; printf 'one\ntwo\n' > "$S/f"
"$AL" project create p --from "$S" >/dev/null
printf 'one\nTWO\n' > "$S/f"
D=$("$AL" draft create p --from "$S")
cat > "$T/pager" <<EOF2
#!/bin/sh
cat > "$T/paged"
EOF2
chmod +x "$T/pager"
export AIRLOCK_PAGER="$T/pager"
nocolour() { ok "$1" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$2" "$ESC"; }

# --- pipes
run "$AL" draft list p
like "$out" "^$D open base sha256:[0-9a-f]{64} head sha256:[0-9a-f]{64}" "draft list piped: full ids"
nocolour "  no colour" "$out"
run "$AL" snapshot list
like "$out" "^sha256:[0-9a-f]{64} 1 files" "snapshot list piped: full ids"
run "$AL" project list
like "$out" "^p sha256:[0-9a-f]{64} 1$" "project list piped: full ids"
rm -f "$T/paged"
run "$AL" project log p
like "$out" "^1 sha256:[0-9a-f]{64} create" "project log piped: full ids"
ok "  no pager" -- test ! -e "$T/paged"
run "$AL" audit
ok "audit piped: no pager" -- test ! -e "$T/paged"
nocolour "  no colour" "$out"
B="$T/big"; mkdir -p "$B"
for i in $(seq 1 200); do echo "$i" > "$B/f$i"; done
run env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" snapshot import "$B"
is "$err" "" "import piped (stderr too), delay 0: no progress"
like "$out" "^sha256:[0-9a-f]{64}$" "  only the id"
run env AIRLOCK_PROGRESS_DELAY_MS=bogus "$AL" snapshot import "$B"
is "$rc" 0 "a malformed AIRLOCK_PROGRESS_DELAY_MS: the default (1 s)"

# --- NO_COLOR on a terminal
out=$($TTY env NO_COLOR=1 AIRLOCK_PAGER= "$AL" review "$D")
like "$out" "\+TWO" "NO_COLOR on a terminal: the diff"
nocolour "  without colour" "$out"
out=$($TTY env NO_COLOR=1 "$AL" draft list p)
like "$out" "^${D:0:12} open base" "NO_COLOR on a terminal: draft list's state not coloured"
nocolour "  no escape at all" "$out"
out=$($TTY env NO_COLOR=1 "$AL" --color=always draft list p)
like "$out" "${ESC}\[33mopen" "--color=always wins over NO_COLOR"
mkdir -p "$XDG_CONFIG_HOME/airlock"
printf 'color = never\n' > "$XDG_CONFIG_HOME/airlock/config"
out=$($TTY "$AL" draft list p)
nocolour "the config file's color = never on a terminal" "$out"
rm "$XDG_CONFIG_HOME/airlock/config"

# --- --json: no short ids, no colour, no pager, anywhere
out=$($TTY "$AL" --color=always draft list p --json)
like "$out" "\"id\":\"$D\".*\"base\":\"sha256:[0-9a-f]{64}\"" "--json on a terminal: full ids"
nocolour "  no colour even with --color=always" "$out"

# --- -q
"$AL" audit export "$T/ledger" 2>"$T/e1" >/dev/null
like "$(cat "$T/e1")" "exported [0-9]+ entries" "audit export says what it exported"
"$AL" -q audit export "$T/ledger2" 2>"$T/e2" >/dev/null
is "$(cat "$T/e2")" "" "  not with -q"
ok "  (the export is written all the same)" -- cmp "$T/ledger" "$T/ledger2"
if have_userns; then
	run "$AL" run p -- sh -c 'echo x > g'
	like "$err" "^run r[0-9a-f]+: 1 change \(1 added\); review: airlock review r" "run: the summary"
	run "$AL" run p -q -- sh -c 'echo x > g; echo out; echo err >&2'
	is "$out" "out" "run -q: the command's stdout"
	is "$err" "err" "  its stderr, and no summary"
	run "$AL" run p -q --output-limit 1 -- sh -c 'echo 0123456789'
	like "$err" "stdout truncated" "-q keeps warnings (a truncated stream)"
	run "$AL" run p -- sh -c 'echo -q'
	is "$out" "-q" "-q after -- belongs to the command"
fi
done_testing
