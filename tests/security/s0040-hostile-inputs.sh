#!/bin/bash
# Hostile inputs (issue 11): decompression bombs and external-program
# filters in image and tree uploads and in bundles; an image naming a
# snapshot its principal may not read; sparse files amplifying a run's
# output past its disk limit.  Each is refused or bounded with a clear
# answer, and nothing else changes.
. "$(dirname "$0")/../lib.sh"
prereq() { # prereq DESCRIPTION -- COMMAND...: a missing one skips (skip_all: fails under .ci/run)
	local desc=$1; shift; [ "${1:-}" = "--" ] && shift
	"$@" >/dev/null 2>&1 || skip_all "$desc"
}
prereq "needs root (cgroup limits)" -- test "$(id -u)" = 0
prereq "needs user namespaces" -- unshare -U true
prereq "needs xz, zstd, bzip2, python3" -- which xz zstd bzip2 python3
"$AL" init >/dev/null
TMPD="$AIRLOCK_HOME/tenants/default/tmp"
nothing_left() { # nothing_left STATE0 IMAGES0 WHAT
	is "$(store_state)" "$1" "  $3: the store is unchanged"
	is "$("$AL" image list)" "$2" "  …no image is registered"
	is "$(ls -A "$TMPD" | wc -l)" 0 "  …and no temp directory is left"
}

