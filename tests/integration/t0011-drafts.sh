#!/bin/bash
# Drafts: forked from the head, independent, applied (all, selected) or
# rejected exactly once; the live head moves only on apply.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P/docs" "$P/data"
echo a > "$P/a.txt"; echo r > "$P/docs/readme"; echo 1 > "$P/data/one.csv"
H0=$("$AL" project create fin --from "$P")
draft_from() { rm -rf "$T/w"; cp -a "$P" "$T/w"; (cd "$T/w" && eval "$1"); "$AL" draft create fin --from "$T/w"; }
head() { "$AL" project head fin; }
files() { "$AL" snapshot show "$(head)" | awk '{print $5}' | tr '\n' ' '; }

D1=$(draft_from 'echo A >> a.txt; rm docs/readme; mkdir -p data/new; echo n > data/new/n.csv; echo 2 > data/two.csv')
like "$D1" '^d[0-9a-f]{13}$' "draft create prints a draft id"
is "$(head)" "$H0" "creating a draft does not move the live head"
D2=$(draft_from 'echo B > b.txt')
ok "a second draft is independent" -- test "$D1" != "$D2"
run "$AL" draft list fin
like "$out" "$D1 open base $H0" "draft list shows the first draft open on its base"
like "$out" "$D2 open" "  and the second"
run "$AL" draft list --json fin
like "$out" "\"id\":\"$D1\",\"state\":\"open\"" "draft list --json"

# accept_selected: a file, a directory (with the new dir it needs), a bad path
run "$AL" apply "$D1" --accept no/such/path
is "$rc" 6 "accepting a path the draft does not change is refused (6)"
like "$err" "no/such/path is not changed by draft $D1" "  and says so"
is "$(head)" "$H0" "  nothing moved"
run "$AL" apply "$D1" --accept ../etc
is "$rc" 6 "a hostile path is refused"
run "$AL" apply "$D1" --accept data/new a.txt
is "$rc" 0 "accept_selected of a directory and a file"
H1=$(head)
is "$(files)" "a.txt data data/new data/new/n.csv data/one.csv docs docs/readme " \
	"only the selected changes landed (data/new with its file, a.txt), not data/two.csv or the deletion"
run "$AL" apply "$D1" --accept-all
is "$rc" 9 "an applied draft cannot be applied again (9)"
like "$err" "draft $D1 was already partially_applied" "  and says so (it left data/two.csv and the deletion)"
is "$(head)" "$H1" "  the head did not move"

# the second draft still applies (its base is H0; rebase on H1)
run "$AL" apply "$D2" --accept-all
is "$rc" 0 "the second draft applies after the first (rebase_if_disjoint by default)"
like "$(files)" "a.txt b.txt data" "  both drafts' changes are in the head"
run "$AL" draft list fin
like "$out" "$D2 applied" "draft list shows it applied"

# reject_all
D3=$(draft_from 'echo bad > a.txt')
H2=$(head)
run "$AL" apply "$D3" --reject-all
is "$rc:$(head)" "0:$H2" "reject_all applies nothing"
run "$AL" apply "$D3" --accept-all
is "$rc" 9 "a rejected draft cannot be applied"
like "$("$AL" draft list fin)" "$D3 rejected" "  it is listed as rejected"

# two drafts on the same path: the second one conflicts, loudly
D4=$(draft_from 'echo four > a.txt'); D5=$(draft_from 'echo five > a.txt')
"$AL" apply "$D4" --accept-all >/dev/null
H3=$(head)
run "$AL" apply "$D5" --accept-all
is "$rc" 5 "a second draft touching the same path conflicts (5)"
is "$(head)" "$H3" "  and changes nothing"
like "$("$AL" draft list fin)" "$D5 open" "  the draft stays open"
run "$AL" apply "$D5" --accept-all --strategy conflict_copy
is "$rc" 0 "  it can then be applied with conflict_copy"
like "$(files)" "a.conflict-[0-9a-f]{8}.txt a.txt" "  its version lands beside ours"

# either order gives the same content for disjoint drafts
for order in "x y" "y x"; do
	"$AL" project create "o${order// /}" --from "$P" >/dev/null
	rm -rf "$T/w"; cp -a "$P" "$T/w"; echo X > "$T/w/x"; dx=$("$AL" draft create "o${order// /}" --from "$T/w")
	rm -rf "$T/w"; cp -a "$P" "$T/w"; echo Y > "$T/w/y"; dy=$("$AL" draft create "o${order// /}" --from "$T/w")
	for d in $order; do v="d$d"; "$AL" apply "${!v}" --accept-all >/dev/null; done
done
is "$("$AL" project head oxy)" "$("$AL" project head oyx)" "two disjoint drafts give the same head in either order"

# usage
run "$AL" apply "$D4"
is "$rc" 2 "apply needs a mode"
run "$AL" apply "$D4" --accept-all --reject-all
is "$rc" 2 "apply takes exactly one mode"
run "$AL" apply d0000000000000 --accept-all
is "$rc" 3 "an unknown draft is not found"
run "$AL" apply dnope --accept-all
is "$rc" 6 "a malformed draft id is invalid input"
run "$AL" project log fin
like "$out" "apply rebase_if_disjoint .* draft $D1" "the log records applies with their draft"
run "$AL" fsck
is "$rc" 0 "fsck is clean"
done_testing
