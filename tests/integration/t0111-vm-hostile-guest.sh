#!/bin/bash
# A hostile microVM guest: the host parses what comes back strictly.  The
# guest here is the real kernel with an initramfs whose /init (a shell
# script) writes crafted result streams and status lines instead of
# running the command.  Each is refused, names why, and changes nothing:
# no draft, the head unmoved, nothing written outside; a guest that never
# finishes is killed at the wall-clock limit.
. "$(dirname "$0")/../lib.sh"
need_vm
"$AL" init >/dev/null
mkdir -p "$T/src"; echo one > "$T/src/a.txt"
"$AL" project create p --from "$T/src" >/dev/null
HEAD0=$("$AL" project head p)

# the hostile guest: the real one's kernel and modules, another /init
G="$T/guest"; mkdir -p "$G/root"
(cd "$G/root" && cpio -idm --quiet < "$AIRLOCK_BUILD/guest/initramfs.cpio")
ln -s "$AIRLOCK_BUILD/guest/vmlinux" "$G/vmlinux"
python3 - "$G/root" <<'PY'
import io, sys, tarfile
root = sys.argv[1]
def tar(name, members):
    with tarfile.open(f"{root}/{name}.tar", "w", format=tarfile.PAX_FORMAT) as t:
        for m, data in members:
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def reg(path, data):
    m = tarfile.TarInfo(path); m.size = len(data); m.mode = 0o644; return (m, data)
dev = tarfile.TarInfo("null"); dev.type = tarfile.CHRTYPE; dev.devmajor, dev.devminor = 1, 3
tar("dotdot", [reg("../escape", b"out\n")])
tar("device", [(dev, None)])
tar("big", [reg("big", b"x" * (2 << 20))])
tar("valid", [reg("ok.txt", b"fine\n")])
PY
cat > "$G/root/init" <<'SH'
#!/bin/busybox sh
B=/bin/busybox
$B mount -t devtmpfs dev /dev; $B mount -t sysfs sys /sys
for m in $($B cat /lib/modules/order); do $B insmod /lib/modules/$m.ko; done
dev() { for d in /sys/block/vd*; do [ "$($B cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
port() { for p in /sys/class/virtio-ports/*; do [ "$($B cat $p/name 2>/dev/null)" = "$1" ] && echo /dev/${p##*/}; done; }
i=0; while [ -z "$(dev result)" ] || [ -z "$(dev control)" ] || [ -z "$(port ctl)" ]; do
	i=$((i + 1)); [ $i -gt 400 ] && $B poweroff -f; $B sleep 0.05
done
R=$(dev result) C=$(dev control) P=$(port ctl)
OK="airlock-status 1 exit=0 timed_out=0 cancelled=0 oom=0 peak=0 disk_full=0 files_full=0 user_ms=0 sys_ms=0 max_rss_kb=0 wall_ms=0 boot_ms=0 setup_ms=0 collect_ms=0 result=0 left_sockets=0 left_deep=0 left_links=0"
H=$($B strings $C | $B grep -m1 '^hostile-')
case "$H" in
hostile-noup|hostile-badup) ;;
hostile-late-*) # not up before the host's clock reads the epoch it names
	[ "$($B date +%s)" -lt "${H#hostile-late-}" ] && while :; do $B sleep 1000; done
	echo "airlock-up 1" > $P ;;
