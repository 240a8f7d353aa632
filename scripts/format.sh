#!/bin/sh
# Format the C sources with .clang-format (clang-format 14, Debian 12's):
#   scripts/format.sh          rewrite them in place
#   scripts/format.sh --check  list the files that differ and exit 1 (make check)
set -eu
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files '*.c' '*.h' '*.cc')
else
	files=$(find src include tests fuzz bench tools -name '*.[ch]' -o -name '*.cc')
fi
if [ "${1:-}" = "--check" ]; then
	bad=""
	for f in $files; do
		clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
	done
	if [ -n "$bad" ]; then
		echo "format: not as .clang-format says (run scripts/format.sh):$bad" >&2
		exit 1
	fi
	echo "format: ok"
else
	# shellcheck disable=SC2086
	clang-format -i $files
fi
