#!/bin/bash
# airlock benchmarks, side by side with the peer tool in the same run.
# Prints figures and ratios; never fails on time.
#   make bench                 100k-file workspace figures (+ synthetic 1M diff)
#   BENCH_1M=1 make bench      also the peak RSS of importing a 1M-entry tree from disk
#   BENCH_DIR=/path            where trees and homes go (default bench/out)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/lib.sh"
B=${AIRLOCK_BUILD:-$root/build}
AL="$B/airlock"
OUT=${BENCH_DIR:-$root/bench/out}
mkdir -p "$OUT"
TREE="$OUT/tree"
med5() { for _ in 1 2 3 4 5; do time_ms "$@"; done | median; }
rows=()
row() { rows+=("$(printf '%-46s %12s %12s %8s   %s' "$@")"); }

echo "== workspace: $TREE" >&2
if [ ! -f "$OUT/tree.complete" ]; then
	rm -rf "$TREE"; "$B/bench/gentree" "$TREE" 100000 100; touch "$OUT/tree.complete"
fi
echo "   $(find "$TREE" -type f | wc -l) files, $(du -sh "$TREE" | cut -f1)" >&2
find "$TREE" -type f -exec cat {} + >/dev/null   # warm the page cache for both tools

echo "== import vs git init && git add -A" >&2
rm -rf "$OUT/git" "$OUT/home"
G="git --git-dir=$OUT/git --work-tree=$TREE"
s=$(date +%s%N); $G init -q; $G add -A; git_add=$(ms "$s")
"$AL" --home "$OUT/home" init >/dev/null
s=$(date +%s%N)
/usr/bin/time -f %M -o "$OUT/rss" "$AL" --home "$OUT/home" snapshot import "$TREE" >"$OUT/id1"
al_import=$(ms "$s"); rss_import=$(cat "$OUT/rss")
row "import 100k files / 1 GiB (ms)" "$al_import" "$git_add" "$(ratio "$al_import" "$git_add")" "<= 0.25 x git add"

echo "== re-import of the unchanged tree vs git status" >&2
sleep 1.1; "$AL" --home "$OUT/home" snapshot import "$TREE" >/dev/null   # files now older than the cache
$G status --porcelain >/dev/null; $G status --porcelain >/dev/null
al_re=$(med5 "$AL" --home "$OUT/home" snapshot import "$TREE")
git_st=$(med5 $G status --porcelain)
row "re-import unchanged (ms, median of 5)" "$al_re" "$git_st" "$(ratio "$al_re" "$git_st")" "<= 1.0 x git status"

echo "== diff of two snapshots differing in 10 files" >&2
t1=$($G write-tree)
files=$(cd "$TREE" && find dept* -name '*.csv' | sort | awk 'NR % 9973 == 1' | head -10)
for f in $files; do cp "$TREE/$f" "$OUT/save.$(echo "$f" | tr / _)"; echo "edited" >> "$TREE/$f"; done
id1=$(cat "$OUT/id1"); id2=$("$AL" --home "$OUT/home" snapshot import "$TREE")
$G add -A; t2=$($G write-tree)
for f in $files; do cp -p "$OUT/save.$(echo "$f" | tr / _)" "$TREE/$f"; done
rm -f "$OUT"/save.*
n=$("$AL" --home "$OUT/home" snapshot diff "$id1" "$id2" | wc -l)
al_diff=$(med5 "$AL" --home "$OUT/home" snapshot diff "$id1" "$id2")
git_diff=$(med5 git --git-dir="$OUT/git" diff-tree -r "$t1" "$t2")
row "diff, 10 changes in 100k (ms, CLI, $n lines)" "$al_diff" "$git_diff" "$(ratio "$al_diff" "$git_diff")" "< 5 ms"

echo "== diff at 1M entries (synthetic tree through the real store)" >&2
rm -rf "$OUT/home1m"
read -r a b build first med max changes < <("$B/bench/diff1m" "$OUT/home1m" 1000000)
row "diff, 10 changes in 1M (ms, in-process median)" "$med" "-" "-" "< 5 ms (first $first, max $max)"
cli1m=$(med5 "$AL" --home "$OUT/home1m" snapshot diff "$a" "$b")
row "diff, 10 changes in 1M (ms, whole CLI)" "$cli1m" "-" "-" "$changes changes"