# ---- 6. decompression bombs and filters --------------------------------------------
# a tar holding one member of N zero bytes, streamed (never on disk whole)
zeros_tar() { # zeros_tar BYTES
	python3 - "$1" <<'PY'
import io, sys, tarfile
n = int(sys.argv[1])
class Z(io.RawIOBase):
    def __init__(s, n): s.n = n
    def readable(s): return True
    def readinto(s, b):
        k = min(len(b), s.n); b[:k] = bytes(k); s.n -= k; return k
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|") as t:
    ti = tarfile.TarInfo("zeros"); ti.size = n; t.addfile(ti, io.BufferedReader(Z(n)))
PY
}
zeros_tar $((100 << 20)) | xz -T1 -6 > "$T/bomb.tar.xz"
zeros_tar $((100 << 20)) | zstd -q -19 > "$T/bomb.tar.zst"
zeros_tar $((100 << 20)) | bzip2 -9 > "$T/bomb.tar.bz2"
# 1,000,001 members (FIFOs: nothing is written for them, each costs a header)
python3 -c '
import sys, tarfile
ti = tarfile.TarInfo("p"); ti.type = tarfile.FIFOTYPE; h = ti.tobuf(tarfile.GNU_FORMAT)
out = sys.stdout.buffer
for i in range(1000001 // 1000): out.write(h * 1000)
out.write(h * (1000001 % 1000 + 1)); out.write(bytes(1024))' | zstd -q -1 > "$T/many.tar.zst"
# a sparse member: 200 MiB apparent from a few KiB, and one past the total cap
mkdir -p "$T/sp"; truncate -s 200M "$T/sp/hole"; tar -C "$T/sp" -S -cf "$T/sparse.tar" hole
truncate -s 9G "$T/sp/hole"; tar -C "$T/sp" -S -cf "$T/sparse9g.tar" hole; rm "$T/sp/hole"
# a good compressed image still imports, with every allowed filter
mkdir -p "$T/ok/etc"; echo fine > "$T/ok/etc/motd"; head -c 300K /dev/urandom > "$T/ok/rand"
for c in "gzip" "xz" "zstd -q" "bzip2" "cat"; do tar -C "$T/ok" -cf - . | $c > "$T/ok.tar.${c%% *}"; done

STATE0=$(store_state); IMAGES0=$("$AL" image list)
refused_image() { # refused_image FILE PATTERN WHAT
	local t0=$SECONDS
	run "$AL" image import "$1" --name bomb
	is "$rc" 8 "$3: refused (exit 8, LimitExceeded)"
	like "$err" "$2" "  …saying why: $2"
	ok "  …without unpacking it all (under 10 s)" -- test $((SECONDS - t0)) -lt 10
	nothing_left "$STATE0" "$IMAGES0" "$3"
}
refused_image "$T/bomb.tar.xz" "expands more than 100 times" "a 15 KB .tar.xz of 100 MiB"
refused_image "$T/bomb.tar.zst" "expands more than 100 times" "a .tar.zst of 100 MiB"
refused_image "$T/bomb.tar.bz2" "expands more than 100 times" "a .tar.bz2 of 100 MiB"
refused_image "$T/many.tar.zst" "more than 1000000 members" "a tarball of 1,000,001 members"
refused_image "$T/sparse.tar" "expands more than 100 times" "a sparse member of 200 MiB"
refused_image "$T/sparse9g.tar" "more than 8589934592 bytes" "a sparse member of 9 GiB (over the total cap)"

# an archive libarchive would decode with an external program (lrzip is
# never built in): the program must not run
mkdir -p "$T/bin"
printf '#!/bin/sh\necho ran > "%s"\ncat >/dev/null\n' "$T/external-ran" > "$T/bin/lrzip"; chmod +x "$T/bin/lrzip"
{ printf 'LRZI\000\006'; head -c 200 /dev/urandom; } > "$T/x.tar.lrz"
run env PATH="$T/bin:$PATH" "$AL" image import "$T/x.tar.lrz" --name ext
is "$rc" 6 "an lrzip-compressed archive is refused (exit 6)"
like "$err" "not a tar archive" "  …as not a tar archive"
ok "  …and no external program ran" -- test ! -e "$T/external-ran"
nothing_left "$STATE0" "$IMAGES0" "an external-program filter"

for c in gzip xz zstd bzip2 cat; do
	run "$AL" image import "$T/ok.tar.$c" --name "ok-$c" --json
	is "$rc:$(echo "$out" | field files 2>/dev/null)" "0:2" "a good .tar ($c) still imports"
done

# the same through the API: an image upload and a tree commit (application/x-tar)
"$AL" project create p --from "$T/ok" >/dev/null
"$AL" admin principal create ag --role agent >/dev/null
"$AL" admin principal create au --role author,reviewer >/dev/null
"$AL" admin grant ag p >/dev/null
AG=$("$AL" admin token create ag 2>/dev/null); AU=$("$AL" admin token create au 2>/dev/null)
serve_start
STATE1=$(store_state); IMAGES1=$("$AL" image list); HEAD1=$("$AL" project head p)
upload() { # upload PATH FILE [CONTENT-TYPE]: sets $status, $out
	status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" \
		-H "Content-Type: ${3:-application/octet-stream}" --data-binary @"$2" "$URL/api$1")
	out=$(cat "$T/.api")
}
upload /images?name=bomb "$T/bomb.tar.xz"
is "$status" 413 "POST /images with a .tar.xz bomb: 413"
like "$out" '"LimitExceeded".*expands more than 100 times' "  …LimitExceeded, saying why"
upload "/projects/p/commits?base=$HEAD1" "$T/bomb.tar.zst" application/x-tar
is "$status" 413 "a tree commit (application/x-tar) of a .tar.zst bomb: 413"
upload "/projects/p/commits?base=$HEAD1" "$T/many.tar.zst" application/x-tar
is "$status" 413 "a tree commit of 1,000,001 members: 413"
is "$(store_state):$("$AL" project head p)" "$STATE1:$HEAD1" "  neither changed the store or the head"
is "$("$AL" image list)" "$IMAGES1" "  …nor the images"
is "$(ls -A "$TMPD" | wc -l)" 0 "  …and no temp file is left"

# a bundle that expands more than 100 times is refused when it comes from
# outside; the run that wrote it (a file of zeros is its own business) is not
run "$AL" run p --json -- dd if=/dev/zero of=zeros bs=1M count=64
is "$rc" 0 "a run leaving 64 MiB of zeros succeeds (its own bundle is read without the ratio cap)"
ZDRAFT=$(echo "$out" | field draft)
"$AL" bundle export "$ZDRAFT" "$T/zeros.bundle" >/dev/null 2>&1
ok "its bundle exports" -- test -s "$T/zeros.bundle"
run "$AL" bundle inspect "$T/zeros.bundle"
is "$rc" 8 "inspecting that bundle from outside: refused (8)"
like "$err" "bundle refused: it expands more than 100 times" "  …saying why"
STATE2=$(store_state)
upload "/projects/p/commits?base=$HEAD1" "$T/zeros.bundle"
is "$status" 413 "committing it over the API: 413"
is "$(store_state):$("$AL" project head p)" "$STATE2:$HEAD1" "  …and nothing changed"

# ---- 4. an image is a registered image or a snapshot the principal may read -------
# pa: a usable root filesystem (busybox) the agent is granted; pb: not granted,
# with a history (its first snapshot, then a second head)
"$AL" project create pa --from "$AIRLOCK_BUILD/image/busybox" >/dev/null
"$AL" admin grant ag pa >/dev/null
mkdir -p "$T/b1"; echo "b's secret plans" > "$T/b1/plans.txt"
"$AL" project create pb --from "$T/b1" >/dev/null
PB0=$("$AL" project head pb)
echo "b's newer plans" > "$T/b1/plans.txt"
"$AL" commit pb "$T/b1" --base "$PB0" >/dev/null
PB1=$("$AL" project head pb); PA=$("$AL" project head pa)
PBLOB="sha256:$(printf "b's newer plans\n" | sha256sum | cut -c1-64)"
RANDOM_ID="sha256:$(head -c 32 /dev/urandom | sha256sum | cut -c1-64)"
BUSYBOX=$("$AL" image list | awk '$1 == "busybox" {print $2}')
STATE3=$(store_state)
image_run() { # image_run TOKEN IMAGE: a run of true on pa with that image; sets $status, $out
	api POST /projects/pa/runs "$1" "{\"argv\":[\"true\"],\"image\":\"$2\",\"wait\":true}"
}
image_run "$AG" "$RANDOM_ID"; want_status=$status want=$out
is "$want_status" 404 "an agent naming a random digest as its image: 404"
like "$want" '"NotFound"' "  …NotFound"
image_run "$AG" "$PB1"
is "$status:$out" "$want_status:$want" "…naming the head of a project it was not granted: the same bytes"
image_run "$AG" "$PB0"
is "$status:$out" "$want_status:$want" "…naming an older snapshot of that project: the same bytes"
image_run "$AG" "$PBLOB"
is "$status:$out" "$want_status:$want" "…naming a blob of that project (exists, not a tree): the same bytes"
ok "  no answer names the digest it was given" -- sh -c '! printf "%s" "$1" | grep -q sha256' _ "$want"
is "$(store_state)" "$STATE3" "  the refusals changed nothing"
image_run "$AG" "$PA"
is "$status:$(echo "$out" | field exit_code)" "200:0" "the agent may use the head of its granted project as an image"
is "$(echo "$out" | field image)" "$PA" "  …and the record names it"
image_run "$AG" "$BUSYBOX"
is "$status:$(echo "$out" | field image)" "200:$BUSYBOX" "…and a registered image by its id"
image_run "$AG" busybox
is "$status:$(echo "$out" | field image)" "200:$BUSYBOX" "…or by its name"
# pb's head is a tree of text files, not a root filesystem: the request is
# accepted (the run itself then fails to start its command)
api POST /projects/pa/runs "$AU" "{\"argv\":[\"true\"],\"image\":\"$PB1\"}"
is "$status" 202 "an author (who may read every project) may name pb's head"

# locally (the CLI, the operator) every project is readable, nothing else is
run "$AL" run pa --image "$PB0" -- true
ok "locally, an older snapshot of any project is an image (the run starts)" -- \
	sh -c '! printf "%s" "$1" | grep -q "no such image"' _ "$err"
run "$AL" run pa --image "$RANDOM_ID" -- true
is "$rc" 3 "locally, a random digest: not found (3)"
lwant=$err
run "$AL" run pa --image "$PBLOB" -- true
is "$rc:$err" "3:$lwant" "  …a blob's digest: the same answer"
RCONTENT=$("$AL" run pa --json -- sh -c 'echo x > new.txt' | field result)
run "$AL" run pa --image "$RCONTENT" -- true
is "$rc:$err" "3:$lwant" "  …an open draft's content (not in the history): the same answer"
like "$lwant" "no such image" "  …which says what an image may be"

serve_stop

# ---- 5. sparse files count by their apparent size against the disk limit ---------
SPARSE='for i in 1 2 3 4 5 6 7 8; do truncate -s 16M f$i; done'
run "$AL" run pa --disk-limit 16M --json -- sh -c "$SPARSE"
is "$rc" 0 "eight sparse 16 MiB files under --disk-limit 16M: the run ends"
rec=$out
is "$(echo "$rec" | field disk_limit_hit):$(echo "$rec" | field dropped)" "True:7" \
	"  the record says the disk limit was hit and 7 files were dropped"
is "$(echo "$rec" | python3 -c 'import json,re,sys
d = json.load(sys.stdin)
print(len({n.split(":")[0] for n in d["neutralised"] if re.match(r"f[1-8]: not kept: over the disk limit", n)}))')" 7 \
	"  …and names each of the 7 dropped paths"
is "$(echo "$rec" | field changes.added)" 1 "  the draft holds the one file taken before the limit"
SIZES=$("$AL" snapshot show "$(echo "$rec" | field result)" --json | python3 -c 'import json,sys
d=json.load(sys.stdin); e=d.get("entries", d)
print(sum(x.get("size", 0) for x in e if x.get("path","").startswith("f")))')
is "$SIZES" 16777216 "  …so the draft's new content is within the limit (16 MiB, not 128)"
run "$AL" run pa --disk-limit 16M -- sh -c "$SPARSE"
like "$err" "disk limit reached: 7 files not kept" "the CLI says so"
like "$err" "f[1-8]: not kept: over the disk limit" "  …naming the dropped files"
run "$AL" run pa --disk-limit 16M --json -- sh -c 'truncate -s 1M small'
is "$(echo "$out" | field disk_limit_hit):$(echo "$out" | field dropped)" "False:0" "a run within its limit is not marked"

ok "fsck is clean" -- "$AL" fsck
done_testing
