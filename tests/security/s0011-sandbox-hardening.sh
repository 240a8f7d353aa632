#!/bin/bash
# The sandbox cannot reach the operator's terminal, sockets beyond unix,
# inet, inet6 and netlink-route, PID 1's memory, the host's supplementary
# groups or the host-revealing parts of /proc (issue 11, items 1, 3, 11-13, 16).
. "$(dirname "$0")/../lib.sh"
need_root
need_userns
"$AL" init >/dev/null
S="$T/live"; mkdir -p "$S"; echo original > "$S/data.txt"
"$AL" project create p --from "$S" >/dev/null
cp -a "$AIRLOCK_BUILD/image/busybox" "$T/img"; cp "$AIRLOCK_BUILD/tests/probe" "$T/img/bin/probe"
"$AL" image import "$T/img" --name probe >/dev/null
R() { run "$AL" run p --image probe "$@"; }
PTY="$(dirname "$0")/../helpers/ptyrun.py"

# 1. the operator's terminal: airlock run started from a real pty (its
# session leader, the pty its controlling terminal and stdin); the command
# tries to read what is typed, write escapes, change the line discipline
# and take the foreground
ATTACK='probe tty; probe tiocsetd; probe tioccons; probe tty-attack
for fd in 0 1 2; do printf "\033[2Jpwned" >&$fd 2>/dev/null; done
sleep 0.3; echo end'
python3 "$PTY" "$T/pty" -- "$AL" run p --image probe --timeout 20 -- sh -c "$ATTACK" > "$T/pty.report"
report=$(cat "$T/pty.report"); pout=$(cat "$T/pty.stdout")
like "$report" "rc 0" "a run started from a terminal runs"
like "$(printf "%s" "$pout" | tail -1)" "end$" "…to its end"
like "$report" "typed-line-read no" "the command cannot read a line typed on the operator's terminal"
like "$report" "pty-received -" "…nor write to it (nothing it printed reached the terminal)"
like "$report" "ldisc-ok yes" "the terminal reads lines normally after the run"
like "$report" "termios-same yes" "…with its settings untouched"
like "$report" "foreground ours" "…and the run never became its foreground group"
is "$(sed -n 1p "$T/pty.stdout")" "denied ENOENT" "no /dev/tty inside the sandbox"
is "$(sed -n 2,3p "$T/pty.stdout" | tr '\n' ' ')" "denied EPERM denied EPERM " "TIOCSETD and TIOCCONS are denied by the filter (on the sandbox's own pty)"
is "$(sed -n 4p "$T/pty.stdout")" "denied ENOENT" "the terminal attack (take the foreground, read, write escapes, TIOCSETD) finds no terminal"
# …nor through its output, relayed by airlock run to the operator's terminal:
# there only text, tabs, line ends and colour pass
script -qfc "'$AL' run p -- sh -c 'printf \"a\\033]0;title\\007b\\033[31mred\\033[0m\\033[2J\\302\\233x\\n\"; printf \"\\033]52;c;cHduZWQ=\\007e\\n\" >&2'" "$T/tty.out" >/dev/null 2>&1
TTY=$(cat -v "$T/tty.out")
like "$TTY" 'a\\x1b\]0;title\\x07b\^\[\[31mred\^\[\[0m\\x1b\[2J\\xc2\\x9bx' "on a terminal, a run's title, clear-screen and C1 sequences are shown escaped, colour passes"
like "$TTY" '\\x1b\]52;c;cHduZWQ=\\x07e' "…on stderr too (a clipboard write, OSC 52)"
run "$AL" run p -- sh -c 'printf "\033[2Jraw\n"'
is "$(printf '%s' "$out" | od -An -c | tr -s ' ')" " 033 [ 2 J r a w" "piped, the output is byte for byte the command's"
R -- sh -c 'ls /dev; cat /proc/self/stat'
ok "/dev has no tty or console" -- sh -c "! printf '%s\n' \"\$1\" | grep -qxE 'tty|console'" _ "$out"
# stat fields: pid comm state ppid pgrp session tty_nr
is "$(printf '%s' "$out" | tail -1 | awk '{print $7}')" 0 "the command has no controlling terminal (tty_nr 0)"

# 3. socket families
for p in vsock packet netlink-audit; do
	R -- probe $p
	is "$out" "denied EAFNOSUPPORT" "socket family $p is refused (EAFNOSUPPORT)"
done
for p in unix inet6 netlink-route; do
	R -- probe $p
	is "$out" "ok" "socket family $p works"
done
R -- sh -c 'cat /proc/cmdline | wc -c'
is "$out" "0" "/proc/cmdline (which can name a hypervisor's vsock ports) reads empty"

