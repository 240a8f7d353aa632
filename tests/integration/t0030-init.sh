#!/bin/bash
# airlock-init as PID 1 of a PID namespace: status, signals, orphans, zombies.
. "$(dirname "$0")/../lib.sh"
INIT="$AIRLOCK_BUILD/airlock-init"
need_root
command -v unshare >/dev/null || skip_all "needs unshare(1) for a PID namespace"
ns() { unshare --pid --fork --mount-proc "$INIT" -- "$@"; }

run ns sh -c 'exit 3'
is "$rc" 3 "the command's exit status comes back"
run ns sh -c 'kill -9 $$'
is "$rc" 137 "a command killed by a signal gives 128 + signal"
run ns /no/such/command
is "$rc" 127 "a command that cannot start gives 127"
like "$err" "airlock-init: /no/such/command: No such file or directory" "  with a clear message"
run ns sh -c 'echo $$'
is "$out" "2" "the command runs as PID 2 under init"

# the command found and started as POSIX's execvp does (airlock-init does
# it itself: musl's execvp has no shell fallback)
mkdir -p "$T/bin"
printf 'echo "no-hashbang ran with $# args: $*"\n' >"$T/bin/plain"
chmod +x "$T/bin/plain"
run ns "$T/bin/plain" a 'b c'
is "$rc:$out" "0:no-hashbang ran with 2 args: a b c" "an executable script without #! runs under /bin/sh, its arguments intact"
run env PATH="/nonexistent:$T/bin" "$INIT" -- plain x
is "$rc:$out" "0:no-hashbang ran with 1 args: x" "  also when found through PATH"
printf 'echo not executable\n' >"$T/bin/noexec"
run env PATH="$T/bin" "$INIT" -- noexec
is "$rc" 126 "a file found but not executable gives 126"
like "$err" "airlock-init: noexec: Permission denied" "  saying so"
run env PATH="/nonexistent:$T/bin" "$INIT" -- no-such-name
is "$rc" 127 "a name in no PATH directory gives 127"
like "$err" "airlock-init: no-such-name: No such file or directory" "  saying so"
run env -u PATH "$INIT" -- sh -c 'echo default-path'
is "$rc:$out" "0:default-path" "without PATH, /bin:/usr/bin"

start=$(date +%s)
run ns sh -c 'sleep 997 & sleep 998 & echo started'
is "$rc:$out" "0:started" "a command that leaves background processes behind exits normally"
ok "  without waiting for them" -- test $(( $(date +%s) - start )) -lt 5
for i in $(seq 100); do [ "$(pgrep -f 'sleep 99[78]' | wc -l)" = 0 ] && break; sleep 0.05; done
is "$(pgrep -f 'sleep 99[78]' | wc -l)" 0 "  and nothing it started survives"

run ns sh -c 'for i in 1 2 3 4 5 6; do ( sleep 0.05 & ) ; done; sleep 0.5; for s in /proc/[0-9]*/stat; do cut -d" " -f3 "$s"; done | grep -c Z'
is "$out" "0" "orphans that exit are reaped (no zombies)"

unshare --pid --fork --mount-proc "$INIT" -- sh -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.05; done' >"$T/sig.out" 2>&1 &
u=$!
for _ in $(seq 1 50); do grep -q ready "$T/sig.out" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$(pgrep -P "$u")"
wait "$u"; rc=$?
is "$rc" 7 "SIGTERM to init is forwarded to the command, which exits on its own terms"
like "$(cat "$T/sig.out")" "got-term" "  (its trap ran)"

run "$INIT" -- sh -c 'exit 5'
is "$rc" 5 "outside a PID namespace it works as a subreaper"
run "$INIT"
is "$rc" 2 "no command is a usage error"
done_testing
