#!/bin/bash
# airlock run --backend vm: a run on its own kernel (QEMU microvm, TCG here)
# gives what a namespace run gives: the same changes, record shape, exit
# statuses, secrets, limits; no network device, no vsock; the VMM jailed.
# Few boots (each ~2-3 s under TCG): several checks share one run.
. "$(dirname "$0")/../lib.sh"
need_vm
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/dir/sub" "$S/gone" "$S/opq"
echo one > "$S/edit.txt"; echo bye > "$S/del.txt"; echo s > "$S/script.sh"; echo g > "$S/gone/g"
echo keep > "$S/dir/sub/keep"; echo a > "$S/opq/a"
cp "$AIRLOCK_BUILD/tests/probe" "$S/probe"
"$AL" project create p --from "$S" >/dev/null
HEAD0=$("$AL" project head p)

# a host service on loopback the guest must not reach
PORT=$((20000 + RANDOM % 20000))
python3 -c '
import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(120)
try:
    c,_=s.accept(); open(sys.argv[2],"w").write("reached\n")
except Exception: pass' "$PORT" "$T/reached" &
LISTENER=$!

CHANGES='echo more >> edit.txt; rm del.txt; chmod 755 script.sh; rm -rf gone; mkdir -p new/empty; echo n > new/f; rm -rf opq; mkdir opq; echo b > opq/b; ln -s ../edit.txt new/link; echo h > h1; ln h1 h2; mkfifo fifo; echo x > suid; chmod 4755 suid; ./probe bind-unix sock >/dev/null; d=deep; i=0; while [ $i -lt 260 ]; do d=$d/x; i=$((i+1)); done; mkdir -p $d'
PROBES='echo "$FOO $TZ $LANG $HOME"; hostname; pwd; umask; id -u; nproc; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; (nc -w 2 127.0.0.1 '"$PORT"' </dev/null && echo reached) || echo unreachable; ./probe vsock; ls /dev/vsock 2>&1 | head -1; test ${#API_TOKEN} -eq 23 && echo secret-env-seen; cat /run/airlock/secrets/FILE_TOKEN; echo; echo "leak: $API_TOKEN"; head -c 300000 /dev/zero | tr "\0" x >&2; exit 7'
SECRET="s3cr3t-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
FSECRET="f1le-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
run "$AL" run p --backend vm --json --cpus 2 --output-limit 100K --env FOO=bar \
	--secret "API_TOKEN=$SECRET" --secret-file "FILE_TOKEN=$FSECRET" -- sh -c "$CHANGES; $PROBES"
is "$rc" 7 "a vm run's exit status is the command's"
VM="$out"
is "$(echo "$VM" | field backend)" vm "the record says the vm backend ran"
is "$(echo "$VM" | field stdout.text | head -7)" "bar UTC C.UTF-8 /root
airlock
/workspace
0022
0
2
lo" "pinned as in a namespace run: --env, hostname, /workspace, umask 022, uid 0; --cpus 2 is the VM's 2 CPUs; no network device but lo"
is "$(echo "$VM" | field stdout.text | sed -n 8,10p)" "unreachable
denied EAFNOSUPPORT
ls: /dev/vsock: No such file or directory" "the host's loopback service is not reachable; no vsock (socket family, device)"
is "$(echo "$VM" | field stdout.text | sed -n 11,13p)" "secret-env-seen
***
leak: ***" "secrets arrive as env and as a file; printed, they are masked"
ok "…and no secret is in the record" -- bash -c "! printf '%s' \"\$1\" | grep -qE '$SECRET|$FSECRET'" _ "$VM"
is "$(echo "$VM" | field stderr.truncated) $(echo "$VM" | field stderr.kept)" "True 102400" "stderr past --output-limit is dropped, live"
ok "…and counted" -- test "$(echo "$VM" | field stderr.bytes)" -ge 300000
is "$(echo "$VM" | field outcome)" "limit: output" "…and the outcome says so"
kill "$LISTENER" 2>/dev/null; wait "$LISTENER" 2>/dev/null
ok "the host's listener saw no connection" -- test ! -e "$T/reached"

# the same command on the namespace backend: the same changes, exactly
run "$AL" run p --backend ns --json --env FOO=bar --secret "API_TOKEN=$SECRET" \
	--secret-file "FILE_TOKEN=$FSECRET" -- sh -c "$CHANGES; $PROBES"
