#!/bin/bash
# Limits are policy (issue 11, item 2): a requester may only lower them,
# 0 is never "none", the tenant's admin sets defaults and ceilings within
# the operator's, runs in flight are bounded per tenant and per principal,
# and a limit this host cannot enforce refuses the run unless the operator
# accepted best effort; the record says which limits were enforced.
. "$(dirname "$0")/../lib.sh"
need_root
need_userns
"$AL" init >/dev/null
S="$T/src"; mkdir -p "$S"; echo one > "$S/a.txt"
"$AL" project create p --from "$S" >/dev/null
"$AL" admin principal create adm --role admin >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
"$AL" admin principal create ag2 --role agent --project p >/dev/null
tok() { "$AL" admin token create "$@" 2>/dev/null; }
ADM=$(tok adm); AG=$(tok ag); AG2=$(tok ag2)
serve_start
field_of() { printf '%s' "$1" | field "$2"; }
runs_of() { "$AL" runs p --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }

# ---- the attack of the issue: every limit off -----------------------------------
BEFORE=$(store_state); RUNS0=$(runs_of)
for f in memory pids timeout cpus disk_limit files output_limit; do
	api POST /projects/p/runs "$AG" "{\"argv\":[\"true\"],\"$f\":0,\"wait\":true}"
	is "$status" 422 "$f: 0 is refused (never 'none')"
	like "$out" "must be positive" "…saying why"
