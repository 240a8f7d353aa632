/* vm: what a microVM guest hands back, parsed strictly (vm_private.h).
 * The result stream unpacks into an upper layer of the form overlay.c
 * reads (files, directories, symlinks, hardlinks, whiteouts, opaque
 * directories, FIFOs); everything else a hostile guest could send is
 * refused, nothing is made outside the target; the status line is exactly
 * one of its two forms. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

#include "util.h"
#include "vm_private.h"

/* one member of a stream to write */
struct m {
	const char *path;
	mode_t type;         /* AE_IF* */
	const char *data;    /* regular file content; symlink target; hardlink target */
	unsigned rmaj, rmin; /* devices */
	const char *xattr;   /* name, value "y" */
	long long size;      /* 0: strlen(data) */
};

static int stream(const struct m *ms, size_t n)
{
	int fd = memfd_create("stream", MFD_CLOEXEC);
	assert_true(fd >= 0);
	struct archive *w = archive_write_new();
	archive_write_set_format_pax_restricted(w);
	archive_write_set_bytes_per_block(w, 512);
	assert_int_equal(archive_write_open_fd(w, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, ms[i].path);
		bool hard = ms[i].type == 0;
		archive_entry_set_filetype(e, hard ? AE_IFREG : ms[i].type);
		archive_entry_set_perm(e, 0644);
		size_t len = ms[i].data && ms[i].type == AE_IFREG ? strlen(ms[i].data) : 0;
		archive_entry_set_size(e, ms[i].size && ms[i].type == AE_IFREG ? ms[i].size
									       : (la_int64_t)len);
		if (hard)
			archive_entry_set_hardlink(e, ms[i].data);
		if (ms[i].type == AE_IFLNK)
			archive_entry_set_symlink(e, ms[i].data);
		if (ms[i].type == AE_IFCHR || ms[i].type == AE_IFBLK) {
			archive_entry_set_rdevmajor(e, ms[i].rmaj);
			archive_entry_set_rdevminor(e, ms[i].rmin);
		}
		if (ms[i].xattr)
			archive_entry_xattr_add_entry(e, ms[i].xattr, "y", 1);
		assert_true(archive_write_header(w, e) >= ARCHIVE_WARN);
		if (len)
			archive_write_data(w, ms[i].data, len);
		archive_entry_free(e);
	}
	archive_write_close(w);
	archive_write_free(w);
	return fd;
}

static uint64_t fsize(int fd)
{
	struct stat s;
	assert_int_equal(fstat(fd, &s), 0);
	return (uint64_t)s.st_size;
}

static int unpack_into(const char *dir, int fd, uint64_t max, const struct al_vm_caps *caps,
		       struct al_error *err)
{
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	int r = al_vm__result_unpack(fd, max, d, caps, err);
	close(d);
	return r;
}

static const struct al_vm_caps caps = { .bytes = 1 << 20, .entries = 100 };

#define M(...) ((struct m){ __VA_ARGS__ })

static void test_valid(void **state)
{
	(void)state;
	/* on a tmpfs, as vm.c unpacks (a whiteout is a 0/0 device, which
	 * overlayfs, say a container's /tmp, refuses without CAP_MKNOD) */
	char home[] = "/dev/shm/airlock-vm-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct m ms[] = {
		M(.path = "d/", .type = AE_IFDIR),
		M(.path = "d/f", .type = AE_IFREG, .data = "content\n"),
		M(.path = "l", .type = AE_IFLNK, .data = "d/f"),
		M(.path = "h", .type = 0, .data = "d/f"),
		M(.path = "gone", .type = AE_IFCHR),
		M(.path = "o/", .type = AE_IFDIR, .xattr = "trusted.overlay.opaque"),
		M(.path = "p", .type = AE_IFIFO),
		M(.path = "ü ñ", .type = AE_IFREG, .data = ""),
	};
	int fd = stream(ms, sizeof(ms) / sizeof(ms[0]));
	struct al_error err = { 0 };
	if (unpack_into(home, fd, fsize(fd), &caps, &err) < 0)
		fail_msg("%s", err.msg);
	char p[600], buf[64] = "";
	struct stat s;
	snprintf(p, sizeof(p), "%s/d/f", home);
	int f = open(p, O_RDONLY);
	assert_true(f >= 0 && read(f, buf, sizeof(buf)) == 8);
	close(f);
	assert_string_equal(buf, "content\n");
	assert_int_equal(stat(p, &s), 0);
	assert_int_equal(s.st_mode & 07777, 0644);
	assert_int_equal(s.st_nlink, 2); /* h */
	snprintf(p, sizeof(p), "%s/l", home);
	assert_int_equal(lstat(p, &s), 0);
	assert_true(S_ISLNK(s.st_mode));
	snprintf(p, sizeof(p), "%s/gone", home);
	assert_int_equal(lstat(p, &s), 0);
	assert_true(S_ISCHR(s.st_mode) && s.st_rdev == makedev(0, 0));
	snprintf(p, sizeof(p), "%s/o", home);
	char v[4];
	assert_true(getxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 ||
		    getxattr(p, "trusted.overlay.opaque", v, sizeof(v)) == 1);
	snprintf(p, sizeof(p), "%s/p", home);
	assert_int_equal(lstat(p, &s), 0);
	assert_true(S_ISFIFO(s.st_mode));
	close(fd);
	sh("rm -rf %s", home);
}

