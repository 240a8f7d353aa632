#!/bin/bash
# The microVM relay's figures (issue 18), side by side in one run: a
# download from a loopback HTTP server through a vm run's egress (curl in
# the guest -> its agent -> the relay port -> the host's proxy) against the
# same download through a namespace run's egress (curl -> the proxy), and
# the time a new connection takes each way (p50 of 100, a small answer).
# Under TCG the guest's CPU is emulated: the figures say what the relay
# costs there, not what it costs under KVM.  Prints rows in bench/run.sh's
# format on stdout; never fails on time.
#   bench/vmrelay.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=$1
N=${BENCH_VMRELAY_N:-3}
SIZE=${BENCH_VMRELAY_BYTES:-$((256 << 20))}

egress_bench vmrelay
R=(run p --image curl --network egress --allow "127.0.0.1:$PORT" --egress-bytes 2G
	--egress-connections 1000 --timeout 600 --cpus 1)

echo "== $((SIZE >> 20)) MiB from a loopback server: vm relay vs namespace egress (median of $N)" >&2
ns=$(for _ in $(seq "$N"); do
	"$AL" "${R[@]}" --backend ns -- curl -s -o /dev/null -w '%{speed_download}\n' "$U/bytes/$SIZE" 2>/dev/null; done | median)
vm=$(for _ in $(seq "$N"); do
	"$AL" "${R[@]}" --backend vm -- curl -s -o /dev/null -w '%{speed_download}\n' "$U/bytes/$SIZE" 2>/dev/null; done | median)
mb() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1048576 }'; }
accel=$("$AL" run p --backend vm --json -- true 2>/dev/null | field vm.accel)
row "vm relay: download (MiB/s)" "$(mb "$vm")" "$(mb "$ns")" "$(ratio "$vm" "$ns")" "vs a namespace run's egress; the guest on $accel"

echo "== a new connection: vm relay vs namespace egress (p50 of 100)" >&2
lat() { tr -d '\r' | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)] * 1000}'; }
nl=$("$AL" "${R[@]}" --backend ns -- curl -s -o /dev/null -H 'Connection: close' -w '%{time_total}\n' "$U/hello?[1-100]" 2>/dev/null | lat)
vl=$("$AL" "${R[@]}" --backend vm -- curl -s -o /dev/null -H 'Connection: close' -w '%{time_total}\n' "$U/hello?[1-100]" 2>/dev/null | lat)
row "vm relay: new connection, p50 (ms)" "$vl" "$nl" "$(ratio "$vl" "$nl")" "vs a namespace run's egress"
