#!/bin/bash
# Output for people on a terminal (a pty): colour (a draft's state in draft
# list, the diff), the pager (a fake pager: $AIRLOCK_PAGER, the config
# file's pager before $PAGER), progress on stderr for work over the delay
# (import, export, an upload to a server), short ids in the lists.
. "$(dirname "$0")/../lib.sh"
TTY="python3 $SRC_ROOT/tests/helpers/ttyrun.py"
ESC=$(printf '\033'); CR=$(printf '\r')
unset NO_COLOR PAGER LESS AIRLOCK_PAGER AIRLOCK_COLOR
export TERM=xterm
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; printf 'one\ntwo\n' > "$S/f"
"$AL" project create p --from "$S" >/dev/null
printf 'one\nTWO\n' > "$S/f"
D=$("$AL" draft create p --from "$S")
cat > "$T/pager" <<EOF2
#!/bin/sh
t=no; [ -t 1 ] && t=yes
{ echo "pager: \$0 stdout-tty=\$t"; cat; } > "$T/paged"
EOF2
chmod +x "$T/pager"
cp "$T/pager" "$T/pager2"

# --- colour and short ids
out=$($TTY "$AL" draft list p)
like "$out" "^${D:0:12} ${ESC}\[33mopen${ESC}\[m base [0-9a-f]{12} head [0-9a-f]{12}" \
	"draft list on a terminal: short ids, the state coloured"
out=$($TTY "$AL" snapshot list)
like "$out" "^[0-9a-f]{12} 1 files" "snapshot list on a terminal: short ids"
out=$($TTY "$AL" project list)
like "$out" "^p [0-9a-f]{12} 1" "project list on a terminal: the head's short id"
out=$($TTY env AIRLOCK_PAGER=cat "$AL" review "$D")
like "$out" "${ESC}\[32m\+TWO${ESC}\[m" "review on a terminal: colour"

# --- the pager
rm -f "$T/paged"
$TTY env AIRLOCK_PAGER="$T/pager" "$AL" project log p >/dev/null
like "$(cat "$T/paged" 2>/dev/null)" "pager: $T/pager stdout-tty=yes" "project log: the fake pager ran, on the terminal"
like "$(cat "$T/paged" 2>/dev/null)" "1 [0-9a-f]{12} create" "  and got the log, ids short"
mkdir -p "$XDG_CONFIG_HOME/airlock"
printf 'pager = %s\n' "$T/pager2" > "$XDG_CONFIG_HOME/airlock/config"
rm -f "$T/paged"
$TTY env PAGER="$T/pager" "$AL" audit >/dev/null
like "$(head -1 "$T/paged" 2>/dev/null)" "pager: $T/pager2 " "the config file's pager wins over \$PAGER"
rm -f "$T/paged"
$TTY env AIRLOCK_PAGER="$T/pager" "$AL" audit >/dev/null
like "$(head -1 "$T/paged" 2>/dev/null)" "pager: $T/pager " "\$AIRLOCK_PAGER wins over the config file's"
rm "$XDG_CONFIG_HOME/airlock/config"

# --- progress
B="$T/big"; mkdir -p "$B"
for i in $(seq 1 300); do printf 'file %s\n' "$i" > "$B/f$i"; done
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" snapshot import "$B")
like "$out" "${CR}import: [0-9]+ files, [0-9.]+ [KMG]?i?B, [0-9]+ MiB/s" "snapshot import on a terminal: progress on stderr"
like "$out" "${CR}${ESC}\[K" "  then the line is cleared"
like "$out" "${ESC}\[Ksha256:[0-9a-f]{64}" "  and the id printed after it (stdout)"
SNAP=$(printf '%s' "$out" | grep -oE 'sha256:[0-9a-f]{64}' | head -1)
out=$($TTY "$AL" snapshot import "$B")
ok "a fast import under the default delay (1 s): no progress" -- sh -c '! printf %s "$1" | grep -q "import:"' sh "$out"
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" snapshot export "$SNAP" "$T/exp")
like "$out" "${CR}export: [0-9]+ files, .* of .*%" "snapshot export: progress with the share done"
$TTY --stdout "$T/so" env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" snapshot import "$B" > "$T/tty"
like "$(cat "$T/tty")" "import: " "stdout piped, stderr a terminal: progress (on stderr)"
ok "  nothing of it on stdout" -- sh -c '! grep -q "import:" "$1"' sh "$T/so"
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" -q snapshot import "$B")
ok "-q: no progress" -- sh -c '! printf %s "$1" | grep -q "import:"' sh "$out"
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" snapshot import "$B" --quiet)
ok "--quiet after the verb: no progress" -- sh -c '! printf %s "$1" | grep -q "import:"' sh "$out"

# a run's heavy phases on either side of the command, and bundles (the
# file read against its size; an export's time)
"$AL" project create big --from "$B" >/dev/null
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" run big -- sh -c 'for i in $(seq 1 50); do echo x > n$i; done')
like "$out" "${CR}materialising the workspace: [0-9.]+ s" "a run: progress while its workspace is materialised"
like "$out" "${CR}collecting the changes: [0-9.]+ s" "  and while its changes are collected"
RUN=$(printf '%s' "$out" | grep -oE 'run r[0-9a-f]+' | head -1 | cut -d' ' -f2)
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" bundle export "$RUN" "$T/b.tar.zst")
like "$out" "${CR}bundle export: [0-9.]+ s" "bundle export: progress"
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" bundle inspect "$T/b.tar.zst")
like "$out" "${CR}bundle inspect: [0-9.]+ [KMG]?i?B of [0-9.]+ [KMG]?i?B \\([0-9]+%\\)" "bundle inspect: the share of the file read"
HEADB=$("$AL" project head big)
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" bundle apply "$T/b.tar.zst" big --base "$HEADB")
like "$out" "${CR}bundle apply: [0-9.]+ [KMG]?i?B of" "bundle apply: the share of the file read"
ok "  and the bundle applied" -- sh -c '[ "$("$1" project head big)" != "$2" ]' sh "$AL" "$HEADB"
out=$(env AIRLOCK_PROGRESS_DELAY_MS=0 "$AL" bundle inspect "$T/b.tar.zst" 2>&1)
ok "  in a pipe: none" -- sh -c '! printf %s "$1" | grep -q "bundle inspect:"' sh "$out"

"$AL" admin principal create au --role author >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
serve_start
out=$($TTY env AIRLOCK_PROGRESS_DELAY_MS=0 AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" project create q --from "$B")
like "$out" "${CR}upload: [0-9.]+ [KMG]?i?B" "an upload to a server: progress"
ok "  the project was made" -- sh -c 'AIRLOCK_TOKEN=$3 "$1" --server "$2" project list | grep -q "^q "' sh "$AL" "$URL" "$AU"
out=$($TTY env AIRLOCK_TOKEN="$AU" "$AL" --server "$URL" project list)
like "$out" "^q sha256:[0-9a-f]{64} 1" "with --server, lists keep full ids (a server resolves no prefixes)"
serve_stop
done_testing
