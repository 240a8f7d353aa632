#!/bin/bash
# The vm backend by policy and over the API: the deployment and each tenant
# can make vm the default or the only backend allowed (a tenant's among the
# deployment's); a refused backend runs nothing; "backend" in the run
# request; the record and the ledger say which backend ran.
. "$(dirname "$0")/../lib.sh"
need_vm
"$AL" init >/dev/null
mkdir -p "$T/src"; echo one > "$T/src/a.txt"
"$AL" project create p --from "$T/src" >/dev/null

run "$AL" admin policy show --json
is "$(echo "$out" | field effective.backend) $(echo "$out" | field effective.backends)" 'ns ["ns", "vm"]' "built in: ns by default, ns and vm allowed"
run "$AL" admin policy set --deployment --backend vm --backends ns
is "$rc" 6 "a default backend that is not allowed is refused"
run "$AL" admin policy set --deployment --backends vm,xen
is "$rc" 6 "an unknown backend is refused"
run "$AL" admin policy set --deployment --backend vm --backends vm
is "$rc" 0 "the operator makes vm the default and the only backend"
like "$out" "sandbox backend: vm" "policy show says so"
run "$AL" admin policy set --backends ns
is "$rc" 8 "a tenant cannot allow a backend the deployment does not"
N0=$("$AL" run list p 2>/dev/null | grep -c . || true)
run "$AL" run p --backend ns -- sh -c 'echo ran > ran.txt'
is "$rc" 11 "a run asking for ns is refused (exit 11, Forbidden)"
like "$err" "does not allow the ns backend \(allowed: vm" "…naming what is allowed"
is "$("$AL" draft list p 2>/dev/null | grep -c ran.txt)" 0 "…and nothing ran"

run "$AL" run p --json -- sh -c 'uname -r > kernel.txt; cut -d. -f1 /proc/uptime'
is "$rc" 0 "a run naming no backend gets the policy's: vm"
is "$(echo "$out" | field backend)" vm "…its record says vm"
VMRUN=$(echo "$out" | field id)
is "$(echo "$out" | field pinned.cpus) $(echo "$out" | field pinned.time_namespace)" "1 True" "…pinned as a namespace run: its CPUs, a time namespace"
ok "…whose clock started at 1000 s, whatever the guest's uptime" -- test "$(echo "$out" | field stdout.text)" -ge 1000 -a "$(echo "$out" | field stdout.text)" -lt 1100
is "$(echo "$out" | field vm.accel)" "$("$AL" doctor --json | python3 -c 'import json,sys; print("kvm" if json.load(sys.stdin)["vm"]["checks"][2]["ok"] else "tcg")')" "…its record says KVM or TCG, as doctor does"
run "$AL" review "$(echo "$out" | field id)" --json
like "$out" "kernel.txt" "…its change is in its draft"
run "$AL" replay "$VMRUN" --json
is "$rc" 0 "a vm run replays identical"
is "$(echo "$out" | field backend)" vm "…on the vm backend, as it ran"
"$AL" admin policy set --deployment --backend ns --backends ns >/dev/null
run "$AL" replay "$VMRUN"
is "$rc" 21 "once the policy no longer allows vm, its replay is not replayable (exit 21)"
like "$out$err" "sandbox backend cannot be had now" "…saying why"
"$AL" admin policy set --deployment --backends ns,vm >/dev/null
"$AL" audit export "$T/ledger.txt" >/dev/null
ok "the run's ledger entry says which backend ran" -- grep -q '"backend":"vm"' "$T/ledger.txt"

# over the API: a tenant's admin narrows, an agent asks
"$AL" admin policy set --deployment --backend ns --backends ns,vm >/dev/null
"$AL" admin principal create adm --role admin >/dev/null
"$AL" admin principal create ag --role agent --project p >/dev/null
ADM=$("$AL" admin token create adm 2>/dev/null); AG=$("$AL" admin token create ag 2>/dev/null)
serve_start
api PUT /policy "$ADM" '{"backend": "vm", "backends": ["vm"]}'
is "$status" 200 "PUT /api/policy: the tenant's admin makes vm its only backend"
api GET /policy "$AG"
is "$(echo "$out" | field effective.backends)" '["vm"]' "GET /api/policy shows it"
api POST /projects/p/runs "$AG" '{"argv": ["true"], "backend": "ns", "wait": true}'
is "$status" 403 "a run request for ns: 403, before anything runs"
api POST /projects/p/runs "$AG" '{"argv": ["true"], "backend": "xen", "wait": true}'
is "$status" 422 "an unknown backend: 422"
api POST /projects/p/runs "$AG" '{"argv": ["sh", "-c", "echo api > api.txt"], "backend": "vm", "wait": true}'
is "$status" 200 "a run request with \"backend\": \"vm\""
is "$(echo "$out" | field backend) $(echo "$out" | field exit_code)" "vm 0" "…ran in a VM"
api PUT /policy "$ADM" '{"backends": ["ns", "vm"]}'
is "$status" 200 "the tenant's admin allows both again"
serve_stop
done_testing
