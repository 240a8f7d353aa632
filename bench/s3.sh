#!/bin/bash
# Object write and read throughput on S3 (Debian's OpenStack Swift with
# s3api, one node on 127.0.0.1, started here) against the local store, side
# by side in the same run through the object backend interface (bench/odb.c):
# small objects (4 KiB) and large ones (8 MiB), written one at a time and
# as one batch (S3: write_many, 8 uploads at once; local: one al_cas
# batch), read one at a time.  Then what a user sees: an import of 1000
# small files into a fresh home with --blobs against one without.  Prints
# rows in bench/run.sh's format, S3 in the first column and the local store
# in the second; never fails on time.  bench/s3.sh OUT
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
OUT=${1:-$root/bench/out}
mkdir -p "$OUT"
SW="$root/tests/servers/swift.sh"
rm -rf "$OUT/swift" "$OUT/odb-local"; mkdir -p "$OUT/odb-local"
EP=$("$SW" start "$OUT/swift")
trap '"$SW" stop "$OUT/swift"' EXIT
command curl -sf -o /dev/null --netrc-file "$OUT/swift/netrc" --aws-sigv4 aws:amz:us-east-1:s3 \
	-H "x-amz-content-sha256: $(printf '' | sha256sum | cut -c1-64)" -X PUT "$EP/bench"
export AWS_ACCESS_KEY_ID=test:tester AWS_SECRET_ACCESS_KEY=testing
fig() { awk -v n="$1" -v k="$2" '$1 == n { for (i = 2; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$3"; }
for spec in "small 4096 400" "large 8388608 12"; do
	set -- $spec
	echo "== odb: $3 objects of $2 bytes, S3 (Swift) vs the local store" >&2
	"$B/bench/odb" "$OUT/odb-local" "s3://bench/odb?endpoint=$EP" "$3" "$2" >"$OUT/odb-$1.txt"
	f="$OUT/odb-$1.txt"
	for k in write_mb_s read_mb_s write_objects_s read_objects_s batch_mb_s batch_objects_s; do
		s=$(fig s3 $k "$f") l=$(fig local $k "$f")
		row "S3 vs local $k, $1 objects ($2 B)" "$s" "$l" "$(ratio "$s" "$l")" "reported"
	done
done

# an import of 1000 files of 4 KiB: --blobs (every object uploaded before
# the batch commits) against the home alone
D="$OUT/s3-tree"; rm -rf "$D"; mkdir -p "$D"
for i in $(seq 1000); do head -c 4096 /dev/urandom >"$D/f$i"; done
imp() { # imp HOME [--blobs URL]: seconds of one import into a fresh home
	rm -rf "$1"; AIRLOCK_HOME="$1" "$B/airlock" init >/dev/null
	local t0=$(date +%s.%N)
	AIRLOCK_HOME="$1" "$B/airlock" "${@:2}" snapshot import "$D" --no-cache >/dev/null
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'
}
echo "== import of 1000 × 4 KiB files, --blobs (S3) vs the home alone" >&2
s=$(imp "$OUT/s3-home-b" --blobs "s3://bench/imp-$(date +%s%N)?endpoint=$EP")
l=$(imp "$OUT/s3-home-l")
row "S3 vs local import 1000 x 4 KiB files (s)" "$s" "$l" "$(ratio "$s" "$l")" "lower is better"
rm -rf "$D" "$OUT/s3-home-b" "$OUT/s3-home-l"
