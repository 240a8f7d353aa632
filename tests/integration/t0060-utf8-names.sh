#!/bin/bash
# Non-ASCII names (é, 文件, emoji, a combining mark, spaces, a leading dash,
# a 255-byte name) keep their exact bytes through import, run, review,
# apply, bundle export and apply, --server upload and download, and the
# audit; names that are not UTF-8 are refused on import and neutralised
# (and listed) by a run, never silently dropped.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
E=$(printf 'e\314\201')                          # e + COMBINING ACUTE ACCENT (NFD)
LONG=$(printf 'é%.0s' $(seq 127))x               # 127 × 2 bytes + 1 = 255 bytes
BAD=$(printf 'bad\377name')                      # not UTF-8
is "$(printf %s "$LONG" | wc -c)" 255 "the long name is 255 bytes"
S="$T/src"; mkdir -p "$S/文件" "$S/dir with space"
echo one > "$S/é.txt"; echo two > "$S/文件/数据.txt"; echo three > "$S/😀.md"
echo four > "$S/$E"; echo five > "$S/dir with space/a b"; echo six > "$S/-dash"
echo seven > "$S/$LONG"; ln -s "文件/数据.txt" "$S/链接"

# names as bytes, sorted: what a tree holds
names() { (cd "$1" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | od -An -tx1 | tr -d ' \n'); }

# ---- import ----------------------------------------------------------------------
run "$AL" project create p --from "$S"
is "$rc" 0 "project create --from a tree of non-ASCII names"
B=$out
"$AL" snapshot export "$B" "$T/x0" >/dev/null
is "$(names "$T/x0")" "$(names "$S")" "  export gives back the exact bytes of every name"
ok "  and the contents" -- diff -r --no-dereference "$S" "$T/x0"