echo "== sha256 throughput of a 1 GiB file vs openssl speed" >&2
[ -f "$OUT/1g.bin" ] || head -c 1073741824 /dev/urandom >"$OUT/1g.bin"
cat "$OUT/1g.bin" >/dev/null
al_hash=$("$B/bench/hash" "$OUT/1g.bin")
ossl=$(openssl speed -evp sha256 -bytes 1048576 -seconds 3 2>/dev/null | awk '/^sha256/ {sub("k","",$2); printf "%.0f", $2 * 1000 / 1e6}')
row "sha256 of 1 GiB (MB/s)" "$al_hash" "$ossl" "$(ratio "$al_hash" "$ossl")" ">= 0.80 x openssl speed"

echo "== volume layer (synthetic trees through the real store)" >&2
rm -rf "$OUT/homevol"
"$B/bench/volume" "$OUT/homevol" 1000000 8 50 >"$OUT/volume.txt"
v() { awk -v k="$1" '$1 == k {print $2}' "$OUT/volume.txt"; }
row "commit 10 changed files on 1M (ms, head==base)" "$(v commit_10_of_1000000_ms)" "-" "-" "< 5 ms"
row "diff of those 10 changes on 1M (ms)" "$(v diff_10_of_1000000_ms)" "-" "-" "< 5 ms"
row "commit 10 files on 1M, rebased (ms)" "$(v rebase_commit_10_of_1000000_ms)" "-" "-" "< 5 ms"
row "a process's first commit, 1 file (ms, median of 11)" "$(v first_commit_of_a_process_ms)" "-" "-" "what the group commit's queue costs a commit alone"
row "accept_selected 10 of 1,000 changes, 100k (ms)" "$(v accept_selected_10_of_1000_changes_100k_ms)" "-" "-" "< 50 ms"
row "accept 10 of 1,000 hunks, 100,000-line file (ms)" "$(v accept_10_of_1000_hunks_100000_line_file_ms)" "$(v review_100000_line_file_1000_hunks_ms)" "$(ratio "$(v accept_10_of_1000_hunks_100000_line_file_ms)" "$(v review_100000_line_file_1000_hunks_ms)")" "peer: its review (the same diff)"
row "merge_lines, 1,000 hunks onto 10, 100,000 lines (ms)" "$(v merge_lines_1000_hunks_onto_10_100000_line_file_ms)" "-" "-" "git_merge_file of 5 MB"
w=$(awk '$1 == "writers" {print $6}' "$OUT/volume.txt")
pw=$(awk '$1 == "sqlite_writers" {print $6}' "$OUT/volume.txt")
wr=$(awk '$1 == "writers_ratio" {print $2}' "$OUT/volume.txt")
row "8 writers, disjoint, rebase_if_disjoint (commits/s)" "$w" "$pw" "$wr" ">= 0.5x bare SQLite WAL FULL inserts, 8 processes (medians of 3 rounds, each beside its peer; $(awk '$1 == "writers_ratio" {print $7, $8, $9, $10}' "$OUT/volume.txt"); $(grep -o '[0-9]* of [0-9]* files in head' "$OUT/volume.txt"); CPU $(awk '$1 == "writers_cpu_per_commit_ms" {print $2 " ms a commit against the peer'"'"'s " $9}' "$OUT/volume.txt") ms a transaction"

echo "== commit of 10 changed files in the 100k tree: CLI vs git" >&2
rm -rf "$OUT/homec"; "$AL" --home "$OUT/homec" init >/dev/null
hc=$("$AL" --home "$OUT/homec" project create t --from "$TREE")
sleep 1.1; "$AL" --home "$OUT/homec" snapshot import "$TREE" >/dev/null   # warm the stat cache
for f in $files; do cp "$TREE/$f" "$OUT/save.$(echo "$f" | tr / _)"; echo "edited again" >> "$TREE/$f"; done
s=$(date +%s%N); "$AL" --home "$OUT/homec" commit t "$TREE" --base "$hc" >/dev/null; al_commit=$(ms "$s")
s=$(date +%s%N); (cd "$TREE" && $G add $files && $G -c user.name=bench -c user.email=bench@localhost commit -q -m ten); git_commit=$(ms "$s")
for f in $files; do cp -p "$OUT/save.$(echo "$f" | tr / _)" "$TREE/$f"; done; rm -f "$OUT"/save.*
row "commit 10 changed files, 100k tree, CLI (ms)" "$al_commit" "$git_commit" "$(ratio "$al_commit" "$git_commit")" "git add + git commit"

