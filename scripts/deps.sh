#!/bin/sh
# Install (or check for) every Debian package the build, tests and benchmarks
# need. Idempotent and quiet when everything is present.
#   scripts/deps.sh          install what is missing (needs root or sudo)
#   scripts/deps.sh --check  only report; exit 1 and print the apt-get command
set -eu

PKGS="build-essential pkg-config libssl-dev libzstd-dev libsqlite3-dev
libjansson-dev libcmocka-dev libarchive-dev zstd perl git time clang python3 openssl libgit2-dev
busybox-static musl-tools cpio qemu-system-x86 linux-image-cloud-amd64 bubblewrap libseccomp-dev libcap-dev util-linux sqlite3 clang-format
libmicrohttpd-dev libcurl4-openssl-dev curl wrk libvalijson-dev nlohmann-json3-dev nodejs npm
chromium scdoc bash-completion zsh man-db
swift swift-proxy swift-account swift-container swift-object memcached libpq-dev postgresql"

missing=""
for p in $PKGS; do
	# npm: Debian's, or the one another build of nodejs bundles (NodeSource's
	# nodejs provides npm and conflicts with Debian's package)
	[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "${1:-}" = "--check" ]; then
	echo "airlock: missing Debian packages:$missing" >&2
	echo "run: sudo apt-get install -y$missing   (or: scripts/deps.sh)" >&2
	exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
		echo "airlock: need root to install:$missing" >&2; exit 1
	fi
fi
echo "airlock: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
