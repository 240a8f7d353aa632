/* vmlinux-extract: the kernel ELF inside a bzImage, for QEMU's direct boot.
 *
 *   vmlinux-extract BZIMAGE OUT
 *
 * The boot protocol's header (Documentation/arch/x86/boot.rst) says where
 * the compressed payload is: setup_sects at 0x1f1, payload_offset and
 * payload_length at 0x248 (protocol 2.08+), relative to the protected-mode
 * code after the setup sectors.  libarchive's raw format with every
 * built-in filter decompresses it (gzip, xz, lzma, bzip2, lz4, zstd: what
 * Debian's kernels use); the result must be an x86-64 ELF.  Unlike the
 * kernel tree's scripts/extract-vmlinux it reads the header instead of
 * searching for magic numbers.  Booting the ELF saves the guest's own
 * decompression under TCG (docs/operations.md, "microVM"). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int fail(const char *what)
{
	fprintf(stderr, "vmlinux-extract: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return fail("usage: vmlinux-extract BZIMAGE OUT");
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return fail(strerror(errno));
	if (st.st_size < 0x1000 || st.st_size > (256 << 20))
		return fail("not a bzImage (size)");
	unsigned char *img = malloc((size_t)st.st_size);
	if (!img || read(fd, img, (size_t)st.st_size) != st.st_size)
		return fail("read");
	close(fd);
	if (memcmp(img + 0x202, "HdrS", 4) || (img[0x206] | img[0x207] << 8) < 0x208)
		return fail("not a bzImage (no boot protocol 2.08 header)");
	size_t setup = img[0x1f1] ? img[0x1f1] : 4;
	size_t off = (setup + 1) * 512 + le32(img + 0x248), len = le32(img + 0x24c);
	if (off >= (size_t)st.st_size || len > (size_t)st.st_size - off)
		return fail("payload outside the file");

	struct archive *a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	struct archive_entry *e;
	if (archive_read_open_memory(a, img + off, len) != ARCHIVE_OK ||
	    archive_read_next_header(a, &e) != ARCHIVE_OK)
		return fail(archive_error_string(a));
	if (archive_filter_count(a) < 2)
		return fail("the payload is not compressed by a known filter");
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		return fail(strerror(errno));
	char buf[1 << 16];
	la_ssize_t n;
	size_t total = 0;
	unsigned char head[20];
	while ((n = archive_read_data(a, buf, sizeof(buf))) > 0) {
		if (total < sizeof(head))
			memcpy(head + total, buf,
			       (size_t)n < sizeof(head) - total ? (size_t)n : sizeof(head) - total);
		total += (size_t)n;
		if (total > (1u << 30) || write(out, buf, (size_t)n) != n)
			return fail("write (or more than 1 GiB)");
	}
	if (n < 0)
		return fail(archive_error_string(a));
	/* an x86-64 ELF executable: EI_CLASS 64, e_machine 62 */
	if (total < sizeof(head) || memcmp(head, "\177ELF", 4) || head[4] != 2 || head[18] != 62)
		return fail("the payload is not an x86-64 ELF kernel");
	if (fsync(out) < 0 || close(out) < 0 || rename(tmp, argv[2]) < 0)
		return fail(strerror(errno));
	printf("%s: %zu bytes (from %zu compressed by %s)\n", argv[2], total, len,
	       archive_filter_name(a, 0));
	archive_read_free(a);
	free(img);
	return 0;
}
