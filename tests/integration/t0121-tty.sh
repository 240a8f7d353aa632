#!/bin/bash
# Output for people: colour on a terminal (a pty), off in pipes, with
# NO_COLOR or TERM=dumb, forced with --color=always; long output (review,
# project log, audit) through $AIRLOCK_PAGER, $PAGER or less -FRX on a
# terminal only (a fake pager records what it got).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P"; printf 'one\ntwo\n' > "$P/f"
"$AL" project create p --from "$P" >/dev/null
printf 'one\nTWO\n' > "$P/f"
D=$("$AL" draft create p --from "$P")

# tty CMD...: run CMD on a pty's slave side (stdin, stdout, stderr); its
# output in $out
tty_run() {
	out=$(python3 - "$@" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
chunks = []
while True:
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    chunks.append(b)
os.waitpid(pid, 0)
sys.stdout.write(b"".join(chunks).decode("utf-8", "replace"))
PY
)
}
ESC=$(printf '\033')
cat > "$T/pager" <<EOF2
#!/bin/sh
t=no; [ -t 1 ] && t=yes
{ echo "stdout is a tty: \$t"; cat; } > "$T/paged"
EOF2
chmod +x "$T/pager"
unset NO_COLOR PAGER LESS
export TERM=xterm

tty_run env AIRLOCK_PAGER="$T/pager" "$AL" review "$D"
paged=$(cat "$T/paged" 2>/dev/null)
like "$paged" "stdout is a tty: yes" "review on a terminal: through \$AIRLOCK_PAGER, which has the terminal"
like "$paged" "${ESC}\[32m\+TWO${ESC}\[m" "  an added line is green"
like "$paged" "${ESC}\[31m-two${ESC}\[m" "  a removed line red"
like "$paged" "${ESC}\[33mM${ESC}\[m f" "  the change kind coloured"
like "$paged" "draft     ${D:0:12} of p, ${ESC}\[33mopen" "  the header says the draft's state, coloured"

rm -f "$T/paged"
tty_run env PAGER="$T/pager" "$AL" project log p
like "$(cat "$T/paged" 2>/dev/null)" "1 [0-9a-f]{12} create" "project log on a terminal: through \$PAGER, ids short"
rm -f "$T/paged"
tty_run env AIRLOCK_PAGER="$T/pager" PAGER=false "$AL" audit
like "$(cat "$T/paged" 2>/dev/null)" "project_create" "audit on a terminal: \$AIRLOCK_PAGER before \$PAGER"

mkdir -p "$T/bin"
cat > "$T/bin/less" <<EOF2
#!/bin/sh
{ echo "less \$* LESS=\$LESS"; cat; } > "$T/paged"
EOF2
chmod +x "$T/bin/less"
rm -f "$T/paged"
tty_run env PATH="$T/bin:$PATH" "$AL" review "$D"
like "$(head -1 "$T/paged" 2>/dev/null)" "^less -FRX LESS=FRX" "no pager set: less -FRX"

rm -f "$T/paged"
tty_run env AIRLOCK_PAGER=cat "$AL" review "$D"
ok "AIRLOCK_PAGER=cat: no pager" -- test ! -e "$T/paged"
like "$out" "${ESC}\[32m\+TWO" "  the colour goes to the terminal itself"
tty_run env AIRLOCK_PAGER= NO_COLOR=1 "$AL" review "$D"
like "$out" "\+TWO" "NO_COLOR on a terminal: the diff"
ok "  without colour" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$ESC"
tty_run env AIRLOCK_PAGER= TERM=dumb "$AL" review "$D"
ok "TERM=dumb: no colour" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$ESC"
tty_run env AIRLOCK_PAGER= NO_COLOR=1 "$AL" --color=always review "$D"
like "$out" "${ESC}\[32m\+TWO" "--color=always wins over NO_COLOR"
tty_run env AIRLOCK_PAGER= "$AL" review "$D" --color=never
ok "--color=never after the verb: no colour" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$ESC"

rm -f "$T/paged"
tty_run env AIRLOCK_PAGER="$T/pager" "$AL" review "$D" --json
ok "--json on a terminal: no pager" -- test ! -e "$T/paged"
ok "  and no colour" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$ESC"

# pipes
export AIRLOCK_PAGER="$T/pager"
rm -f "$T/paged"
run "$AL" review "$D"
ok "piped: no pager" -- test ! -e "$T/paged"
like "$out" "\+TWO" "piped: the diff"
ok "  without colour" -- sh -c '! printf %s "$1" | grep -q "$2"' sh "$out" "$ESC"
run "$AL" --color=always review "$D"
like "$out" "${ESC}\[32m\+TWO" "piped with --color=always: colour"
run "$AL" review --color "$D"
like "$out" "${ESC}\[31m-two" "--color alone is always"
run "$AL" --color=sometimes review "$D"
is "$rc" 2 "--color=junk: a usage error"
like "$err" "expected auto, always or never" "  naming the choices"
run "$AL" run p -- sh -c 'echo --color=always'
like "$out" "^--color=always$" "--color after -- belongs to the command"
done_testing