echo "== audit ledger" >&2
rm -rf "$OUT/homeledger"
"$B/bench/ledger" "$OUT/homeledger" 100000 >"$OUT/ledger.txt"
l() { awk -v k="$1" '$1 == k {print $2}' "$OUT/ledger.txt"; }
row "ledger appends/s, batched (1000 per checkpoint)" "$(l appends_batched_per_s)" "-" "-" ">= 5000/s"
row "ledger appends/s, one per transaction" "$(l appends_single_per_s)" "-" "-" "reported"
row "ledger verify from export (entries/s)" "$(l verify_entries_per_s)" "-" "-" ">= 100000/s"
row "proof hashes at n=100k (inclusion, consistency)" "$(awk '$1 == "proof_hashes" {print $3 "," $5}' "$OUT/ledger.txt")" "-" "-" "O(log n), log2 n = 17"

row "peak RSS, import of 100k tree (KiB)" "$rss_import" "-" "-" "streams"

if [ "$(id -u)" = 0 ] && command -v bwrap >/dev/null; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/sandbox.sh" "$TREE" "$OUT")
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/contract.sh" "$OUT")
	# the microVM backend, where QEMU and the guest are there (issue 17)
	if [ -x "${AIRLOCK_QEMU:-/usr/bin/qemu-system-x86_64}" ] && [ -r "$B/guest/vmlinux" ]; then
		while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/vm.sh" "$OUT")
		command -v curl >/dev/null &&
			while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/vmrelay.sh" "$OUT")
	fi
else
	echo "== sandbox figures skipped (need root and bwrap)" >&2
fi
if unshare -U true 2>/dev/null; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/replay.sh" "$OUT")
else
	echo "== replay figures skipped (need user namespaces)" >&2
fi
if unshare -U true 2>/dev/null && command -v curl >/dev/null; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/egress.sh" "$OUT")
else
	echo "== egress figures skipped (need user namespaces and curl)" >&2
fi
if command -v wrk >/dev/null && unshare -U true 2>/dev/null; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/api.sh" "$OUT")
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/output.sh" "$OUT")
	if [ -x /usr/bin/chromium ] && [ -f "$root/web/node_modules/playwright-core/package.json" ]; then
		while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/web.sh" "$OUT")
	else
		echo "== web UI figures skipped (need Debian's chromium and web/node_modules: make)" >&2
	fi
else
	echo "== daemon figures skipped (need wrk and user namespaces)" >&2
fi
# objects on S3 (issue 19), where Debian's Swift is installed (scripts/deps.sh)
if command -v swift-proxy-server >/dev/null && command -v memcached >/dev/null; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/s3.sh" "$OUT")
else
	echo "== S3 figures skipped (need OpenStack Swift and memcached: scripts/deps.sh)" >&2
fi
# metadata on PostgreSQL against SQLite (issue 19), where Debian's PostgreSQL is
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	while IFS= read -r line; do rows+=("$line"); done < <(AIRLOCK_BUILD="$B" "$root/bench/postgres.sh" "$OUT")
else
	echo "== PostgreSQL figures skipped (need PostgreSQL: scripts/deps.sh)" >&2
fi
if [ "${BENCH_1M:-0}" = 1 ]; then
	echo "== peak RSS importing a 1M-entry tree from disk" >&2
	if [ ! -f "$OUT/tree1m.complete" ]; then
		rm -rf "$OUT/tree1m"; TINY=1 "$B/bench/gentree" "$OUT/tree1m" 1000000 0; touch "$OUT/tree1m.complete"
	fi
	rm -rf "$OUT/home1mdisk"; "$AL" --home "$OUT/home1mdisk" init >/dev/null
	s=$(date +%s%N)
	/usr/bin/time -f %M -o "$OUT/rss1m" "$AL" --home "$OUT/home1mdisk" snapshot import "$OUT/tree1m" >/dev/null
	t1m=$(ms "$s")
	row "peak RSS, import of 1M-entry tree (KiB)" "$(cat "$OUT/rss1m")" "-" "-" "< 262144 KiB (took $t1m ms)"
fi

echo
printf '%-46s %12s %12s %8s   %s\n' "figure" "airlock" "peer" "ratio" "target"
printf '%s\n' "${rows[@]}"
