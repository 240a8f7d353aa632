#!/bin/bash
# Tenants cannot see each other through the API: for every object kind
# (project, run, draft, snapshot, blob, ledger entry, principal, token) a
# second tenant's reads, lists, writes, applies, cancels and audits answer
# exactly what a missing object answers, and change nothing.  Secrets given
# to a run reach it and nothing stored, logged or recorded holds them.
# SIGTERM during a run cancels it cleanly.
. "$(dirname "$0")/../lib.sh"
need_userns
"$AL" init >/dev/null
"$AL" admin tenant create acme >/dev/null
S="$T/src"; mkdir -p "$S"; echo "ledger 2026" > "$S/books.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" --tenant acme project create mine >/dev/null
"$AL" admin principal create a --role admin,author,reviewer,agent >/dev/null
"$AL" --tenant acme admin principal create b --role admin,author,reviewer,agent >/dev/null
A=$("$AL" admin token create a 2>/dev/null)
B=$("$AL" --tenant acme admin token create b 2>/dev/null)
AID=$("$AL" admin token list --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
serve_start --grace 1

# ---- tenant default's objects ----------------------------------------------------
SECRET="s3cr3t-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
FILESECRET="f1le-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# (the command must not name the values: argv is recorded; it prints their digests)
api POST /projects/p/runs "$A" "{\"argv\":[\"sh\",\"-c\",\"printf %s \\\"\$API_TOKEN\\\" | sha256sum; sha256sum < /run/airlock/secrets/PLATFORM; ls /run/airlock/secrets; echo new > out.txt\"],\"secrets\":[{\"name\":\"API_TOKEN\",\"value\":\"$SECRET\"},{\"name\":\"PLATFORM\",\"value\":\"$FILESECRET\",\"as\":\"file\"}],\"wait\":true}"
is "$status" 200 "a run with secrets"
is "$(echo "$out" | field stdout.text)" "$(printf '%s' "$SECRET" | sha256sum)
$(printf '%s' "$FILESECRET" | sha256sum)
PLATFORM" "the secrets reach the sandbox: an environment variable and /run/airlock/secrets/PLATFORM"
RUN=$(echo "$out" | field id)
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(s["name"]+":"+s["as"] for s in json.load(sys.stdin)["secrets"]))')" \
   "API_TOKEN:env PLATFORM:file" "the record names the secrets and how they were given"
like "$(echo "$out" | python3 -c 'import json,sys; print([s["hmac"] for s in json.load(sys.stdin)["secrets"]][0])')" \
   "^hmac-sha256:[0-9a-f]{64}$" "…with the value's keyed digest, not the value"
api POST /projects/p/runs "$A" '{"argv":["sh","-c","cat /run/airlock/secrets/PLATFORM 2>&1; echo $API_TOKEN"],"wait":true}'
like "$(echo "$out" | field stdout.text)" "No such file" "the next run has neither: secrets vanish with their run"
# every stored byte: the home (objects decompressed), the export, the log
"$AL" audit export "$T/ledger.export" >/dev/null 2>&1
mkdir -p "$T/unpacked"
find "$AIRLOCK_HOME" -type f | while read -r f; do zstd -dcq "$f" 2>/dev/null >> "$T/unpacked/all"; done
ok "no stored byte holds either secret (home, decompressed objects, ledger export, request log)" -- \
	bash -c "! grep -rlaF -e '$SECRET' -e '$FILESECRET' '$AIRLOCK_HOME' '$T/unpacked' '$T/ledger.export' '$T/serve.log'"

DRAFT=$(echo "$("$AL" run show "$RUN" --json)" | field draft)
SNAP=$("$AL" project head p)
BLOB=$("$AL" snapshot show "$SNAP" --json 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin); e=d.get("entries", d)
print([x["sha256"] for x in e if x.get("path")=="books.txt"][0])' 2>/dev/null)
[ -n "$BLOB" ] || BLOB="sha256:$(printf 'ledger 2026\n' | sha256sum | cut -c1-64)"
SEQ=$("$AL" audit --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["seq"])')
GROUP=$("$AL" run show "$RUN" --json | field group)

