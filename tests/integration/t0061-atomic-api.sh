#!/bin/bash
# An API operation happens whole or not at all: `--server project create
# --from DIR` whose upload fails (over --upload-max, cut off half-way,
# refused) leaves no project, and a retry succeeds.  And the smaller answers
# of issue 12 item 10: snapshot list counts, apply --json's draft, reject_all.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
"$AL" admin principal create au --role author >/dev/null
AU=$("$AL" admin token create au 2>/dev/null)
export AIRLOCK_TOKEN=$AU
S="$T/src"; mkdir -p "$S/d"; echo one > "$S/a.txt"; echo two > "$S/d/b.txt"
BIG="$T/big"; mkdir -p "$BIG"; head -c 200000 /dev/urandom > "$BIG/blob.bin"
serve_start --upload-max 64K --conn-timeout 2

# ---- an upload over --upload-max --------------------------------------------------
before=$(store_state)
run "$AL" --server "$URL" project create p --from "$BIG"
is "$rc" 8 "project create --from a tree over --upload-max: refused (exit 8, 413)"
api GET /projects/p "$AU"
is "$status" 404 "  no project is left"
is "$(store_state)" "$before" "  nothing is stored"
run "$AL" --server "$URL" project create p --from "$S"
is "$rc:$out" "0:$("$AL" snapshot import "$S")" "  the retry succeeds, its head DIR's snapshot"
like "$("$AL" project log p)" "^1 sha256:[0-9a-f]{64} create strict au: create project$" "  its one commit recorded"
run "$AL" --server "$URL" project create p --from "$S"
is "$rc" 7 "a second create of the same name: 409, exit 7"
like "$err" "already exists" "  saying so"

# ---- an upload cut off half-way: Content-Length larger than what is sent ------------
(cd "$S" && tar -cf "$T/tree.tar" .)
cut_off() { # cut_off PATH: send half of tree.tar under a Content-Length for all of it, then close
	python3 - "$URL" "$1" "$AU" "$T/tree.tar" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); body = open(sys.argv[4], "rb").read()
