#!/bin/bash
# Images: the default busybox image, directories and tarballs.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
IMG="$AIRLOCK_BUILD/image/busybox"
ok "make builds the default busybox image" -- test -x "$IMG/bin/busybox" -a -L "$IMG/bin/sh" -a -L "$IMG/bin/wget" -a -L "$IMG/bin/nc"
run "$AL" image import "$IMG" --name busybox
is "$rc" 0 "import the busybox image"
id=$out
run "$AL" image list
like "$out" "^busybox $id " "image list names it"
run "$AL" snapshot show "$id"
like "$out" "symlink 0777 7 .* bin/sh" "  with its applet links as symlinks"

# a tarball with device nodes and a FIFO: those are skipped, counted
mkdir -p "$T/root/etc" "$T/root/dev"; echo hi > "$T/root/etc/motd"
mknod "$T/root/dev/null" c 1 3 2>/dev/null; mkfifo "$T/root/dev/fifo"
tar -C "$T/root" -czf "$T/root.tar.gz" .
run "$AL" image import "$T/root.tar.gz" --name small --json
like "$out" '"files":1' "a tarball image imports"
like "$out" '"skipped":[12]' "  device files and FIFOs are skipped and counted"
run "$AL" image import "$T/root" --name smalldir
is "$rc" 0 "a directory with device files imports as an image (skipped)"
like "$err" "skipped [12] device files" "  and says so"

# hostile tarballs: paths escaping the unpack directory are refused
python3 - "$T/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("../../escape"); ti.size = 1; t.addfile(ti, io.BytesIO(b"x"))
PY
run "$AL" image import "$T/evil.tar" --name evil
is "$rc" 6 "a tarball member with .. is refused"
ok "  nothing escaped" -- test ! -e "$AIRLOCK_HOME/tenants/escape" -a ! -e "$AIRLOCK_HOME/escape"
python3 - "$T/evil2.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("link"); ti.type = tarfile.SYMTYPE; ti.linkname = "/tmp"; t.addfile(ti)
    ti = tarfile.TarInfo("link/airlock-evil"); ti.size = 1; t.addfile(ti, io.BytesIO(b"x"))
PY
run "$AL" image import "$T/evil2.tar" --name evil2
is "$rc" 6 "a tarball writing through its own symlink is refused"
ok "  nothing was written through it" -- test ! -e /tmp/airlock-evil
python3 - "$T/evil3.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    ti = tarfile.TarInfo("/tmp/airlock-abs"); ti.size = 1; t.addfile(ti, io.BytesIO(b"x"))
PY
run "$AL" image import "$T/evil3.tar" --name evil3
is "$rc" 6 "a tarball member with an absolute path is refused"
ok "  nothing was written there" -- test ! -e /tmp/airlock-abs
run "$AL" image import "$T/nope" --name x
is "$rc" 3 "a missing source is not found"
run "$AL" image import "$IMG" --name "bad/name"
is "$rc" 6 "a bad image name is refused"
is "$(ls "$AIRLOCK_HOME/tenants/default/tmp" | wc -l)" 0 "temp unpack directories are removed"
run "$AL" fsck
is "$rc" 0 "fsck is clean"

# libarchive is loaded on first use (include/airlock/dl_archive.h): a broken
# one is a clear error, and commands without tar work do not load it
mkdir -p "$T/fakelib"; echo 'int airlock_not_archive;' > "$T/fakelib/empty.c"
cc -shared -fPIC -o "$T/fakelib/libarchive.so.13" "$T/fakelib/empty.c"
LD_LIBRARY_PATH="$T/fakelib" run "$AL" image import "$T/root.tar.gz" --name fake
ok "a libarchive without its functions: the import fails" -- test "$rc" != 0
like "$err" "libarchive.so.13 has no archive_" "…naming the library and what is missing"
ok "…and imports nothing" -- bash -c "! '$AL' image list | grep -q fake"
LD_LIBRARY_PATH="$T/fakelib" run "$AL" image list
is "$rc" 0 "commands without tar work run with it broken"
ok "…and do not link it" -- bash -c "! ldd '$AL' | grep -q libarchive"
# a run loads it only for a bundle with a name a plain ustar header cannot
# hold (on a second thread while it collects them, docs/formats.md): one
# that changed nothing, or only plain names, runs with it broken; one that
# changed a non-ASCII name fails, naming the library, recorded, the live
# head untouched
if have_userns; then
	mkdir -p "$T/rp"; echo a > "$T/rp/a.txt"
	"$AL" project create rp --from "$T/rp" >/dev/null
	"$AL" run rp -- true >/dev/null 2>&1 # the image and the layers, with the real library
	HEAD_RP=$("$AL" project head rp)
	LD_LIBRARY_PATH="$T/fakelib" run "$AL" run rp -- true
	is "$rc" 0 "a run that changes nothing runs with libarchive broken"
	LD_LIBRARY_PATH="$T/fakelib" run "$AL" run rp --json -- sh -c 'echo b > b.txt; ln -s b.txt l'
	is "$rc:$(echo "$out" | field changes.added)" "0:2" "a run that changes plain names runs with it broken"
	HEAD_RP=$("$AL" project head rp)
	LD_LIBRARY_PATH="$T/fakelib" run "$AL" run rp -- sh -c 'echo only-in-this-run > été.txt'
	ok "a run that changes a non-ASCII name fails with it broken" -- test "$rc" != 0
	# the collection and the bundle are one batch of the store (run.c,
	# collect_begin): a bundle that fails leaves none of the run's objects
	SUM=$(echo only-in-this-run | sha256sum | cut -c1-64)
	is "$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM objects WHERE id = ?", (bytes.fromhex(sys.argv[2]),)).fetchone()[0])' \
		"$AIRLOCK_HOME/tenants/default/objects.db" "$SUM")" 0 "…none of its objects stored"
	# unless its collection took objects.db's write lock (a large file):
	# that batch commits at once, so other writers do not wait on the
	# contracts and the bundle
	LD_LIBRARY_PATH="$T/fakelib" run "$AL" run rp -- sh -c 'head -c 300000 /dev/urandom > large; echo with-a-large-file > été2.txt'
	SUM=$(echo with-a-large-file | sha256sum | cut -c1-64)
	is "$rc:$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM objects WHERE id = ?", (bytes.fromhex(sys.argv[2]),)).fetchone()[0])' \
		"$AIRLOCK_HOME/tenants/default/objects.db" "$SUM")" "$rc:1" "…a collection holding the write lock is committed before its bundle"
	like "$err" "libarchive.so.13 has no archive_" "…naming the library and what is missing"
	is "$("$AL" runs rp --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["outcome"])')" \
		"failed: collect" "…its attempt recorded as failed in its collection"
	is "$("$AL" project head rp)" "$HEAD_RP" "…and the live head untouched"
fi
done_testing