# the other tenant asks for each; a missing object of the same shape is asked too
STATE0=$(store_state)
LEDGER0=$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
HEAD0=$("$AL" project head p)
same404() { # same404 METHOD PATH-OF-A PATH-OF-NOTHING [BODY]: B gets for A's what it gets for nothing
	local m=$1 pa=$2 pn=$3; shift 3
	api "$m" "$pa" "$B" "$@"; local sa=$status oa=$out
	api "$m" "$pn" "$B" "$@"; local sn=$status on=$out
	is "$sa" 404 "$m $pa from another tenant: 404"
	# the names differ in one path segment: put A's name into the missing one's answer
	local want
	want=$(python3 -c 'import sys
a, n, o = sys.argv[1].split("/"), sys.argv[2].split("/"), sys.argv[3]
for x, y in zip(a, n):
    if x != y: o = o.replace(y, x)
print(o)' "$pa" "$pn" "$on")
	is "$oa" "$want" "…the same answer as for a missing one"
}
FAKE_RUN=r0000000000000
FAKE_DRAFT=d0000000000000
FAKE_ID="sha256:$(printf '%064d' 0)"
same404 GET /projects/p /projects/zz
same404 GET /projects/p/log /projects/zz/log
same404 GET /projects/p/drafts /projects/zz/drafts
same404 GET /projects/p/runs /projects/zz/runs
same404 POST /projects/p/runs /projects/zz/runs '{"argv":["true"]}'
same404 GET "/runs/$RUN" "/runs/$FAKE_RUN"
same404 GET "/runs/$RUN/output" "/runs/$FAKE_RUN/output"
same404 POST "/runs/$RUN/cancel" "/runs/$FAKE_RUN/cancel"
same404 GET "/drafts/$DRAFT" "/drafts/$FAKE_DRAFT"
same404 GET "/drafts/$DRAFT/review" "/drafts/$FAKE_DRAFT/review"
same404 GET "/drafts/$RUN/review" "/drafts/$FAKE_RUN/review"
same404 POST "/drafts/$DRAFT/apply" "/drafts/$FAKE_DRAFT/apply" '{"mode":"accept_all"}'
same404 POST "/drafts/$DRAFT/apply" "/drafts/$FAKE_DRAFT/apply" '{"mode":"reject_all"}'
same404 GET "/snapshots/$SNAP" "/snapshots/$FAKE_ID"
same404 GET "/blobs/$BLOB" "/blobs/$FAKE_ID"
same404 DELETE "/tokens/$AID" /tokens/t0000000000000
same404 POST /principals/a/tokens /principals/zz/tokens '{}'
same404 POST /principals/a/grants /principals/zz/grants '{"name":"p"}'
code=$(curl -s -o "$T/.api" -w '%{http_code}' -H "Authorization: Bearer $B" --data-binary @/dev/null "$URL/api/projects/p/commits?base=$SNAP")
is "$code" 404 "a commit to another tenant's project: 404"
api GET /projects "$B"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')" "mine" "the other tenant lists only its own projects"
api GET "/audit?group=$GROUP" "$B"
is "$out" "[]" "…none of the first tenant's ledger groups"
api GET "/audit/$SEQ" "$B"
is "$status" 404 "…and not its ledger entries (404)"
api GET /audit "$B"
ok "its audit holds only its own entries" -- bash -c "echo '$out' | python3 -c 'import json,sys; sys.exit(0 if all(e[\"tenant\"]==\"acme\" for e in json.load(sys.stdin)) else 1)'"
api GET /principals "$B"
is "$(echo "$out" | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin)))')" "b" "…only its own principals"
api GET /tokens "$B"
ok "…and only its own tokens" -- bash -c "! echo '$out' | grep -q '$AID'"
api GET /whoami "$A"
is "$status" 200 "the first tenant's token survived the other's revoke attempt"
is "$(store_state)" "$STATE0" "nothing of the first tenant changed"
is "$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$LEDGER0" "…not one ledger entry"
is "$("$AL" project head p)" "$HEAD0" "…nor its head"
is "$("$AL" draft list p --json | python3 -c 'import json,sys; print(" ".join(d["state"] for d in json.load(sys.stdin)))')" "open empty" "…nor its drafts (the second run changed nothing: empty)"

# timing: another tenant's object costs what a missing one does (interleaved,
# medians; a gross difference would mean the other tenant's data was read.
# The tolerance holds on a loaded 2-core machine: within a factor of 2, or
# 5 ms apart; a leak through the data read would show far beyond either)
python3 - "$URL" "$B" <<'PY' > "$T/timing"
import http.client, statistics, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); tok = sys.argv[2]
c = http.client.HTTPConnection(u.hostname, u.port)
t = {"theirs": [], "missing": []}
for i in range(60):
    for k, path in (("theirs", "/api/projects/p/log"), ("missing", "/api/projects/zz/log")):
        s = time.perf_counter(); c.request("GET", path, headers={"Authorization": "Bearer " + tok})
        r = c.getresponse(); r.read(); t[k].append(time.perf_counter() - s)
a, b = statistics.median(t["theirs"]), statistics.median(t["missing"])
print("%.3f %.3f" % (a * 1000, b * 1000))
sys.exit(0 if abs(a - b) < 0.5 * max(a, b) + 0.005 else 1)
PY
is "$?" 0 "another tenant's project answers as fast as a missing one (medians ms: $(cat "$T/timing"))"

# ---- SIGTERM during a run --------------------------------------------------------
MARK="mark$$x$RANDOM"   # names this test's sandbox processes (other tests may run sleeps too)
api POST /projects/p/runs "$A" "{\"argv\":[\"sh\",\"-c\",\"echo partial > partial.txt; sleep 60; echo $MARK\"]}"
SLOW=$(echo "$out" | field id)
curl -s -o "$T/waited" -H "Authorization: Bearer $A" --data-binary "{\"argv\":[\"sh\",\"-c\",\"sleep 60; echo $MARK\"],\"wait\":true}" "$URL/api/projects/p/runs" &
CURL=$!
# (both runs' commands started before the SIGTERM: poll for them)
for i in $(seq 200); do [ "$(pgrep -fc "^sh -c .*$MARK")" = 2 ] && break; sleep 0.05; done
T0=$(date +%s.%N)
kill -TERM "$SERVE_PID"
wait "$SERVE_PID"; src=$?
T1=$(date +%s.%N)
SERVE_PID=
is "$src" 0 "SIGTERM: the daemon exits 0"
ok "…within the grace period plus the cancel, not the run's 60 s" -- python3 -c "import sys; sys.exit(0 if $T1 - $T0 < 10 else 1)"
like "$(cat "$T/serve.log")" "cancelling 2 runs still in flight" "…saying it cancelled the runs"
wait "$CURL"
is "$(field cancelled < "$T/waited")" True "a request waiting for a run gets its answer: the run, cancelled"
is "$("$AL" run show "$SLOW" --json | field cancelled)" True "the run is recorded, cancelled"
ok "no sandbox process is left" -- bash -c "! pgrep -f '[s]leep 60; echo $MARK' >/dev/null"
ok "fsck is clean" -- "$AL" fsck
ok "the ledger verifies" -- "$AL" audit verify
ok "no temporary file is left" -- bash -c "[ -z \"\$(ls -A '$AIRLOCK_HOME/tenants/default/tmp')\" ]"
done_testing