s = socket.create_connection((u.hostname, u.port))
s.sendall(("POST /api%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n" % (sys.argv[2], sys.argv[3], len(body))).encode())
s.sendall(body[:len(body) // 2])
s.close()
PY
}
before=$(store_state)
cut_off /projects/q
# the daemon logs the request as aborted once it has seen the connection close
for i in $(seq 300); do grep -q "POST /api/projects/{name} 0 .*(aborted)" "$T/serve.log" && break; sleep 0.05; done
ok "the cut-off upload was seen and aborted" -- grep -q "POST /api/projects/{name} 0 .*(aborted)" "$T/serve.log"
api GET /projects/q "$AU"
is "$status" 404 "  no project is left"
is "$(store_state)" "$before" "  nothing is stored"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/tree.tar" "$URL/api/projects/q")
is "$status" 201 "  the retry (whole) creates it: 201"
is "$(field head < "$T/.api"):$(field tree < "$T/.api")" "$("$AL" snapshot import "$S"):$("$AL" snapshot import "$S")" \
	"  its head is the uploaded tree, answered as 'tree' too"

# ---- refused bodies ----------------------------------------------------------------
before=$(store_state)
printf 'not a tar archive at all, not even close' > "$T/junk"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/junk" "$URL/api/projects/r")
is "$status" 422 "a body that is not a tar archive: 422"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/json' \
	--data-binary '{}' "$URL/api/projects/r")
is "$status" 422 "a body that is not declared a tar archive: 422"
like "$(cat "$T/.api")" "application/x-tar" "  saying what is expected"
status=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $AU" -H 'Content-Type: application/x-tar' \
	--data-binary @"$T/tree.tar" "$URL/api/projects/-bad")
is "$status" 422 "a bad project name: 422"
api GET /projects/r "$AU"
is "$status:$(store_state)" "404:$before" "  no project, nothing stored"
serve_stop
unset AIRLOCK_TOKEN

# ---- item 10: snapshot list counts for snapshots made by commit and apply ------------
# counts FILE-TREE: "N files M bytes", as an import counts them (regular files)
counts() { echo "$(find "$1" -type f | wc -l) files $(find "$1" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}') bytes"; }
listed() { "$AL" snapshot list | awk -v id="$1" '$1 == id {print $2, $3, $4, $5}'; }
M="$T/m"; mkdir -p "$M/d/e"; echo 1 > "$M/a"; echo 22 > "$M/d/b"; echo 333 > "$M/d/e/c"; ln -s a "$M/l"
"$AL" project create m --from "$M" >/dev/null
MB=$("$AL" project head m)
W1="$T/w1"; cp -a "$M" "$W1"; echo 4444 > "$W1/new1"; rm "$W1/d/b"
W2="$T/w2"; cp -a "$M" "$W2"; echo 55555 >> "$W2/d/e/c"; mkdir "$W2/z"; echo 6 > "$W2/z/f"
"$AL" commit m "$W1" --base "$MB" >/dev/null
H=$("$AL" commit m "$W2" --base "$MB" --strategy rebase_if_disjoint)
"$AL" snapshot export "$H" "$T/mh" >/dev/null
is "$(listed "$H")" "$(counts "$T/mh")" "snapshot list counts a commit's (rebased) result: $(counts "$T/mh")"
rm -rf "$T/wd"; "$AL" snapshot export "$("$AL" project head m)" "$T/wd" >/dev/null
echo 7777777 > "$T/wd/g"
D=$("$AL" draft create m --from "$T/wd")
A=$("$AL" apply "$D" --accept-all)
"$AL" snapshot export "$A" "$T/ma" >/dev/null
is "$(listed "$A")" "$(counts "$T/ma")" "  and an apply's result: $(counts "$T/ma")"
S2="$T/s2"; mkdir -p "$S2"; echo x > "$S2/x"
"$AL" project create m2 --from "$S2" >/dev/null
W3="$T/w3"; cp -a "$S2" "$W3"; echo yy > "$W3/y"
D3=$("$AL" draft create m2 --from "$W3")
"$AL" snapshot export "$("$AL" project head m2)" "$T/w4" >/dev/null; echo zzz > "$T/w4/z"
"$AL" commit m2 "$T/w4" --base "$("$AL" project head m2)" >/dev/null
A3=$("$AL" apply "$D3" --accept-all)
"$AL" snapshot export "$A3" "$T/ma3" >/dev/null
is "$(listed "$A3")" "$(counts "$T/ma3")" "  and an apply merged onto a moved head: $(counts "$T/ma3")"
# accept_selected: counted from the draft's changes it keeps (no second diff),
# on the head it was drafted from and merged onto a moved one
W5="$T/w5"; rm -rf "$W5"; "$AL" snapshot export "$("$AL" project head m2)" "$W5" >/dev/null
echo 1 > "$W5/k1"; mkdir -p "$W5/kd"; echo 22 > "$W5/kd/k2"; echo dropped > "$W5/n1"; rm "$W5/x"
D5=$("$AL" draft create m2 --from "$W5")
D6=$("$AL" draft create m2 --from "$W5")
A5=$("$AL" apply "$D5" --accept k1 --accept kd --accept x)
"$AL" snapshot export "$A5" "$T/ma5" >/dev/null
is "$(listed "$A5")" "$(counts "$T/ma5")" "  and an accept_selected's result: $(counts "$T/ma5")"
echo moved > "$T/ma5/m"; "$AL" commit m2 "$T/ma5" --base "$A5" >/dev/null
A6=$("$AL" apply "$D6" --accept n1 --strategy conflict_copy)
"$AL" snapshot export "$A6" "$T/ma6" >/dev/null
is "$(listed "$A6")" "$(counts "$T/ma6")" "  and one merged onto a moved head: $(counts "$T/ma6")"

# ---- item 10: apply --json with a run id; reject_all's answer -----------------------
"$AL" run m -- sh -c 'echo r > r.txt' 2>"$T/r.err" >/dev/null
RUN=$(sed -n 's/^run \(r[0-9a-f]*\): [0-9]* change.*/\1/p' "$T/r.err")
RDRAFT=$("$AL" run show "$RUN" --json | field draft)
like "$RDRAFT" '^d[0-9a-f]{13}$' "a run has its draft"
run "$AL" apply "$RUN" --accept-all --json
is "$rc:$(echo "$out" | field draft)" "0:$RDRAFT" "apply RUN --json: 'draft' is the draft's id, not the run's"
like "$("$AL" project log m | tail -1)" "accept_all draft $RDRAFT\$" "  and so is the commit message"
"$AL" run m -- sh -c 'echo s > s.txt' 2>"$T/s.err" >/dev/null
RUN2=$(sed -n 's/^run \(r[0-9a-f]*\): [0-9]* change.*/\1/p' "$T/s.err")
HM=$("$AL" project head m)
run "$AL" apply "$RUN2" --reject-all --json
is "$rc" 0 "apply --reject-all --json"
is "$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["seq"], d["strategy"], d["mode"], d["head"])')" \
	"None None reject_all $HM" "  seq and strategy are null (nothing committed), head the live head"
serve_start
"$AL" admin principal create rv --role reviewer >/dev/null
RV=$("$AL" admin token create rv 2>/dev/null)
"$AL" run m -- sh -c 'echo t > t.txt' 2>"$T/t.err" >/dev/null
RUN3=$(sed -n 's/^run \(r[0-9a-f]*\): [0-9]* change.*/\1/p' "$T/t.err")
D3=$("$AL" run show "$RUN3" --json | field draft)
api POST "/drafts/$RUN3/apply" "$RV" '{"mode":"reject_all"}'
is "$status:$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["draft"], d["seq"], d["strategy"])')" \
	"200:$D3 None None" "POST /api/drafts/RUN/apply reject_all: the draft's id, seq and strategy null"
serve_stop

done_testing
