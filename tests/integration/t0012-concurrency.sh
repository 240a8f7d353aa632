#!/bin/bash
# Many writers at once, as separate processes, on one volume: no lost
# update; each commit lands (rebased) or fails loudly.
. "$(dirname "$0")/../lib.sh"
"$AL" init >/dev/null
mkdir -p "$T/p" && echo seed > "$T/p/seed"
"$AL" project create shared --from "$T/p" >/dev/null
W=${WRITERS:-8}; K=${COMMITS:-8}

writer() { # writer I: K commits, each adding one file, on whatever head it read
	local i=$1 k base
	for k in $(seq 1 "$K"); do
		base=$("$AL" project head shared)
		rm -rf "$T/w$i"; "$AL" snapshot export "$base" "$T/w$i" >/dev/null
		echo "$i $k" > "$T/w$i/w$i-$k"
		if ! "$AL" commit shared "$T/w$i" --base "$base" --strategy rebase_if_disjoint -m "w$i $k" >/dev/null 2>"$T/err$i"; then
			echo "writer $i commit $k failed: $(cat "$T/err$i")" >>"$T/failures"
		fi
	done
}
for i in $(seq 1 "$W"); do writer "$i" & done
wait
is "$(cat "$T/failures" 2>/dev/null)" "" "no writer failed (disjoint paths always rebase)"
run "$AL" project log --json shared
commits=$(echo "$out" | grep -o '"seq":' | wc -l)
is "$commits" $((W * K + 1)) "every commit is in the log ($((W * K)) + the creation)"
rebased=$(echo "$out" | grep -o '"parent":"[^"]*"' | sort | uniq -d | wc -l)
is "$rebased" 0 "no two commits share a parent (the head moved one commit at a time)"
"$AL" snapshot export "$("$AL" project head shared)" "$T/final" >/dev/null
is "$(ls "$T/final" | grep -c '^w')" $((W * K)) "the final head holds every writer's every file: no lost update"
missing=0
for i in $(seq 1 "$W"); do for k in $(seq 1 "$K"); do
	[ "$(cat "$T/final/w$i-$k" 2>/dev/null)" = "$i $k" ] || missing=$((missing + 1))
done; done
is "$missing" 0 "  each with its content"

# the same with strict: each lands or gets a loud conflict, never a silent loss
"$AL" project create strictp --from "$T/p" >/dev/null
for i in $(seq 1 4); do (
	for k in 1 2 3 4; do
		base=$("$AL" project head strictp)
		rm -rf "$T/s$i"; "$AL" snapshot export "$base" "$T/s$i" >/dev/null; echo "$i" > "$T/s$i/s$i-$k"
		"$AL" commit strictp "$T/s$i" --base "$base" >/dev/null 2>&1; echo "$? s$i-$k" >>"$T/strict.rc"
	done ) & done
wait
ok_n=$(grep -c '^0 ' "$T/strict.rc"); conflict_n=$(grep -c '^5 ' "$T/strict.rc")
is "$((ok_n + conflict_n))" 16 "strict: every commit either landed (0) or conflicted (5)"
"$AL" snapshot export "$("$AL" project head strictp)" "$T/sfinal" >/dev/null
is "$(ls "$T/sfinal" | grep -c '^s[0-9]')" "$ok_n" "  and exactly the landed ones are in the head"
done_testing