# 11. supplementary groups: airlock runs here with the groups root, adm
# and sudo-like extras, none of which may reach the sandbox
G=$(getent group adm >/dev/null && echo adm || echo 4)
run setpriv --groups 0,4,27 -- "$AL" run p --image probe -- sh -c 'probe groups; grep ^Groups: /proc/self/status'
is "$(printf '%s' "$out" | head -1)" "0" "the host's supplementary groups are dropped"
like "$out" "Groups:[[:space:]]*$" "…/proc/self/status lists none"

# 12. PID 1 is not dumpable: /proc/1/mem does not open for the command
R -- probe proc1-mem
is "$out" "denied EACCES" "/proc/1/mem (airlock-init) does not open read-write"
R -- sh -c 'cat /proc/1/environ >/dev/null 2>&1 && echo read || echo refused'
is "$out" "refused" "…nor /proc/1/environ"

# 13. /proc masked and read-only as runc does, personality limited
R -- sh -c 'for f in kcore keys kallsyms timer_list sched_debug cmdline sysrq-trigger interrupts; do
  [ -e /proc/$f ] || continue; printf "%s=%s " $f $(head -c 64 /proc/$f 2>/dev/null | wc -c); done; echo'
ok "host-revealing /proc files read empty" -- sh -c "! printf '%s' \"\$1\" | grep -qE '=[1-9]'" _ "$out"
like "$out" "kallsyms=0 " "…kallsyms among them"
R -- sh -c 'echo 1 > /proc/sys/kernel/domainname; echo rc=$?; echo x > /proc/sysrq-trigger; echo rc=$?; ls /proc/acpi /proc/scsi 2>/dev/null | wc -l'
like "$err" "/proc/sys/kernel/domainname: Read-only file system" "/proc/sys is read-only"
like "$out" "rc=1
.*0$" "…/proc/sysrq-trigger takes nothing, masked directories are empty"
R -- probe personality-rie
is "$out" "denied EPERM" "personality(READ_IMPLIES_EXEC) is denied"
R -- probe personality-query
is "$out" "ok" "…the query (0xffffffff) works"

# 16. the i386 ABI: outside the sandbox, probe learns whether this kernel
# has IA32 emulation at all; inside, the call must never run
host=$("$AIRLOCK_BUILD/tests/probe" i386 2>/dev/null)
R -- probe i386
case "$host" in
ok) is "$out" "denied ENOSYS" "the i386 ABI (int 0x80) is refused by the filter (the kernel has IA32 emulation)" ;;
"unavailable SIGSEGV") is "$out" "unavailable SIGSEGV" "the i386 ABI is unavailable on this kernel, inside as outside" ;;
*) is "$host" "ok or unavailable SIGSEGV" "probe i386 on the host says what the kernel does" ;;
esac

# airlock doctor: what this host gives the sandbox, and a run that cannot
# set up names the step and points there
run "$AL" doctor
is "$rc" 0 "airlock doctor: runs can work on this host (exit 0)"
for c in "user namespaces" "overlayfs with userxattr" "/proc in a new PID namespace" "seccomp filter" "cgroup memory" "cgroup pids" "cgroup cpu" "IA32 emulation" "vsock"; do
	like "$out" "^ok +$c " "doctor checks $c"
done
run "$AL" doctor --json
is "$(printf '%s' "$out" | field runs)" True "doctor --json says runs can work"
# a /proc with something mounted over part of it (Docker's masked paths):
# the kernel refuses a fresh /proc in a user namespace
run unshare -m sh -c "mount -t tmpfs tmpfs /proc/fs && '$AL' run p -- true"
is "$rc" 125 "under a masked /proc a run fails to set up (exit 125)"
like "$err" "mounting /proc failed \(see 'airlock doctor'\)" "…naming the step and pointing to airlock doctor"
run unshare -m sh -c "mount -t tmpfs tmpfs /proc/fs && '$AL' doctor"
is "$rc" 1 "…where airlock doctor fails (exit 1)"
like "$out" "FAIL +/proc in a new PID namespace" "…naming /proc"
like "$out" "fix: .*unmasked /proc" "…and what to change"
NB=$(mktemp -d /tmp/airlock-doctor.XXXXXX); chmod 755 "$NB"
NAL=$(nobody_airlock "$NB")
run sh -c "cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups '$NAL' doctor"
like "$out" "WARN +cgroup memory +no memory controller airlock may write" "as a user without a cgroup, doctor says the memory limit cannot be enforced"
like "$out" "fix: .*Delegate=yes.*best-effort-limits" "…and what to change"
rm -rf "$NB"
is "$(cat "$S/data.txt")" "original" "the live files were never touched"
done_testing