struct bad {
	const char *why;
	struct m ms[4];
	size_t n;
	int code;
};

static void test_refused(void **state)
{
	(void)state;
	const struct bad cases[] = {
		{ "dot-dot",
		  { M(.path = "../escape", .type = AE_IFREG, .data = "x") },
		  1,
		  AL_EINVAL },
		{ "dot-dot inside",
		  { M(.path = "d/", .type = AE_IFDIR),
		    M(.path = "d/../../escape", .type = AE_IFREG, .data = "x") },
		  2,
		  AL_EINVAL },
		{ "absolute",
		  { M(.path = "/escape", .type = AE_IFREG, .data = "x") },
		  1,
		  AL_EINVAL },
		{ "dot", { M(.path = "./x", .type = AE_IFREG, .data = "x") }, 1, AL_EINVAL },
		{ "control character",
		  { M(.path = "a\nb", .type = AE_IFREG, .data = "x") },
		  1,
		  AL_EINVAL },
		{ "no parent",
		  { M(.path = "nodir/f", .type = AE_IFREG, .data = "x") },
		  1,
		  AL_EINVAL },
		{ "through a symlink",
		  { M(.path = "d/", .type = AE_IFDIR),
		    M(.path = "l", .type = AE_IFLNK, .data = "d"),
		    M(.path = "l/f", .type = AE_IFREG, .data = "x") },
		  3,
		  AL_EINVAL },
		{ "twice",
		  { M(.path = "f", .type = AE_IFREG, .data = "x"),
		    M(.path = "f", .type = AE_IFREG, .data = "y") },
		  2,
		  AL_EINVAL },
		{ "char device",
		  { M(.path = "null", .type = AE_IFCHR, .rmaj = 1, .rmin = 3) },
		  1,
		  AL_EINVAL },
		{ "block device", { M(.path = "sda", .type = AE_IFBLK, .rmaj = 8) }, 1, AL_EINVAL },
		{ "hardlink outside",
		  { M(.path = "h", .type = 0, .data = "../etc/passwd") },
		  1,
		  AL_EINVAL },
		{ "hardlink to nothing",
		  { M(.path = "h", .type = 0, .data = "missing") },
		  1,
		  AL_EINVAL },
		{ "hardlink to a directory",
		  { M(.path = "d/", .type = AE_IFDIR), M(.path = "h", .type = 0, .data = "d") },
		  2,
		  AL_EINVAL },
		{ "another xattr",
		  { M(.path = "f", .type = AE_IFREG, .data = "x", .xattr = "security.capability") },
		  1,
		  AL_EINVAL },
		{ "opaque on a file",
		  { M(.path = "f", .type = AE_IFREG, .data = "x",
		      .xattr = "trusted.overlay.opaque") },
		  1,
		  AL_EINVAL },
		{ "over the bytes",
		  { M(.path = "big", .type = AE_IFREG, .data = "x", .size = (2 << 20)) },
		  1,
		  AL_ELIMIT },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char home[] = "/dev/shm/airlock-vm-XXXXXX";
		assert_non_null(mkdtemp(home));
		char sub[600];
		snprintf(sub, sizeof(sub), "%s/t", home);
		assert_int_equal(mkdir(sub, 0700), 0);
		int fd = stream(cases[i].ms, cases[i].n);
		struct al_error err = { 0 };
		int r = unpack_into(sub, fd, fsize(fd), &caps, &err);
		if (r != cases[i].code)
			fail_msg("%s: got %d (%s), want %d", cases[i].why, r, err.msg,
				 cases[i].code);
		/* nothing beside the target */
		char p[700];
		struct stat s;
		snprintf(p, sizeof(p), "%s/escape", home);
		assert_true(lstat(p, &s) < 0);
		close(fd);
		sh("rm -rf %s", home);
	}
}

