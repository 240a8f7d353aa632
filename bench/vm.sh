#!/bin/bash
# microVM figures (issue 17), side by side in one run: the round trip of
# /bin/true in a vm run against a bare QEMU boot of the same kernel and
# initramfs whose /init powers off at once; the host memory of a vm run
# against its guest's size; what each boot choice saves.  Prints rows in
# bench/run.sh's format on stdout; never fails on time.
#   bench/vm.sh OUT            (make bench runs it when QEMU and the guest are there)
# With KVM (a host whose CPU has vmx/svm and a usable /dev/kvm) the same
# script measures KVM: the driver picks it by itself (airlock doctor says
# which); AIRLOCK_VM_ACCEL=tcg forces emulation for a comparison.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
Q=${AIRLOCK_QEMU:-/usr/bin/qemu-system-x86_64}
G="$B/guest"
N=${BENCH_VM_N:-5}
medN() { for _ in $(seq "$N"); do time_ms "$@"; done | median; }

# the same initramfs, its /init replaced by one that powers off at once
P="$OUT/vm-poweroff"; rm -rf "$P"; mkdir -p "$P/root"
(cd "$P/root" && cpio -idm --quiet < "$G/initramfs.cpio")
printf '#!/bin/busybox sh\n/bin/busybox poweroff -f\n' > "$P/root/init"; chmod 755 "$P/root/init"
(cd "$P/root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$P/initramfs.cpio"
accel=tcg,tb-size=64; cmd="quiet loglevel=0 panic=-1 pci=off tsc_early_khz=2000000 tsc=reliable no_timer_check"
if "$AL" doctor --json 2>/dev/null | grep -q '"KVM: /dev/kvm usable"'; then accel=kvm; cmd="quiet loglevel=0 panic=-1 pci=off"; fi
M=microvm,x-option-roms=off,pit=off,pic=off,isa-serial=off
boot() { # boot KERNEL MACHINE APPEND [QEMU ARGS...]: the driver's options (30 s at most)
	local k=$1 m=$2 a=$3; shift 3
	timeout 30 "$Q" -M "$m" -accel "$accel" -m 256 -smp 1 -nodefaults -no-user-config -nographic -no-reboot \
		-display none -serial none -monitor none -net none -kernel "$k" -initrd "$P/initramfs.cpio" -append "$a" "$@"
}

echo "== vm run /bin/true vs a bare boot of the same kernel and initramfs ($accel)" >&2
H="$OUT/homevm"; rm -rf "$H"; A() { "$AL" --home "$H" "$@"; }
A init >/dev/null
mkdir -p "$OUT/vmsmall"; echo hi > "$OUT/vmsmall/a.txt"
A project create small --from "$OUT/vmsmall" >/dev/null
A run small --backend vm --memory 96M -- true >/dev/null 2>&1   # imports the image, materialises
bare=""; run=""
for _ in $(seq "$N"); do   # interleaved: both see the same machine load
	bare="$bare $(time_ms boot "$G/vmlinux" "$M" "$cmd")"
	run="$run $(time_ms "$AL" --home "$H" run small --backend vm --memory 96M -- /bin/true)"
done
bare=$(echo $bare | tr ' ' '\n' | median); run=$(echo $run | tr ' ' '\n' | median)
row "vm run /bin/true, whole CLI (ms, median $N)" "$run" "$bare" "$(ratio "$run" "$bare")" "<= 1.2 x a bare boot that powers off ($accel)"

echo "== host memory of a vm run" >&2
"$AL" --home "$H" run small --backend vm --memory 96M -- sh -c 'sleep 3' >/dev/null 2>&1 &
cli=$!; hwm=0; own=0
while kill -0 "$cli" 2>/dev/null; do   # the peaks (VmHWM) of QEMU and of airlock itself
	q=$(pgrep -P "$cli" | head -1 || true)
	[ -n "$q" ] && h=$(awk '/^VmHWM:/{print $2}' "/proc/$q/status" 2>/dev/null || true) && [ -n "${h:-}" ] && hwm=$h
	a=$(awk '/^VmHWM:/{print $2}' "/proc/$cli/status" 2>/dev/null || true); [ -n "${a:-}" ] && own=$a
	sleep 0.1
done
wait "$cli" || true
guest=$(( 96 + 160 + 3 ))   # --memory, the guest's base (vm.c: GUEST_BASE_MIB), the inputs (~3 MiB)
row "vm run: QEMU's peak RSS (MiB) vs guest size" "$((hwm / 1024))" "$guest" "$(ratio "$((hwm / 1024))" "$guest")" "the guest's pages as touched, QEMU, TCG's cache; + airlock $((own / 1024)) MiB"

echo "== what each boot choice saves (bare boots, median $N)" >&2
base=$(medN boot "$G/vmlinux" "$M" "$cmd")
bz=$(ls -1 /boot/vmlinuz-"$(cat "$G/kernel")")
choice() { # choice LABEL NOTE BOOT-ARGS...: the driver's boot against one choice undone
	local label=$1 note=$2; shift 2
	local other; other=$(medN boot "$@")
	row "$label" "$base" "$other" "$(ratio "$base" "$other")" "$note"
}
choice "boot: ELF vmlinux (the choice) vs the bzImage" "no in-guest decompression" "$bz" "$M" "$cmd"
choice "boot: option ROMs off vs on" "x-option-roms=off" "$G/vmlinux" microvm,pit=off,pic=off,isa-serial=off "$cmd"
choice "boot: pci=off vs PCI probing" "no PCI bus on microvm" "$G/vmlinux" "$M" "${cmd/pci=off /}"
choice "boot: RTC kept vs rtc=off" "without it the clock setup waits" "$G/vmlinux" "$M,rtc=off" "$cmd"
choice "boot: ISA PIT/PIC/serial off vs on" "pit=off,pic=off,isa-serial=off" "$G/vmlinux" microvm,x-option-roms=off "$cmd"
if [ "$accel" != kvm ]; then
	choice "boot: TSC given vs calibrated" "tsc_early_khz, tsc=reliable, no_timer_check (30000: no boot within 30 s)" "$G/vmlinux" "$M" "quiet loglevel=0 panic=-1 pci=off"
	choice "boot: default CPU model vs -cpu max" "TCG emulates less" "$G/vmlinux" "$M" "$cmd" -cpu max
fi
