#!/bin/bash
# Hostile trees: a forged snapshot cannot make export write outside its
# target; symlinks are stored and written, never followed.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
TD="$AIRLOCK_HOME/tenants/default"
mkdir -p "$T/outside"

# forge(NAME...): store a tree node whose entries have these names (each an
# empty file), bypassing import's checks, and print its id.
forge() {
	python3 - "$TD/objects.db" "$TD/meta.db" "$@" <<'PY'
import hashlib, sqlite3, struct, sys
empty = hashlib.sha256(b"").digest()
names = [n.encode() for n in sys.argv[3:]]
enc = b"ALTREE\x00\x01" + struct.pack(">I", len(names)) + b"".join(
    b"f" + struct.pack(">HQ", 0o644, 0) + empty + struct.pack(">H", len(n)) + n for n in names)
oid = hashlib.sha256(enc).digest()
db = sqlite3.connect(sys.argv[1])
db.execute("insert or ignore into objects(id,size,enc,data) values (?,?,0,?)", (oid, len(enc), enc))
db.execute("insert or ignore into objects(id,size,enc,data) values (?,0,0,?)", (empty, b""))
db.commit()
m = sqlite3.connect(sys.argv[2])
m.execute("insert or ignore into snapshots(id,created,files,bytes,source) values (?,0,0,0,'forged')", (oid,))
m.commit()
print("sha256:" + oid.hex())
PY
}

for name in ".." "../outside/pwned" "/abs" "a/../../x" "." ""; do
	id=$(forge "$name")
	rm -rf "$T/target"
	run "$AL" snapshot export "$id" "$T/target"
	is "$rc" 6 "export refuses a forged snapshot with the name '$name'"
	like "$err" "is not a snapshot tree node" "  as not a valid tree"
	is "$(ls -A "$T/outside" | wc -l)" 0 "  nothing was written outside the target"
	ok "  and nothing inside either" -- test -z "$(ls -A "$T/target" 2>/dev/null)"
done
run "$AL" fsck
is "$rc" 4 "fsck reports the forged nodes as corrupt"

# a symlink in the target is never followed, even with --force
S="$T/src"; mkdir -p "$S/dir"; echo data > "$S/dir/file"
id=$("$AL" snapshot import "$S")
mkdir -p "$T/t2"; ln -s "$T/outside" "$T/t2/dir"
run "$AL" snapshot export "$id" "$T/t2"
is "$rc" 7 "export refuses a target holding a symlink (not empty)"
run "$AL" snapshot export --force "$id" "$T/t2"
is "$rc" 0 "export --force replaces the symlink"
ok "  with a real directory" -- test -d "$T/t2/dir" -a ! -L "$T/t2/dir"
is "$(ls -A "$T/outside" | wc -l)" 0 "  and wrote nothing through it"

# import stores symlinks as symlinks: a link to /etc does not import /etc
mkdir -p "$T/src2"; ln -s /etc "$T/src2/etc"; ln -s /etc/shadow "$T/src2/shadow"; ln -s loop "$T/src2/loop"
id2=$("$AL" snapshot import "$T/src2")
run "$AL" snapshot show "$id2"
is "$(echo "$out" | awk '{print $1, $5}' | tr '\n' ' ')" "symlink etc symlink loop symlink shadow " \
	"links to /etc, /etc/shadow and a loop are stored as links, not followed"
run "$AL" snapshot export "$id2" "$T/out2"
is "$(readlink "$T/out2/shadow")" "/etc/shadow" "and exported as links"

# the store's own files are private
is "$(stat -c %a "$TD")" 700 "the tenant directory is 0700"
is "$(find "$TD/objects" -type f -perm /077 | wc -l)" 0 "object files are not readable by others"
done_testing
