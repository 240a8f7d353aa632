#!/bin/bash
# Secrets (issue 11, item 8): the record keeps a keyed digest (HMAC-SHA256
# under a deployment key that is never exported), and what a run prints of
# a secret (its value, base64 and URL-encoded forms) is stored and shown as
# ***: through the CLI, the API (waited, live and stored output) and the
# ledger's export.
. "$(dirname "$0")/../lib.sh"
need_root
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
AG=$("$AL" admin token create ag 2>/dev/null)
SHORT=1234
LONG="s3cr3t/value+with spaces-$$"
B64=$(printf '%s' "$LONG" | base64 -w0 | tr -d '=')
URLE=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="-._~"))' "$LONG")
PRINT='echo "env=$SHORT"; echo "long=$LONG"; printf "%s" "$LONG" | base64 -w0; echo; echo "url=$(cat /run/airlock/secrets/URLE)";
printf "split=%s" "$(printf "%s" "$LONG" | cut -c1-5)"; sleep 0.2; printf "%s\n" "$(printf "%s" "$LONG" | cut -c6-)"; echo "file=$(cat /run/airlock/secrets/LONGF)"; echo plain-end'

# ---- digests ------------------------------------------------------------------
"$AL" run p --json --secret SHORT="$SHORT" -- true > "$T/r1.json"
"$AL" run p --json --secret SHORT="$SHORT" -- true > "$T/r2.json"
"$AL" run p --json --secret SHORT=9999 -- true > "$T/r3.json"
h() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["secrets"][0].get("hmac",""))' "$1"; }
like "$(h "$T/r1.json")" "^hmac-sha256:[0-9a-f]{64}$" "a secret's digest is an HMAC-SHA256"
is "$(h "$T/r1.json")" "$(h "$T/r2.json")" "…the same value gives the same digest (a replay can prove it)"
ok "…another value another one" -- test "$(h "$T/r1.json")" != "$(h "$T/r3.json")"
PLAIN=$(printf '%s' "$SHORT" | sha256sum | cut -c1-64)
ok "…and it is not the value's plain sha256 (brute-forceable for '1234')" -- sh -c "! grep -q $PLAIN '$T/r1.json'"
is "$(stat -c %a "$AIRLOCK_HOME/secrets.key")" 600 "the key is the deployment's, mode 0600"
"$AL" audit export "$T/ledger.export" >/dev/null 2>&1
ok "the plain digest is nowhere in the ledger's export" -- sh -c "! grep -q $PLAIN '$T/ledger.export'"
KEYHEX=$(od -An -tx1 "$AIRLOCK_HOME/secrets.key" | tr -d ' \n')
ok "…nor the key" -- sh -c "! grep -qi $KEYHEX '$T/ledger.export'"

# ---- masking, local CLI ---------------------------------------------------------
run "$AL" run p --secret SHORT="$SHORT" --secret LONG="$LONG" --secret-file URLE="$URLE" --secret-file LONGF="$LONG" -- sh -c "$PRINT"
is "$out" "env=***
long=***
***
url=***
split=***
file=***
plain-end" "the CLI's live output masks the value, its base64 and URL forms, across reads, from a variable and a file"
RUN=$(printf '%s' "$err" | sed -n 's/^run \(r[0-9a-f]*\):.*/\1/p' | tail -1)
run "$AL" run show "$RUN" --json
ok "the stored output holds none of them" -- sh -c "! printf '%s' \"\$1\" | grep -qF -e '$LONG' -e '$B64' -e '$URLE' -e 'env=$SHORT'" _ "$out"
like "$out" 'long=\*\*\*' "…but ***"
"$AL" audit export "$T/ledger2.export" >/dev/null 2>&1
ok "the ledger's export holds none of them" -- sh -c "! grep -qF -e '$LONG' -e '$B64' -e '$URLE' '$T/ledger2.export'"

# ---- masking, the API: waited, live and stored output ----------------------------
serve_start
BODY=$(python3 -c 'import json,sys; print(json.dumps({"argv":["sh","-c",sys.argv[1]],"secrets":[{"name":"SHORT","value":sys.argv[2]},{"name":"LONG","value":sys.argv[3]},{"name":"URLE","value":sys.argv[4],"as":"file"},{"name":"LONGF","value":sys.argv[3],"as":"file"}],"wait":True}))' "$PRINT" "$SHORT" "$LONG" "$URLE")
api POST /projects/p/runs "$AG" "$BODY"
is "$status" 200 "a run with secrets over the API"
is "$(printf '%s' "$out" | field stdout.text)" "env=***
long=***
***
url=***
split=***
file=***
plain-end" "…its output in the answer is masked"
RID=$(printf '%s' "$out" | field id)
api GET "/runs/$RID/output?stream=stdout" "$AG"
ok "…and the stored output read back holds no secret" -- sh -c "! printf '%s' \"\$1\" | grep -qF -e '$LONG' -e '$B64' -e '$URLE'" _ "$out"
export AIRLOCK_URL=$URL AIRLOCK_TOKEN=$AG
run env LONG="$LONG" "$AL" --server "$URL" run p --secret LONG -- sh -c 'sleep 0.3; echo "live=$LONG"; sleep 0.3; echo done'
like "$out" "live=\*\*\*" "the live output followed over the API is masked"
unset AIRLOCK_URL AIRLOCK_TOKEN
serve_stop
ok "the daemon's log holds no secret" -- sh -c "! grep -qF -e '$LONG' -e '$B64' '$T/serve.log'"
done_testing
