#!/bin/sh
# Build the microVM backend's guest (docs/architecture.md, "Sandbox
# (microVM backend)") from Debian's packages, nothing downloaded:
#   OUTDIR/vmlinux         the kernel as an ELF, extracted from Debian's
#                          bzImage (QEMU's microvm boots it directly)
#   OUTDIR/initramfs.cpio  the guest agent as /init, busybox (tar, for the
#                          input streams) and the modules the guest needs
#   OUTDIR/kernel          the kernel's version
#   scripts/mkguest.sh OUTDIR AGENT VMLINUX_EXTRACT
# The kernel is linux-image-cloud-amd64's (scripts/deps.sh): the newest
# /boot/vmlinuz-*-cloud-amd64, else the newest /boot/vmlinuz-*, whose
# /lib/modules directory is present.
set -eu
out=$1 agent=$2 extract=$3
ver=""
for k in $(ls -1 /boot/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V) $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V); do
	v=${k#/boot/vmlinuz-}
	[ -d "/lib/modules/$v/kernel" ] && { [ -n "$ver" ] && case $ver in *cloud*) continue ;; esac; ver=$v; }
done
[ -n "$ver" ] || { echo "mkguest: no kernel with modules in /boot (apt-get install linux-image-cloud-amd64)" >&2; exit 1; }
bb=/bin/busybox
[ -x "$bb" ] || { echo "mkguest: $bb missing (apt-get install busybox-static)" >&2; exit 1; }
mods=/lib/modules/$ver/kernel
# the order matters: each needs the ones before it (modules.dep)
order="drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_mmio
drivers/block/virtio_blk drivers/char/virtio_console fs/overlayfs/overlay"
rm -rf "$out.tmp"
mkdir -p "$out.tmp/root/bin" "$out.tmp/root/lib/modules" "$out.tmp/root/dev" \
	"$out.tmp/root/proc" "$out.tmp/root/sys" "$out.tmp/root/run"
cp "$agent" "$out.tmp/root/init"
cp "$bb" "$out.tmp/root/bin/busybox"
chmod 0755 "$out.tmp/root/init" "$out.tmp/root/bin/busybox"
: > "$out.tmp/root/lib/modules/order"
for m in $order; do
	f=$mods/$m.ko
	for c in "$f" "$f.xz" "$f.zst"; do [ -f "$c" ] && break; done
	case $c in
	*.ko) cp "$c" "$out.tmp/root/lib/modules/" ;;
	*.xz) xz -dc "$c" > "$out.tmp/root/lib/modules/$(basename "$m").ko" ;;
	*.zst) zstd -qdc "$c" > "$out.tmp/root/lib/modules/$(basename "$m").ko" ;;
	*) echo "mkguest: module $m missing in $mods" >&2; exit 1 ;;
	esac
	basename "$m" >> "$out.tmp/root/lib/modules/order"
done
# Without their appended signatures: the guest's kernel checks each one
# (RSA under TCG: ~200 ms for the six), and an unsigned module loads all the
# same (CONFIG_MODULE_SIG without _FORCE); these come from the host's own
# package, which is what was verified.  The trailer: the signature, a
# 12-byte struct module_signature (sig_len big-endian in its last 4), the
# 28-byte magic.
for f in "$out.tmp/root/lib/modules/"*.ko; do
	size=$(stat -c %s "$f")
	[ "$(tail -c 28 "$f")" = "~Module signature appended~" ] || continue
	siglen=$(tail -c 32 "$f" | head -c 4 | od -An -tu1 | awk '{print $1*16777216 + $2*65536 + $3*256 + $4}')
	head -c $((size - 28 - 12 - siglen)) "$f" > "$f.tmp" && mv "$f.tmp" "$f"
done
# uncompressed: the guest would spend longer decompressing it than reading it
(cd "$out.tmp/root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) > "$out.tmp/initramfs.cpio"
"$extract" "/boot/vmlinuz-$ver" "$out.tmp/vmlinux" >/dev/null
echo "$ver" > "$out.tmp/kernel"
rm -rf "$out.tmp/root" "$out"
mv "$out.tmp" "$out"