NS="$out"
is "$(echo "$VM" | field result)" "$(echo "$NS" | field result)" "the vm run's snapshot is the namespace run's, byte for byte"
is "$(echo "$VM" | field changes)" "$(echo "$NS" | field changes)" "…the same changes counted"
# what the guest's stream cannot carry is noted by count, not by path
notes() { python3 -c 'import json,re,sys
print(sorted(n for n in json.load(sys.stdin)["neutralised"] if not re.search(sys.argv[1], n)))' "$1"; }
is "$(echo "$VM" | notes "microVM")" "$(echo "$NS" | notes "^sock: socket|deeper than")" \
   "…the same things neutralised by path (FIFO, setuid, hardlinks)"
left() { python3 -c 'import json,re,sys
print(" | ".join(sorted(n for n in json.load(sys.stdin)["neutralised"] if re.search(sys.argv[1], n))))' "$1"; }
like "$(echo "$NS" | left "^sock: socket|deeper than")" "^deep/x/.*: deeper than 256 levels, not kept \| sock: socket not kept$" \
   "…the namespace run names the socket and the entry too deep"
is "$(echo "$VM" | left "microVM")" "1 entr(y|ies) deeper than 256 levels or with a path near 4096 bytes not kept, with what is beneath them (the microVM names no paths) | 1 socket(s) not kept (a socket has no form in the result) (the microVM names no paths)" \
   "…the vm run counts them"
RUN=$(echo "$VM" | field id)
is "$("$AL" project head p)" "$HEAD0" "the live head has not moved"
run "$AL" review "$RUN" --json
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(f["op"]+":"+f["path"] for f in json.load(sys.stdin)["files"] if not f["path"].startswith("new/link") ))' | tr ' ' '\n' | grep -c .)" \
   "$(echo "$NS" | python3 -c 'import json,sys; c=json.load(sys.stdin)["changes"]; print(c["added"]+c["modified"]+c["deleted"]-1)')" "the vm run's draft reviews like any other"
run "$AL" apply "$RUN" --accept edit.txt
is "$rc" 0 "…and applies"
"$AL" snapshot export "$("$AL" project head p)" "$T/out" >/dev/null
is "$(cat "$T/out/edit.txt")" "one
more" "the accepted edit is in the project"

# limits: processes, disk, memory (the guest's cgroup and tmpfs); one run
run "$AL" run p --backend vm --json --pids 24 --disk-limit 2M --memory 160M -- sh -c '
	dd if=/dev/zero of=big bs=1M count=8 2>/dev/null; echo "disk: $?"
	awk "BEGIN { s = \"x\"; while (1) s = s s }"; echo "memory: $?"
	(while :; do sleep 1 & done) 2>/dev/null; echo "forks: $?"'
like "$(echo "$out" | field stdout.text)" "memory: 137" "a command past --memory is killed (SIGKILL)"
like "$(echo "$out" | field stdout.text)" "forks: 2" "a fork bomb stops at --pids"
like "$(echo "$out" | field stdout.text)" "disk: 1" "writes past --disk-limit fail"
is "$(echo "$out" | field oom)" True "the memory limit kills inside the guest, and the record says oom"
is "$(echo "$out" | field disk_limit_hit)" True "…and disk_limit_hit"
is "$(echo "$out" | field enforced.memory)$(echo "$out" | field enforced.pids)" TrueTrue "memory and pids are enforced (the guest's cgroup)"

# the wall-clock limit: the command is killed, the changes before it come back
S0=$(date +%s)
run "$AL" run p --backend vm --json --timeout 2 -- sh -c 'echo before > t.txt; sleep 600'
is "$rc" 124 "a timed-out vm run exits 124"
is "$(echo "$out" | field timed_out)" True "…recorded timed_out"
ok "…within seconds, not the command's 600" -- test $(( $(date +%s) - S0 )) -lt 60
is "$(echo "$out" | field changes.added)" 1 "…and what it wrote before is in its draft"

# cancel (SIGINT to airlock run), and the VMM seen from the host while it runs
"$AL" run p --backend vm -- sh -c 'touch mark; echo started; sleep 600' >"$T/c.out" 2>"$T/c.err" &
CLI=$!
for _ in $(seq 600); do grep -q started "$T/c.out" 2>/dev/null && break; sleep 0.1; done
QEMU=$(pgrep -P "$CLI" | head -1)
ST=$(cat "/proc/$QEMU/status" 2>/dev/null)
like "$(tr '\0' ' ' < "/proc/$QEMU/cmdline")" "qemu-system-x86_64 .*-nodefaults -no-user-config .*-monitor none -net none -sandbox on" "the VMM is QEMU without defaults, monitor or network, with -sandbox on"
ok "…and without any network device" -- bash -c "! tr '\0' '\n' < /proc/$QEMU/cmdline | grep -qE 'netdev|virtio-net|vsock|-qmp'"
UIDS=$(echo "$ST" | awk '/^Uid:/{print $2,$3,$4,$5}')
ok "the VMM runs as a non-root uid (host view: $UIDS)" -- bash -c "[ \"\$(echo $UIDS | tr ' ' '\n' | sort -u)\" != 0 ] && ! echo $UIDS | grep -qw 0"
is "$(echo "$ST" | awk '/^CapEff:|^CapPrm:|^CapBnd:|^CapAmb:/{printf "%s ", $2}')" "0000000000000000 0000000000000000 0000000000000000 0000000000000000 " "…with no capabilities at all"
is "$(echo "$ST" | awk '/^NoNewPrivs:/{print $2} /^Seccomp:/{print $2}' | tr '\n' ' ')" "1 2 " "…no_new_privs and a seccomp filter"
for ns in user mnt pid net ipc uts; do
	ok "…in its own $ns namespace" -- test "$(readlink "/proc/$QEMU/ns/$ns")" != "$(readlink /proc/self/ns/$ns)"
done
ok "…whose root holds no host path but /usr" -- bash -c "[ \"\$(ls /proc/$QEMU/root/ | sort | tr '\n' ' ')\" = 'bin dev lib lib64 proc usr ' ]"
kill -INT "$CLI"
wait "$CLI"; rc=$?
is "$rc" 130 "a cancelled vm run exits 130"
CR=$(sed -n 's/^run \(r[0-9a-f]*\): cancelled.*/\1/p' "$T/c.err")
run "$AL" run show "$CR" --json
is "$(echo "$out" | field cancelled) $(echo "$out" | field outcome)" "True cancelled" "…recorded cancelled"
is "$(echo "$out" | field changes.added)" 1 "…its changes made before the cancel are in its draft"
ok "no VMM is left" -- bash -c "! kill -0 $QEMU 2>/dev/null"

# an unknown backend is a usage error, before anything runs
run "$AL" run p --backend xen -- true
is "$rc" 2 "--backend takes ns or vm"
run "$AL" run p --backend vm --json --network egress -- sh -c 'echo "$HTTP_PROXY"'
is "$rc $(echo "$out" | field stdout.text)" "0 http://127.0.0.1:3128" \
	"--network egress runs: the proxy's address, relayed to the host (t0113, s0052)"

# airlock doctor reports the vm backend: QEMU, the guest, KVM or TCG
run "$AL" doctor --json
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(c["check"].split(": ")[1].split()[0] + "=" + str(c["ok"]) for c in json.load(sys.stdin)["vm"]["checks"][:2]))')" \
   "QEMU=True guest=True" "doctor: QEMU and the guest are there"
