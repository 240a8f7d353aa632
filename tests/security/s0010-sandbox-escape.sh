#!/bin/bash
# Hostile commands in airlock's sandbox: each attempt fails the way a user
# would see it, and nothing outside the run's draft changes.
. "$(dirname "$0")/../lib.sh"
need_root
need_userns
"$AL" init >/dev/null
S="$T/live"; mkdir -p "$S"; echo original > "$S/data.txt"
"$AL" project create p --from "$S" >/dev/null
HEAD0=$("$AL" project head p)
# an image with the probe (tests/helpers/probe.c) beside busybox
cp -a "$AIRLOCK_BUILD/image/busybox" "$T/img"; cp "$AIRLOCK_BUILD/tests/probe" "$T/img/bin/probe"
"$AL" image import "$T/img" --name probe >/dev/null
R() { run "$AL" run p --image probe "$@"; }

# the host's files, the store, the project's live files
echo "host-secret-$$" > "$T/host-secret"
R -- sh -c "cat /etc/shadow; cat '$T/host-secret'; ls '$AIRLOCK_HOME'; ls '$S'; cat /proc/1/root/etc/shadow; ls /proc/1/cwd/..; echo done"
ok "the host's /etc/shadow is not readable" -- sh -c "! printf '%s' \"\$1\" | grep -q '^root:'" _ "$out"
ok "a host file by its path is not there" -- sh -c "! printf '%s' \"\$1\" | grep -q 'host-secret-$$'" _ "$out"
like "$err" "$AIRLOCK_HOME.*No such file" "the store is not reachable"
like "$err" "ls: $S: No such file" "the project's live files are not reachable"
is "$(printf '%s' "$out" | tail -1)" "done" "…and the command ran to its end"
R -- sh -c 'cat data.txt; echo hacked > data.txt'
is "$out" "original" "/workspace holds the project's snapshot"
is "$(cat "$S/data.txt")" "original" "writing /workspace does not touch the project's live files"
is "$("$AL" project head p)" "$HEAD0" "…nor the live head"

# PID 1's executable (airlock-init, a sealed copy of its own): not
# writable through /proc/1/exe, and the host's binary is intact
sha256sum <"$AIRLOCK_BUILD/airlock-init" >"$T/init.sha"
R -- sh -c 'echo x >>/proc/1/exe; echo rc=$?; printf x | dd of=/proc/1/exe conv=notrunc 2>/dev/null; echo rc=$?'
is "$out" "rc=1
rc=1" "PID 1's executable cannot be written through /proc/1/exe"
ok "  airlock-init on the host is unchanged" -- sh -c "sha256sum <'$AIRLOCK_BUILD/airlock-init' | cmp -s - '$T/init.sha'"
R -- true
is "$rc" 0 "  and the next run starts"

# processes, hostname, mounts
sleep 1000 & SLEEPER=$!
R -- sh -c 'ps -o pid,args; ls /proc | grep -c "^[0-9]"'
ok "host processes are invisible" -- sh -c "! printf '%s' \"\$1\" | grep -q 'sleep 1000'" _ "$out"
like "$out" "^ *1 .*airlock-init" "PID 1 is airlock-init"
kill $SLEEPER; wait $SLEEPER 2>/dev/null

# network: no route anywhere, and the host's loopback services are not ours
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(5); print(s.getsockname()[1], flush=True)
s.settimeout(20)
try:
    c,_=s.accept(); open(sys.argv[1],"w").write("connected")
except Exception: pass' "$T/hit" > "$T/port" &
LISTENER=$!
for i in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")
R -- sh -c "nc -w 2 127.0.0.1 $PORT </dev/null; echo rc=\$?; nc -w 2 1.1.1.1 80 </dev/null; echo rc=\$?; ip route"
like "$out" "rc=1
rc=1" "connections to host loopback and to the internet fail"
like "$err" "127.0.0.1.*Connection refused" "host loopback: refused (the sandbox's loopback is its own)"
like "$err" "1.1.1.1.*Network is unreachable" "the internet: unreachable (no route)"
ok "the host's listener was never reached" -- test ! -e "$T/hit"
kill $LISTENER 2>/dev/null; wait $LISTENER 2>/dev/null

