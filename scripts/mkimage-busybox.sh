#!/bin/sh
# Build the default sandbox image's root filesystem from Debian's
# busybox-static: a shell, coreutils-like tools, nc and wget.
#   scripts/mkimage-busybox.sh OUTDIR
set -eu
out=$1
bb=/bin/busybox
[ -x "$bb" ] || { echo "mkimage-busybox: $bb missing (apt-get install busybox-static)" >&2; exit 1; }
rm -rf "$out.tmp"
mkdir -p "$out.tmp/bin" "$out.tmp/etc" "$out.tmp/root" "$out.tmp/tmp" "$out.tmp/workspace" \
	"$out.tmp/proc" "$out.tmp/dev" "$out.tmp/sys" "$out.tmp/run"
cp "$bb" "$out.tmp/bin/busybox"
chmod 0755 "$out.tmp/bin/busybox"
for applet in $("$bb" --list); do
	[ "$applet" = busybox ] || ln -s busybox "$out.tmp/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$out.tmp/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$out.tmp/etc/group"
printf 'airlock\n' > "$out.tmp/etc/hostname"
chmod 1777 "$out.tmp/tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