like "$(echo "$out" | field vm.checks.2.detail)" "^(KVM|TCG): " "doctor: it says whether runs get KVM or only TCG"
# (where /dev/kvm is there but not open to others: the sandbox's uid is in no group of it)
if [ "$(id -u)" = 0 ] && [ -e /dev/kvm ] && [ $((0$(stat -c %a /dev/kvm) & 6)) != 6 ] && ! getfacl -p /dev/kvm 2>/dev/null | grep -q '^user:1879048192:'; then
	AIRLOCK_VM_ACCEL=kvm run "$AL" doctor
	like "$out" "TCG: the VMM's uid 1879048192 may not open /dev/kvm" "doctor: KVM only when the VMM's own uid can open /dev/kvm (checked as that uid)"
fi
AIRLOCK_GUEST_DIR="$T/nowhere" run "$AL" doctor
like "$out" "FAIL  vm: guest kernel and initramfs" "doctor: a missing guest is a FAIL line"
like "$out" "vm runs \(--backend vm\) cannot work on this host" "…and vm runs cannot work"
AIRLOCK_GUEST_DIR="$T/nowhere" run "$AL" run p --backend vm -- true
is "$rc" 125 "a vm run without a guest fails as a sandbox error"
like "$err" "the guest's vmlinux" "…naming what is missing"
done_testing
