#!/bin/bash
# A stored byte that changes is detected by every read and by fsck.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S/d"
echo "small packed file" > "$S/d/small"
head -c 500000 /dev/urandom > "$S/large"
id=$("$AL" snapshot import "$S")
small=$(sha256sum "$S/d/small" | cut -c1-64)
large=$(sha256sum "$S/large" | cut -c1-64)
TD="$AIRLOCK_HOME/tenants/default"

run "$AL" fsck
is "$rc" 0 "fsck of a fresh store is clean"
like "$err" "0 corrupt, 0 missing" "  and says so"

# flip one byte of the packed object
python3 - "$TD/objects.db" "$small" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); oid = bytes.fromhex(sys.argv[2])
data = bytearray(db.execute("select data from objects where id=?", (oid,)).fetchone()[0])
data[len(data)//2] ^= 0x01
db.execute("update objects set data=? where id=?", (bytes(data), oid)); db.commit()
PY
run "$AL" snapshot export "$id" "$T/out1"
is "$rc" 4 "export of a snapshot with a corrupt packed object fails (exit 4)"
like "$err" "object sha256:$small is corrupt" "  naming the object"
ok "  and does not leave the corrupt file behind" -- test ! -e "$T/out1/d/small"
run "$AL" fsck
is "$rc" 4 "fsck finds the corrupt packed object"
like "$out" "corrupt sha256:$small" "  and names it"
like "$out" "file d/small of snapshot $id" "  with the path that reaches it"

# restore, then damage the loose object file
"$AL" snapshot import --no-cache "$S" >/dev/null
python3 - "$TD/objects.db" "$small" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("delete from objects where id=?", (bytes.fromhex(sys.argv[2]),)); db.commit()
PY
"$AL" snapshot import --no-cache "$S" >/dev/null
is "$("$AL" fsck >/dev/null 2>&1; echo $?)" 0 "a re-import repairs it"
f="$TD/objects/${large:0:2}/${large:2}"
ok "a large object is a file of its own" -- test -f "$f"
chmod u+w "$f"; python3 -c "
import sys; f=open(sys.argv[1],'r+b'); f.seek(100); b=f.read(1)[0]; f.seek(100); f.write(bytes([b ^ 0x01]))" "$f"   # flip one bit
run "$AL" snapshot export "$id" "$T/out2"
is "$rc" 4 "export with a corrupt loose object fails (exit 4)"
like "$err" "object sha256:$large is corrupt" "  naming it"
ok "  and removes the partial file" -- test ! -e "$T/out2/large"
run "$AL" fsck --json
is "$rc" 4 "fsck --json exits 4"
like "$out" "\"ok\":false" "  reports ok:false"
like "$out" "\"id\":\"sha256:$large\"" "  and lists the object"

rm -f "$f"
run "$AL" fsck
is "$rc" 4 "a deleted loose object is found by fsck"
like "$out" "sha256:$large.*missing" "  reported as missing"

# a missing tree node
"$AL" snapshot import --no-cache "$S" >/dev/null
node=$("$AL" snapshot show "$id" | awk '$1=="dir" && $5=="d"{print $4}' | cut -c8-)
python3 - "$TD/objects.db" "$node" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute("delete from objects where id=?", (bytes.fromhex(sys.argv[2]),)); db.commit()
PY
run "$AL" fsck
is "$rc" 4 "a missing tree node is found"
like "$out" "missing sha256:$node: directory d of snapshot" "  with the directory it was"
run "$AL" snapshot show "$id"
is "$rc" 3 "show of a snapshot with a missing node fails"
done_testing
