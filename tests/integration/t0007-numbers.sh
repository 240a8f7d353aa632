#!/bin/bash
# Numbers on the command line (include/airlock/parse.h): one syntax for
# sizes, counts and durations in every command; a value past its maximum
# or past 64 bits is a usage error (exit 2) that changes nothing, never a
# wrapped value (serve --upload-max 17179869185G once meant 1 GiB).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
"$AL" project create p >/dev/null
"$AL" admin principal create au --role author >/dev/null
STATE0=$(store_state)
LEDGER0=$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')

refused() { # refused DESCRIPTION PATTERN -- COMMAND...
	local desc=$1 pat=$2; shift 2; [ "${1:-}" = "--" ] && shift
	run timeout 10 "$@"
	is "$rc" 2 "$desc: exit 2"
	like "$err" "$pat" "…saying why"
}
refused "serve --upload-max 17179869185G (2^64 + 1 GiB)" "bad --upload-max: '17179869185G' is too large" -- \
	"$AL" serve --listen 127.0.0.1:0 --upload-max 17179869185G
refused "serve --upload-max over its 1T cap" "too large" -- "$AL" serve --listen 127.0.0.1:0 --upload-max 1025G
refused "serve --body-max 18446744073709551616 (2^64)" "too large" -- "$AL" serve --listen 127.0.0.1:0 --body-max 18446744073709551616
refused "serve --grace -1" "bad --grace" -- "$AL" serve --listen 127.0.0.1:0 --grace -1
refused "serve --threads 1.5" "bad --threads" -- "$AL" serve --listen 127.0.0.1:0 --threads 1.5
refused "run --memory 17179869185G" "bad --memory" -- "$AL" run p --memory 17179869185G -- true
refused "run --disk-limit 16777216T" "bad --disk-limit" -- "$AL" run p --disk-limit 16777216T -- true
refused "run --timeout 1e400" "bad --timeout" -- "$AL" run p --timeout 1e400 -- true
refused "run --timeout 5x" "bad --timeout" -- "$AL" run p --timeout 5x -- true
refused "admin token create --ttl 200000d" "bad --ttl" -- "$AL" admin token create au --ttl 200000d
refused "gc --lower-budget 17179869185G" "bad --lower-budget" -- "$AL" gc --lower-budget 17179869185G
refused "admin policy set --max-memory 17179869185G" "bad --max-memory" -- "$AL" admin policy set --max-memory 17179869185G
is "$(store_state)" "$STATE0" "the refusals stored nothing"
is "$("$AL" audit --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$LEDGER0" "…and wrote no ledger entry"

# the forms each command took before still work, and durations take units
serve_start --upload-max 1T --body-max 64KiB --grace 1m --conn-timeout 30s --gc-interval 0
ok "serve takes 1T, 64KiB, 1m, 30s" -- test -n "$URL"
serve_stop
run "$AL" admin token create au --ttl 90
is "$rc" 0 "admin token create --ttl 90 (seconds)"
run "$AL" admin token create au --ttl 12h
is "$rc" 0 "…--ttl 12h"
run "$AL" admin policy set --max-memory 1.5G --max-timeout 2h --json
is "$rc" 0 "admin policy set --max-memory 1.5G --max-timeout 2h"
is "$(echo "$out" | field tenant.ceilings.memory):$(echo "$out" | field tenant.ceilings.timeout)" "1610612736:7200.0" "…as bytes and seconds"
done_testing
