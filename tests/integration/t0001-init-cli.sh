#!/bin/bash
# The CLI's surface: init, help, exit codes, errors as JSON.
. "$(dirname "$0")/../lib.sh"

run "$AL" snapshot list
is "$rc" 3 "a command before init exits 3 (not found)"
like "$err" "no airlock home at .*run: airlock --home" "and says how to create the home"

run "$AL" init
is "$rc" 0 "init succeeds"
ok "init creates the multi-tenant layout" -- test -f "$AIRLOCK_HOME/airlock.db" -a -f "$AIRLOCK_HOME/tenants/default/objects.db" -a -d "$AIRLOCK_HOME/tenants/default/objects" -a -f "$AIRLOCK_HOME/tenants/default/meta.db"
run "$AL" init
is "$rc" 0 "init again is harmless"
is "$(stat -c %a "$AIRLOCK_HOME")" 700 "the home is private (0700)"

run "$AL" --help
is "$rc" 0 "--help exits 0"
like "$out" "snapshot" "--help lists the snapshot command"
for sub in import show export diff list; do
	run "$AL" snapshot "$sub" --help
	like "$rc:$out" "^0:usage: airlock snapshot $sub" "snapshot $sub --help"
done
run "$AL" fsck --help
like "$rc:$out" "^0:usage: airlock fsck" "fsck --help"

run "$AL" snapshot frobnicate
is "$rc" 2 "unknown subcommand is a usage error (2)"
run "$AL" snapshot show
is "$rc" 2 "missing argument is a usage error (2)"
run "$AL" snapshot show --bogus x
is "$rc" 2 "unknown option is a usage error (2)"
run "$AL" nonsense
is "$rc" 2 "unknown command is a usage error (2)"

run "$AL" snapshot show not-an-id
is "$rc" 6 "a malformed id is invalid input (6)"
like "$err" "not an object id" "and says so"

missing=sha256:$(printf '%064d' 0)
run "$AL" snapshot show "$missing"
is "$rc" 3 "an unknown snapshot is not found (3)"
run "$AL" snapshot show --json "$missing"
like "$out" '^\{"error":\{"code":"NotFound","message":"object sha256:0+ not found"\}\}$' "--json errors are a JSON object"

run "$AL" --tenant Bad/Name snapshot list
is "$rc" 6 "an invalid tenant name is refused"
run "$AL" --tenant other snapshot list
is "$rc" 3 "an unknown tenant is not found"

mkdir -p "$T/src" && echo hi > "$T/src/f"
run "$AL" snapshot import "$T/src"
like "$out" '^sha256:[0-9a-f]{64}$' "import prints exactly the id"
is "$err" "" "  and, off a terminal, nothing on stderr (progress is for terminals)"
id=$out
run "$AL" snapshot list --json
like "$out" "\"id\":\"$id\"" "snapshot list --json names it"
run "$AL" snapshot import --json "$T/src"
like "$out" '"files":1' "import --json reports counts"

run "$AL" snapshot import "$T/nope"
is "$rc" 3 "importing a missing directory is not found"
run "$AL" snapshot import "$T/src/f"
is "$rc" 6 "importing a file (not a directory) is invalid input"
done_testing