# ---- run -> record, draft, ledger -------------------------------------------------
run "$AL" run p -- sh -c 'echo new > "é-new.txt"; echo changed >> "文件/数据.txt"; rm "😀.md"; echo c > "$1"; echo hi' sh "$E-2"
is "$rc:$out" "0:hi" "a run that writes non-ASCII names ends normally (exit 0, output)"
RUN=$(printf '%s\n' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' | head -1)
like "$err" "3 added|2 added, 1 modified, 1 deleted" "  its summary counts the changes"
run "$AL" run show "$RUN" --json
is "$rc" 0 "  it has a record"
DRAFT=$(echo "$out" | field draft)
like "$DRAFT" '^d[0-9a-f]+' "  and a draft"
GRP=$(echo "$out" | field group)
like "$("$AL" audit --group "$GRP")" "run" "  and a ledger entry"

# ---- review: names shown as they are (valid UTF-8 is not escaped) -----------------
run "$AL" review "$RUN" --stat
like "$out" "A é-new.txt" "review shows é as é"
like "$out" "M 文件/数据.txt" "  and 文件/数据.txt"
like "$out" "D 😀.md" "  and the emoji"
like "$out" "A $E-2" "  and the combining mark, unnormalised"
run "$AL" review "$RUN" --json
is "$(echo "$out" | python3 -c 'import json,sys; print(sorted(c["path"] for c in json.load(sys.stdin)["files"]) == sorted(["é-new.txt","文件/数据.txt","😀.md","e\u0301-2"]))')" True \
	"review --json: the exact paths"

# ---- bundle export, and apply in another home --------------------------------------
run "$AL" bundle export "$DRAFT" "$T/b.tar.zst"
is "$rc" 0 "bundle export of a draft with non-ASCII names"
is "$(zstd -dc "$T/b.tar.zst" | python3 -c '
import tarfile,sys
t=tarfile.open(fileobj=sys.stdin.buffer,mode="r|",encoding="utf-8",errors="surrogateescape")
print(ascii(sorted(m.name for m in t)))')" "['.airlock/bundle.json', 'files/e\u0301-2', 'files/\xe9-new.txt', 'files/\u6587\u4ef6/\u6570\u636e.txt']" \
	"  its members carry the exact bytes, unnormalised (python tarfile)"
tar --zstd -tf "$T/b.tar.zst" >"$T/tar.list" 2>/dev/null
ok "  and GNU tar lists them" -- grep -qx "files/é-new.txt" "$T/tar.list"
run "$AL" apply "$RUN" --accept-all
is "$rc" 0 "apply --accept-all"
HEAD=$("$AL" project head p)
"$AL" snapshot export "$HEAD" "$T/x1" >/dev/null
ok "  the new head has é-new.txt" -- test -f "$T/x1/é-new.txt"
ok "  and the combining-mark name, unnormalised" -- test -f "$T/x1/$E-2"
ok "  and not the deleted emoji" -- test ! -e "$T/x1/😀.md"
HOME1=$AIRLOCK_HOME; export AIRLOCK_HOME="$T/other"
"$AL" init >/dev/null
"$AL" project create q --from "$S" >/dev/null
run "$AL" bundle apply "$T/b.tar.zst" q --base "$B"
is "$rc:$out" "0:$HEAD" "bundle apply in another home gives the same head"
"$AL" snapshot export "$out" "$T/x2" >/dev/null
is "$(names "$T/x2")" "$(names "$T/x1")" "  byte for byte in every name"
export AIRLOCK_HOME=$HOME1

# ---- audit -------------------------------------------------------------------------
"$AL" run p -- sh -c 'echo 1 > "ü.txt"; echo 2 > "ß.txt"' 2>"$T/r2.err" >/dev/null
R2=$(sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' "$T/r2.err")
run "$AL" apply "$R2" --accept "ü.txt"
is "$rc" 0 "apply --accept a non-ASCII path"
run "$AL" audit --kind apply --json
like "$(echo "$out" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), ensure_ascii=False))')" "ü.txt" \
	"  the audit records the path's exact text"
run "$AL" audit verify
is "$rc" 0 "  and the ledger verifies"

# ---- not UTF-8: refused on import, neutralised in a run ----------------------------
mkdir -p "$T/bad"; echo x > "$T/bad/$BAD"; echo ok > "$T/bad/fine.txt"
before=$(store_state)
run "$AL" project create bad --from "$T/bad"
is "$rc" 6 "import of a name that is not UTF-8 is refused (exit 6)"
like "$err" 'bad\\xffname.*not valid UTF-8' "  naming it, escaped"
is "$(store_state):$("$AL" project list | grep -c '^bad ')" "$before:0" "  nothing changed"
run "$AL" run p -- sh -c 'echo x > "$(printf "bad\377name")"; echo y > kept.txt'
is "$rc" 0 "a run that writes a name that is not UTF-8 ends normally"
like "$err" 'bad\\xffname: name is not valid UTF-8, not kept' "  the name is listed as not kept"
R3=$(printf '%s\n' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' | head -1)
like "$("$AL" run show "$R3" --json | field neutralised)" 'not valid UTF-8' "  and recorded"
like "$("$AL" review "$R3" --stat)" "A kept.txt" "  the run's other changes are in its draft"

# ---- the daemon: --server upload and download --------------------------------------
"$AL" admin principal create au --role author,reviewer >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
AU=$("$AL" admin token create au 2>/dev/null); AG=$("$AL" admin token create ag 2>/dev/null)
serve_start
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" project create up --from "$S"
is "$rc:$out" "0:$B" "--server project create --from: the same snapshot as the local import"
AIRLOCK_TOKEN=$AG run "$AL" --server "$URL" run p -- sh -c 'echo s > "服务器 é.txt"'
is "$rc" 0 "--server run writing a non-ASCII name"
R4=$(printf '%s\n' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' | head -1)
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" review "$R4" --stat
like "$out" "A 服务器 é.txt" "  --server review shows the name as it is"
api GET "/runs/$R4" "$AU"
BLOB=$(echo "$out" | field bundle.blob)
curl -s -H "Authorization: Bearer $AU" "$URL/api/blobs/$BLOB" -o "$T/dl.tar.zst"
is "$(zstd -dc "$T/dl.tar.zst" | python3 -c '
import tarfile,sys
print([m.name for m in tarfile.open(fileobj=sys.stdin.buffer,mode="r|",encoding="utf-8")][1:])')" "['files/服务器 é.txt']" \
	"  the downloaded bundle carries the exact name"
AIRLOCK_TOKEN=$AU run "$AL" --server "$URL" project create badup --from "$T/bad"
is "$rc" 6 "--server project create --from a name that is not UTF-8: refused (exit 6)"
like "$err" 'not valid UTF-8' "  saying why"
api GET /projects/badup "$AU"
is "$status" 404 "  and no project is left"
# a tar made elsewhere with such a name (GNU format: raw bytes)
(cd "$T/bad" && tar --format=gnu -cf "$T/bad.tar" .)
before=$(store_state)
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/bad.tar" "$URL/api/projects/up/commits?base=$B")
is "$status" 422 "a tree upload with a name that is not UTF-8: 422, not 500"
like "$(cat "$T/.api")" 'not valid UTF-8' "  saying why"
is "$(store_state):$("$AL" project head up)" "$before:$B" "  nothing changed"
serve_stop
done_testing