*) echo "airlock-up 1" > $P ;;
esac
case "$H" in
hostile-dotdot) $B dd if=/dotdot.tar of=$R conv=notrunc 2>/dev/null; echo "$OK" > $P ;;
hostile-device) $B dd if=/device.tar of=$R conv=notrunc 2>/dev/null; echo "$OK" > $P ;;
hostile-big) $B dd if=/big.tar of=$R conv=notrunc 2>/dev/null; echo "$OK" > $P ;;
hostile-nostatus) $B dd if=/valid.tar of=$R conv=notrunc 2>/dev/null ;;
hostile-badstatus) $B dd if=/valid.tar of=$R conv=notrunc 2>/dev/null; echo "airlock-status 1 exit=0 oom=yes" > $P ;;
hostile-hang|hostile-noup) while :; do $B sleep 1000; done ;;
hostile-badup) $B dd if=/valid.tar of=$R conv=notrunc 2>/dev/null; echo "$OK" > $P ;;
hostile-late-*) $B dd if=/valid.tar of=$R conv=notrunc 2>/dev/null; echo "$OK" > $P ;;
esac
$B poweroff -f
SH
chmod 755 "$G/root/init"
(cd "$G/root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$G/initramfs.cpio"
export AIRLOCK_GUEST_DIR="$G"

drafts() { "$AL" draft list p 2>/dev/null | grep -c .; }
D0=$(drafts)
unchanged() { # unchanged WHAT
	is "$("$AL" project head p)" "$HEAD0" "$1: the head has not moved"
	is "$(drafts)" "$D0" "$1: no draft was made"
	ok "$1: nothing was written outside" -- bash -c "! find '$T' / -xdev -maxdepth 3 -name escape 2>/dev/null | grep -q ."
}

run "$AL" run p --backend vm -- hostile-dotdot
is "$rc" 6 "a result member '../escape' is refused (exit 6, invalid input)"
like "$err" "result stream was refused: member '../escape'" "…naming the member"
unchanged "../escape"
RUN=$(printf '%s' "$err" | sed -n 's/.*(recorded: run \(r[0-9a-f]*\)).*/\1/p')
run "$AL" run show "$RUN" --json
is "$(echo "$out" | field outcome)" "failed: sandbox" "…the attempt is recorded as failed"

run "$AL" run p --backend vm -- hostile-device
is "$rc" 6 "a device member is refused"
like "$err" "member 'null': a device" "…naming it"
unchanged "a device"

run "$AL" run p --backend vm --disk-limit 1M -- hostile-big
is "$rc" 8 "a result larger than the run's disk limit is refused (exit 8, limit)"
like "$err" "more bytes than the run's disk limit" "…saying so"
unchanged "oversized"

run "$AL" run p --backend vm -- hostile-nostatus
is "$rc" 125 "a guest that ends without a status line is a sandbox failure (exit 125)"
like "$err" "ended without a status" "…saying so"
unchanged "no status"

run "$AL" run p --backend vm -- hostile-badstatus
is "$rc" 125 "a malformed status line is refused"
like "$err" "status line was refused" "…saying so"
unchanged "bad status"

S0=$(date +%s)
run "$AL" run p --backend vm --json --timeout 1 --disk-limit 1M -- hostile-hang
is "$(echo "$out" | field timed_out)" True "a guest that never finishes is killed at the wall-clock limit (and the grace)"
ok "…within 40 s" -- test $(( $(date +%s) - S0 )) -lt 40
is "$(echo "$out" | field changes.added)" 0 "…and nothing of it comes back"

D0=$(drafts) # the timed-out run above kept its (empty) draft
# a boot timeout outside 1-3600 s is refused before any VM starts
for bad in 0 3601 1e15 -5 x; do
	AIRLOCK_VM_BOOT_TIMEOUT=$bad run "$AL" run p --backend vm -- hostile-valid
	like "$rc:$err" "^2:.*AIRLOCK_VM_BOOT_TIMEOUT: expected whole seconds from 1 to 3600" \
		"AIRLOCK_VM_BOOT_TIMEOUT=$bad is a usage error, saying what it takes"
done
unchanged "a bad boot timeout"

# the boot watchdog: a guest whose agent never says it came up is killed,
# and one more VM is booted (nothing of the run started in the first)
S0=$(date +%s)
AIRLOCK_VM_BOOT_TIMEOUT=3 run "$AL" run p --backend vm --json --timeout 60 -- hostile-noup
is "$rc" 125 "a guest that never comes up is a sandbox failure (exit 125)"
like "$err" "did not come up within 3 s, in 2 boots" "…after a second boot, saying so"
ok "…not before both deadlines, and well before the run's wall-clock limit" -- \
	test $(( $(date +%s) - S0 )) -ge 6 -a $(( $(date +%s) - S0 )) -lt 60
unchanged "no boot"
RUN=$(printf '%s' "$err" | sed -n 's/.*(recorded: run \(r[0-9a-f]*\)).*/\1/p')
run "$AL" run show "$RUN" --json
is "$(echo "$out" | field outcome)" "failed: sandbox" "…recorded as failed"

run "$AL" run p --backend vm -- hostile-badup
is "$rc" 125 "a status line without the guest's first words is refused"
like "$err" "status line was refused" "…saying so"
unchanged "no first words"

# a guest that does not come up in its first VM (its clock, from the RTC,
# before the epoch it is given: 10 s from now, while the first VM's guest
# looks at ~2-3 s and the second's at ~22 s) and does in the second: the
# run goes on, and says so
AIRLOCK_VM_BOOT_TIMEOUT=20 run "$AL" run p --backend vm --json --timeout 60 -- "hostile-late-$(( $(date +%s) + 10 ))"
is "$rc" 0 "a guest that comes up in its second VM runs"
is "$(echo "$out" | field vm.boots)" 2 "…and its record says it took two boots"
is "$(echo "$out" | field changes.added)" 1 "…with its result"
done_testing
