#!/bin/bash
# review --side-by-side (width-aware, cut lines marked), audit show for
# people (--json as before).
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
export AIRLOCK_AUTHOR=alice NO_COLOR=1
P="$T/p"; mkdir -p "$P"; printf 'one\ntwo\nthree\n' > "$P/f"
"$AL" project create p --from "$P" >/dev/null
printf 'one\nTWO\nthree\nfour is a rather long line that a narrow terminal has to cut somewhere\n' > "$P/f"
D=$("$AL" draft create p --from "$P")

run env COLUMNS=80 "$AL" review "$D" --side-by-side
is "$rc" 0 "review --side-by-side"
like "$out" "@@ -1,3 \+1,4 @@" "  the hunk header"
like "$out" "    1 one +     1 one" "  a context line on both sides"
like "$out" "    2 two +\|     2 TWO" "  a changed line: old | new"
like "$out" "      +>     4 four is a rather long line" "  an added line: nothing on the left, >"
ok "  no line wider than COLUMNS=80" -- sh -c '! printf "%s\n" "$1" | grep -q ".\{81,\}"' sh "$out"
ok "  the unified diff is not printed" -- sh -c '! printf "%s\n" "$1" | grep -q "^+TWO"' sh "$out"
run env COLUMNS=50 "$AL" review "$D" --side-by-side
like "$out" "    1 one +     1 one" "COLUMNS=50: narrower"
like "$out" "    2 two +\|     2 TWO" "  still old | new"
run env COLUMNS=50 "$AL" --color=always review "$D" --side-by-side
like "$out" "$(printf '\033')\[31mtwo" "  coloured when asked: the old side red"
like "$out" "$(printf '\033')\[32mTWO" "  the new side green"
run "$AL" review "$D" --side-by-side --json
is "$(printf %s "$out" | head -c 10)" '{"draft":"' "--side-by-side with --json: the JSON as always"
printf 'bin\0' > "$P/b"; D2=$("$AL" draft create p --from "$P")
run "$AL" review "$D2" --side-by-side
like "$out" "binary: 0 bytes - -> 4 bytes sha256:" "  a binary file: sizes, no columns"

# audit show
"$AL" apply "$D" --accept-all >/dev/null 2>&1
SEQ=$("$AL" audit --kind apply --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["seq"])')
run "$AL" audit show "$SEQ"
is "$rc" 0 "audit show"
like "$out" "^entry     $SEQ apply by alice, 20[0-9-]{8} [0-9:]{5} UTC, less than a minute ago" "  who did what, when, for people"
like "$out" "
project   p" "  the project"
like "$out" "
data      base +sha256:[0-9a-f]{64}" "  the data, a key a line"
like "$out" "
          mode +accept_all" "  (the apply's mode)"
like "$out" "
delta     \+0 ~1 -0
          M f" "  the delta and its paths"
like "$out" "
proof     included in the checkpoint of size [0-9]+ \(root [0-9a-f]{12}…, [0-9]+ hashes\)" "  the proof's verdict"
ok "  not the JSON document" -- sh -c '! printf "%s\n" "$1" | grep -q "^{"' sh "$out"
run "$AL" audit show "$SEQ" --json
like "$out" '^\{"entry":\{' "audit show --json: the raw answer"
like "$out" '"inclusion_proof":\[' "  with the proof"
"$AL" run p -- sh -c 'echo hello; echo oops >&2' >/dev/null 2>&1
RSEQ=$("$AL" audit --kind run --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["seq"])')
run "$AL" audit show "$RSEQ"
like "$out" "
--- stdout \(6 bytes\)
hello" "a run's entry: its stdout"
like "$out" "
--- stderr \(5 bytes\)
oops" "  and stderr"
like "$out" "
          argv +\[\"sh\",\"-c\",\"echo hello; echo oops >&2\"\]" "  its argv on one line"
run "$AL" audit show nope
is "$rc" 2 "audit show with a bad entry: usage error"
done_testing