# the seccomp filter and the dropped capabilities
for p in mount unshare userns setns keyctl bpf perf ptrace uffd io_uring kexec module reboot clone-ns; do
	R -- probe $p
	is "$out" "denied EPERM" "$p is denied (EPERM)"
done
R -- sh -c 'grep -E "^(CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status'
is "$out" "CapEff:	0000000000000000
CapBnd:	0000000000000000
CapAmb:	0000000000000000
NoNewPrivs:	1
Seccomp:	2" "no capabilities, no_new_privs, a seccomp filter"

# resource bombs: each stopped, reported, and the host fine
R --pids 64 --timeout 20 -- sh -c 'b(){ b|b& }; b; sleep 1; echo survived'
like "$err" "can't fork" "a fork bomb hits --pids"
R --memory 64M -- sh -c 'head -c 314572800 /dev/zero | tail >/dev/null'
is "$rc" 123 "a memory bomb ends the run with exit 123"
like "$err" "out of memory" "…and says so"
R --disk-limit 8M -- sh -c 'dd if=/dev/zero of=fill bs=1M count=64 2>&1; echo rc=$?'
like "$out$err" "(No space left|File too large|rc=1)|exit status 153" "filling the disk stops at --disk-limit"
R --disk-limit 64M --files 50 -- sh -c 'for i in $(seq 200); do : > f$i || exit 1; done'
like "$err" "No space left on device" "creating files stops at --files"
like "$err" "run r[0-9a-f]+: (5[0-9]|6[0-9]) changes" "…and the draft holds only what fitted"
R --output-limit 1000 --json -- sh -c 'yes | head -c 2000000'
like "$out" '"bytes":2000000,"kept":1000,"truncated":true' "an output flood is kept to --output-limit, counted, and flagged truncated"
is "$(printf '%s' "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["stdout"]["text"]))')" 1000 "…exactly 1000 bytes kept"
START=$(date +%s)
# a duration of this test's own (another suite on the host may sleep too)
NAP=$((1000 + $$ % 100000))
R --timeout 1 -- sh -c "sleep $NAP & sleep $NAP & wait"
is "$rc" 124 "a run past --timeout ends with exit 124"
ok "…promptly, whole tree killed" -- test $(( $(date +%s) - START )) -lt 10
ok "no sandbox process is left on the host" -- sh -c "! pgrep -f '^sleep $NAP\$'"

# what a run may not hand back
R -- sh -c 'mknod dev c 1 3; echo mknod=$?; mkfifo pipe; echo s > suid; chmod 4755 suid; echo h > h1; ln h1 h2; ln -s /etc/shadow esc; ln -s ../../.. up'
like "$out" "mknod=1" "device nodes cannot be made"
like "$err" "pipe: FIFO not kept" "a FIFO is not kept, and the run says so"
like "$err" "suid: setuid/setgid bits removed" "setuid bits are removed, and the run says so"
RUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*changes.*/\1/p')
"$AL" apply "$RUN" --accept-all >/dev/null
"$AL" snapshot export "$("$AL" project head p)" "$T/out" >/dev/null
is "$(stat -c %a "$T/out/suid")" 755 "the applied file has no setuid bit"
is "$(stat -c %h "$T/out/h1")" 1 "hardlinks become independent files"
is "$(readlink "$T/out/esc")" "/etc/shadow" "a symlink is a symlink, never followed"
ok "no FIFO arrived" -- test ! -e "$T/out/pipe"
run "$AL" fsck
is "$rc" 0 "the store is sound after all of it"
is "$(cat "$S/data.txt")" "original" "the live files were never touched"
done_testing
