#!/bin/bash
# A run's bundle without libarchive (docs/formats.md, "DeltaBundle"): a run
# whose changed paths are all plain (printable ASCII, short enough for a
# ustar header) writes its bundle and reads it back without loading
# libarchive; the bundle is a standard tar.zst that GNU tar, Python's
# tarfile and airlock's own libarchive reader read, and it applies in
# another home.  A run that changes a non-ASCII or long name loads
# libarchive while its changes are collected, and its draft is as exact.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/d"
echo one > "$S/a.txt"; echo gone > "$S/d/gone"; echo keep > "$S/keep"
"$AL" project create p --from "$S" >/dev/null
"$AL" run p -- true >/dev/null 2>&1 # the image, imported once

# ---- plain: no libarchive ----------------------------------------------------------
CHANGE='echo two >> a.txt && rm d/gone && : > empty && head -c 100000 /dev/urandom > big &&
printf "#!/bin/sh\n" > x.sh && chmod 755 x.sh && mkdir -p new/deeper && echo n > new/deeper/n &&
ln -s a.txt link && touch "with space, and (punctuation)~"'
LD_DEBUG=files "$AL" run p --json -- sh -c "$CHANGE" >"$T/run.json" 2>"$T/ld"
is "$?" 0 "a run with plain names ends normally"
is "$(grep -c 'file=libarchive' "$T/ld")" 0 "  and never loads libarchive (LD_DEBUG=files)"
grep -q 'file=libjansson' "$T/ld"
is "$?" 0 "  (LD_DEBUG sees the libraries it does load)"
RUN=$(field id <"$T/run.json")
is "$(field changes <"$T/run.json")" '{"added": 8, "deleted": 1, "modified": 1}' \
	"  its bundle, read back, counts every change"
DRAFT=$("$AL" run show "$RUN" --json | field draft)
run "$AL" bundle export "$DRAFT" "$T/b.tar.zst"
is "$rc" 0 "bundle export of its draft"
ID=$out
run tar --zstd -tvf "$T/b.tar.zst"
is "$rc" 0 "GNU tar reads it"
like "$out" "^-rw-r--r-- 0/0 +[0-9]+ 1970-01-01 00:00 .airlock/bundle.json" "  the index first"
like "$out" "-rwxr-xr-x 0/0 +10 [^ ]+ [^ ]+ files/x.sh" "  an executable keeps its mode"
like "$out" "lrwxrwxrwx 0/0 +0 [^ ]+ [^ ]+ files/link -> a.txt" "  a symlink its target"
like "$out" "drwxr-xr-x 0/0 +0 [^ ]+ [^ ]+ files/new/" "  a directory is a directory"
"$AL" snapshot export "$("$AL" run show "$RUN" --json | field result)" "$T/x1" >/dev/null
ok "  the contents are the run's" -- bash -c "tar --zstd -xOf '$T/b.tar.zst' files/big | cmp - '$T/x1/big'"
is "$(tar --zstd -xOf "$T/b.tar.zst" .airlock/bundle.json | sha256sum | cut -c1-64)" "${ID#sha256:}" \
	"  its id is the sha256 of its index"
is "$(zstd -dc "$T/b.tar.zst" | python3 -c '
import tarfile,sys
t=tarfile.open(fileobj=sys.stdin.buffer,mode="r|")
print(" ".join(f"{m.name}:{m.type.decode()}" for m in t))')" \
	".airlock/bundle.json:0 files/a.txt:0 files/big:0 files/empty:0 files/link:2 files/new:5 files/new/deeper:5 files/new/deeper/n:0 files/with space, and (punctuation)~:0 files/x.sh:0" \
	"  Python's tarfile reads every member"
run "$AL" bundle inspect "$T/b.tar.zst"
is "$rc" 0 "airlock's libarchive reader accepts it"
H2="$T/home2"
AIRLOCK_HOME="$H2" "$AL" init >/dev/null
B2=$(AIRLOCK_HOME="$H2" "$AL" project create q --from "$S")
run env AIRLOCK_HOME="$H2" "$AL" bundle apply "$T/b.tar.zst" q --base "$B2"
is "$rc" 0 "it applies in another home"
AIRLOCK_HOME="$H2" "$AL" snapshot export "$(AIRLOCK_HOME="$H2" "$AL" project head q)" "$T/x2" >/dev/null
ok "  giving the run's tree exactly" -- diff -r --no-dereference "$T/x1" "$T/x2"

# ---- not plain: libarchive, loaded while the changes are collected ------------------
LONG=$(printf 'n%.0s' $(seq 120))
LD_DEBUG=files "$AL" run p --json -- sh -c "echo u > 'Q3 Überblick.csv' && echo l > $LONG && ln -s 'é' le" \
	>"$T/run2.json" 2>"$T/ld2"
is "$?" 0 "a run with a non-ASCII and a long name ends normally"
like "$(grep 'file=libarchive' "$T/ld2")" "libarchive" "  and loads libarchive for its bundle"
RUN2=$(field id <"$T/run2.json")
is "$(field changes.added <"$T/run2.json")" 3 "  its bundle, read back through libarchive, counts them"
"$AL" snapshot export "$("$AL" run show "$RUN2" --json | field result)" "$T/x3" >/dev/null
is "$(cat "$T/x3/Q3 Überblick.csv"):$(cat "$T/x3/$LONG"):$(readlink "$T/x3/le")" "u:l:é" \
	"  its result holds the exact names, contents and target"
done_testing