done
for kv in disk_limit:1e15 files:1e12 output_limit:1e15 memory:1e15 pids:1000000 timeout:1e6 cpus:4000; do
	f=${kv%%:*}; v=${kv#*:}
	api POST /projects/p/runs "$AG" "{\"argv\":[\"true\"],\"$f\":$v,\"wait\":true}"
	is "$status" 413 "$f $v: above the ceiling, refused"
	like "$out" "above the ceiling" "…naming the ceiling"
done
is "$(store_state)" "$BEFORE" "refused requests stored nothing"
is "$(runs_of)" "$RUNS0" "…and recorded no run"

# ---- a request that sets nothing gets the defaults, all enforced ------------------
api POST /projects/p/runs "$AG" '{"argv":["true"],"wait":true}'
is "$status" 200 "a run without limits runs"
is "$(field_of "$out" limits)" '{"cpus_milli": 1000, "disk": 1073741824, "egress_bytes": 1073741824, "egress_connections": 256, "files": 100000, "memory": 2147483648, "output": 16777216, "pids": 1024, "timeout_ms": 3600000}' "…with the policy's defaults, a CPU limit among them"
is "$(field_of "$out" enforced)" '{"cpus": true, "disk": true, "files": true, "memory": true, "output": true, "pids": true, "timeout": true}' "…every one enforced, and the record says so"
api POST /projects/p/runs "$AG" '{"argv":["sh","-c","cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo no-view"],"memory":67108864,"cpus":0.5,"wait":true}'
is "$status:$(field_of "$out" limits.memory):$(field_of "$out" limits.cpus_milli)" "200:67108864:500" "a request may lower its limits"

# ---- the tenant's admin: defaults and ceilings within the operator's -------------
api GET /policy "$AG"
is "$status" 200 "anyone may read the policy that applies to them"
is "$(field_of "$out" effective.ceilings.memory)" 17179869184 "…the built-in memory ceiling (16G)"
api PUT /policy "$AG" '{"ceilings":{"memory":1}}'
is "$status" 403 "an agent cannot change the policy"
api PUT /policy "$ADM" '{"ceilings":{"memory":1099511627776}}'
is "$status" 413 "the tenant's admin cannot raise a ceiling above the deployment's"
like "$out" "above the deployment's" "…saying so"
api PUT /policy "$ADM" '{"best_effort_limits":true}'
is "$status" 422 "…nor opt into best effort (the operator's)"
api PUT /policy "$ADM" '{"ceilings":{"memory":134217728},"defaults":{"memory":268435456}}'
is "$status" 413 "a default above its ceiling is refused"
api PUT /policy "$ADM" '{"ceilings":{"memory":134217728,"pids":64},"defaults":{"memory":67108864},"runs_per_principal":1}'
is "$status" 200 "the tenant's admin lowers ceilings"
is "$(field_of "$out" effective.ceilings.memory):$(field_of "$out" effective.defaults.memory)" "134217728:67108864" "…and the effective policy shows it"
like "$("$AL" audit --kind policy --json)" '"actor":"adm"' "the change is in the tenant's ledger, with its actor"
api POST /projects/p/runs "$AG" '{"argv":["true"],"memory":268435456,"wait":true}'
is "$status" 413 "a request above the tenant's ceiling is refused"
api POST /projects/p/runs "$AG" '{"argv":["true"],"wait":true}'
is "$(field_of "$out" limits.memory)" 67108864 "a run gets the tenant's default"
run "$AL" run p --memory 1G -- true
is "$rc" 8 "the local CLI is bound by the same policy (exit 8)"
like "$err" "memory 1G is above the ceiling 128M" "…naming the limit and the ceiling"
run "$AL" run p --pids 0 -- true
is "$rc" 2 "--pids 0 is a usage error"

# ---- runs in flight per principal (and per tenant) --------------------------------
api POST /projects/p/runs "$AG" '{"argv":["sleep","30"]}'
is "$status" 202 "a first run of the agent starts"
R1=$(field_of "$out" id)
api POST /projects/p/runs "$AG" '{"argv":["true"]}'
is "$status" 503 "a second while the first is in flight: refused (runs_per_principal 1)"
like "$out" "runs_per_principal" "…naming the policy"
api POST /projects/p/runs "$AG2" '{"argv":["true"],"wait":true}'
is "$status" 200 "another principal of the tenant still runs"
api PUT /policy "$ADM" '{"runs_per_tenant":1}'
api POST /projects/p/runs "$AG2" '{"argv":["true"]}'
is "$status" 503 "runs_per_tenant 1: the tenant's second run is refused"
like "$out" "runs_per_tenant" "…naming the policy"
api POST "/runs/$R1/cancel" "$AG"
for i in $(seq 100); do api GET "/runs/$R1" "$AG"; [ "$(field_of "$out" state)" = ended ] && break; sleep 0.1; done
api POST /projects/p/runs "$AG" '{"argv":["true"],"wait":true}'
is "$status" 200 "once it ended, the agent runs again"

# ---- the operator's change reaches the running daemon at once ---------------------
api POST /projects/p/runs "$AG" '{"argv":["true"],"pids":32,"wait":true}'
is "$status" 200 "a run within the ceilings runs (pids 32)"
"$AL" admin policy set --deployment --max-pids 16 >/dev/null
api POST /projects/p/runs "$AG" '{"argv":["true"],"pids":32,"wait":true}'
is "$status" 413 "the operator lowers a ceiling while the daemon runs: its next request above it is refused"
like "$out" "pids 32 is above the ceiling 16" "…naming the new ceiling"
api GET /policy "$AG"
is "$(field_of "$out" effective.ceilings.pids)" 16 "…and GET /api/policy shows it"
"$AL" admin policy set --deployment --max-pids 4096 >/dev/null
api POST /projects/p/runs "$AG" '{"argv":["true"],"pids":32,"wait":true}'
is "$status" 200 "raised again: the request runs"
serve_stop

# ---- a host that cannot enforce: refused, unless the operator accepts ------------
NB=$(mktemp -d /tmp/airlock-nobody.XXXXXX); chmod 755 "$NB"; mkdir "$NB/src"; echo hi > "$NB/src/a"
chown -R nobody "$NB"
NAL=$(nobody_airlock "$NB/build")
U() { (cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups env AIRLOCK_HOME="$NB/home" "$NAL" "$@"); }
U init >/dev/null; U project create q --from "$NB/src" >/dev/null
run U run q -- cat a
is "$rc" 6 "without a cgroup it may write (not root, nothing delegated), the run is refused"
like "$err" "cannot enforce the memory limit.*airlock doctor" "…naming the limit and pointing to airlock doctor"
is "$(U runs q --json | python3 -c 'import json,sys; print([r["outcome"] for r in json.load(sys.stdin)])')" "['failed: sandbox']" "…and the attempt is recorded as failed, with no draft"
run U admin policy set --best-effort-limits on
is "$rc" 6 "best effort is not a tenant's to choose"
U admin policy set --deployment --best-effort-limits on >/dev/null
run U run q --json -- cat a
is "$rc" 0 "with the operator's best effort it runs"
is "$(printf '%s' "$out" | field enforced)" '{"cpus": false, "disk": true, "files": true, "memory": false, "output": true, "pids": false, "timeout": true}' "…and its record says which limits were not enforced"
rm -rf "$NB"
done_testing