static void test_stream_limits(void **state)
{
	(void)state;
	char home[] = "/dev/shm/airlock-vm-XXXXXX";
	assert_non_null(mkdtemp(home));
	struct al_error err = { 0 };
	/* more members than the cap */
	struct m many[8];
	char names[8][8];
	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		many[i] = M(.path = names[i], .type = AE_IFREG, .data = "x");
	}
	struct al_vm_caps few = { .bytes = 1 << 20, .entries = 5 };
	int fd = stream(many, 8);
	sh("mkdir -p %s/a %s/b %s/c %s/d", home, home, home, home);
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/a", home);
	assert_int_equal(unpack_into(dir, fd, fsize(fd), &few, &err), AL_ELIMIT);
	/* cut short: the stream's bytes beyond max are not read */
	snprintf(dir, sizeof(dir), "%s/b", home);
	struct m one[] = { M(.path = "f", .type = AE_IFREG, .data = "0123456789abcdef") };
	int fd2 = stream(one, 1);
	assert_int_equal(unpack_into(dir, fd2, 520, &caps, &err), AL_EINVAL);
	/* not a tar stream at all */
	int g = memfd_create("garbage", MFD_CLOEXEC);
	char junk[2048];
	memset(junk, 'A', sizeof(junk));
	assert_int_equal(write(g, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	snprintf(dir, sizeof(dir), "%s/c", home);
	assert_int_equal(unpack_into(dir, g, sizeof(junk), &caps, &err), AL_EINVAL);
	/* an empty stream (two zero blocks): nothing, fine */
	int z = memfd_create("zero", MFD_CLOEXEC);
	assert_int_equal(ftruncate(z, 1024), 0);
	snprintf(dir, sizeof(dir), "%s/d", home);
	assert_int_equal(unpack_into(dir, z, 1024, &caps, &err), 0);
	close(fd);
	close(fd2);
	close(g);
	close(z);
	sh("rm -rf %s", home);
}

static void test_status(void **state)
{
	(void)state;
	struct al_vm_status st;
	struct al_error err = { 0 };
	const char ok[] = "airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=1234 "
			  "disk_full=0 files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 "
			  "boot_ms=9 setup_ms=3 collect_ms=4 result=1024 "
			  "left_sockets=2 left_deep=1 left_links=0\n";
	assert_int_equal(al_vm__status_parse(ok, strlen(ok), &st, &err), 0);
	assert_int_equal(st.exit_code, 7);
	assert_true(st.oom && st.files_full && !st.timed_out && !st.error);
	assert_int_equal(st.peak, 1234);
	assert_int_equal(st.result, 1024);
	assert_int_equal(st.left_sockets, 2);
	assert_int_equal(st.left_deep, 1);
	assert_int_equal(st.left_links, 0);
	const char e[] = "airlock-status 1 error stage=unpack errno=28\n";
	assert_int_equal(al_vm__status_parse(e, strlen(e), &st, &err), 0);
	assert_true(st.error);
	assert_string_equal(st.stage, "unpack");
	assert_int_equal(st.sys_errno, 28);
	static const char *const bad[] = {
		"",
		"airlock-status 1 exit=7\n",
		"airlock-status 2 exit=7 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0\n",
		"airlock-status 1 exit=256 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0\n",
		"airlock-status 1 exit=7 timed_out=2 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0\n",
		"airlock-status 1 exit=07 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0\n",
		"airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0",
		"airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0 x=1\n",
		"airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=99999999999999999999 "
		"disk_full=0 files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 "
		"setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=0 left_deep=0 left_links=0\n",
		"airlock-status 1 exit=7\nairlock-status 1 exit=8\n",
		/* the left-out counts: required, in range */
		"airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1\n",
		"airlock-status 1 exit=7 timed_out=0 cancelled=0 oom=1 peak=1 disk_full=0 "
		"files_full=1 user_ms=5 sys_ms=6 max_rss_kb=7 wall_ms=8 boot_ms=9 setup_ms=3 "
		"collect_ms=4 result=1 left_sockets=4294967296 left_deep=0 left_links=0\n",
		"airlock-status 1 error stage=Bad\x1b errno=1\n",
		"airlock-status 1 error stage=x errno=99999\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (al_vm__status_parse(bad[i], strlen(bad[i]), &st, &err) != AL_EINVAL)
			fail_msg("accepted bad status line %zu", i);
	/* a NUL inside */
	char nul[sizeof(ok)];
	memcpy(nul, ok, sizeof(ok));
	nul[20] = 0;
	assert_int_equal(al_vm__status_parse(nul, sizeof(ok) - 1, &st, &err), AL_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_stream_limits),
		cmocka_unit_test(test_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
