/* delta: a DeltaBundle written from base -> head reads back with the same
 * entries, applies to base to give exactly head, and a damaged or hostile
 * bundle is refused whole (nothing reaches the store). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <zstd.h>

#include "fixture.h"

#include "airlock/cas.h"
#include "airlock/delta.h"
#include "airlock/dl_archive.h"
#include "delta_private.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	char *p = malloc(*len);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, *len, f), *len);
	fclose(f);
	return p;
}

static char *fd_bytes(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	assert_true(n > 0);
	char *p = malloc((size_t)n);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, (size_t)n, 0), n);
	*len = (size_t)n;
	return p;
}

/* The tar inside a zstd frame. */
static char *unzstd(const char *z, size_t zlen, size_t *len)
{
	unsigned long long n = ZSTD_getFrameContentSize(z, zlen);
	if (n == ZSTD_CONTENTSIZE_UNKNOWN)
		n = 1 << 20;
	assert_true(n != ZSTD_CONTENTSIZE_ERROR && n <= 1 << 20);
	char *p = malloc(n);
	assert_non_null(p);
	*len = ZSTD_decompress(p, n, z, zlen);
	assert_false(ZSTD_isError(*len));
	return p;
}

/* A tar in one zstd frame that declares its size, as the plain writer's,
 * in an unnamed file in dir. */
static int zstd_file(const char *dir, const char *tar, size_t len)
{
	size_t cap = ZSTD_compressBound(len);
	char *z = malloc(cap);
	assert_non_null(z);
	size_t n = ZSTD_compress(z, cap, tar, len, 3);
	assert_false(ZSTD_isError(n));
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, z, n), (ssize_t)n);
	free(z);
	return fd;
}

/* A bundle of no change (a run that changed nothing) is written without
 * libarchive: the tar libarchive writes, in one zstd frame that declares
 * its size (so zstd sizes its tables for it), and reads back as one. */
static void test_bundle_of_nothing(void **state)
{
	(void)state;
	/* nothing before has loaded libarchive */
	assert_null(dl_archive.write_new);
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	sh("mkdir -p %s/a/d && echo one > %s/a/f && echo keep > %s/a/d/k", home, home, home);
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result ra;
	char a[600];
	snprintf(a, sizeof(a), "%s/a", home);
	assert_int_equal(al_manifest_import(st, a, &o, &ra, &err), 0);

	char tmp[600];
	snprintf(tmp, sizeof(tmp), "%s", home);
	int f1 = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(f1 >= 0);
	struct al_oid id1, id2;
	if (al_bundle_write_fd(cas, &ra.id, &ra.id, f1, &id1, &err) < 0)
		fail_msg("%s", err.msg);
	assert_null(dl_archive.write_new); /* libarchive still not loaded */
	int f2 = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(f2 >= 0);
	if (al_bundle__write_fd_archive(cas, &ra.id, &ra.id, f2, &id2, &err) < 0)
		fail_msg("%s", err.msg);
	assert_non_null(dl_archive.write_new);
	size_t l1, l2;
	char *b1 = fd_bytes(f1, &l1), *b2 = fd_bytes(f2, &l2);
	assert_true(al_oid_eq(&id1, &id2));
	assert_int_equal(ZSTD_getFrameContentSize(b1, l1) % 512,
			 0);                                        /* declared: whole tar blocks */
	assert_int_equal(ZSTD_findFrameCompressedSize(b1, l1), l1); /* one frame */
	size_t t1, t2;
	char *tar1 = unzstd(b1, l1, &t1), *tar2 = unzstd(b2, l2, &t2);
	assert_int_equal(t1, t2);
	assert_memory_equal(tar1, tar2, t1);
	free(tar1);
	free(tar2);

	struct al_bundle bu = { 0 };
	assert_int_equal(al_cas_begin(cas, &err), 0);
	if (al_bundle_read_mem(cas, b1, l1, &bu, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(bu.n, 0);
	assert_true(al_oid_eq(&bu.base, &ra.id) && al_oid_eq(&bu.head, &ra.id));
	struct al_oid got;
	if (al_bundle_apply_tree(cas, &bu, &ra.id, &got, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	assert_true(al_oid_eq(&got, &ra.id));
	al_bundle_release(&bu);
	free(b1);
	free(b2);
	close(f1);
	close(f2);
	home_remove(home, st);
}

static void test_bundle(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	sh("mkdir -p %s/a/d %s/a/gone && echo one > %s/a/f && echo keep > %s/a/d/k && echo x > "
	   "%s/a/gone/x",
	   home, home, home, home, home);
	sh("cp -a %s/a %s/b && echo two > %s/b/f && rm -r %s/b/gone && echo new > %s/b/d/n && ln "
	   "-s f %s/b/l",
	   home, home, home, home, home, home);
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result ra, rb;
	char a[600], b[600], path[600];
	snprintf(a, sizeof(a), "%s/a", home);
	snprintf(b, sizeof(b), "%s/b", home);
	assert_int_equal(al_manifest_import(st, a, &o, &ra, &err), 0);
	assert_int_equal(al_manifest_import(st, b, &o, &rb, &err), 0);

	snprintf(path, sizeof(path), "%s/b.tar.zst", home);
	struct al_oid id;
	if (al_bundle_write(cas, &ra.id, &rb.id, path, &id, &err) < 0)
		fail_msg("write: %s", err.msg);
	size_t len;
	char *bytes = slurp(path, &len);

	/* read back, verify only (no cas) */
	struct al_bundle bu = { 0 };
	if (al_bundle_read_mem(NULL, bytes, len, &bu, &err) < 0)
		fail_msg("read: %s", err.msg);
	assert_memory_equal(bu.base.b, ra.id.b, AL_OID_LEN);
	assert_memory_equal(bu.head.b, rb.id.b, AL_OID_LEN);
	char ops[64] = "";
	for (size_t i = 0; i < bu.n && strlen(ops) < 50; i++)
		snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%c:%s ", bu.entries[i].op,
			 bu.entries[i].path);
	assert_string_equal(ops, "A:d/n M:f D:gone D:gone/x A:l ");
	al_bundle_release(&bu);

	/* read into the store and apply onto the base: exactly the head */
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_int_equal(al_bundle_read_mem(cas, bytes, len, &bu, &err), 0);
	struct al_oid got;
	if (al_bundle_apply_tree(cas, &bu, &ra.id, &got, &err) < 0)
		fail_msg("apply: %s", err.msg);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	assert_memory_equal(got.b, rb.id.b, AL_OID_LEN);
	/* onto the head itself: the old versions do not match */
	assert_int_equal(al_cas_begin(cas, &err), 0);
	assert_true(al_bundle_apply_tree(cas, &bu, &rb.id, &got, &err) < 0);
	al_cas_abort(cas);
	al_bundle_release(&bu);

	/* every single damaged byte in the first 4 KiB is refused (or, where
	 * zstd framing tolerates it, reads back the same bundle) */
	size_t refused = 0, n = len < 4096 ? len : 4096;
	for (size_t i = 0; i < n; i += 7) {
		bytes[i] ^= 0x5a;
		struct al_bundle h = { 0 };
		struct al_error e2 = { 0 };
		if (al_bundle_read_mem(NULL, bytes, len, &h, &e2) < 0) {
			assert_true(e2.code < 0 && e2.msg[0]);
			refused++;
		} else {
			assert_memory_equal(h.head.b, rb.id.b, AL_OID_LEN);
			al_bundle_release(&h);
		}
		bytes[i] ^= 0x5a;
	}
	assert_true(refused > n / 14);
	/* truncated, empty, garbage */
	struct al_bundle h = { 0 };
	assert_true(al_bundle_read_mem(NULL, bytes, len / 2, &h, &err) < 0);
	assert_true(al_bundle_read_mem(NULL, bytes, 0, &h, &err) < 0);
	assert_true(al_bundle_read_mem(NULL, "not a bundle", 12, &h, &err) < 0);
	free(bytes);

	/* a hostile bundle: an index naming a path that climbs out */
	sh("mkdir -p %s/evil/.airlock && cd %s/evil && printf '%%s' "
	   "'{\"base\":\"sha256:%064d\",\"entries\":[{\"op\":\"add\","
	   "\"path\":\"../"
	   "x\",\"new\":{\"type\":\"file\",\"mode\":420,\"size\":1,\"sha256\":\"sha256:%064d\"}}],"
	   "\"head\":\"sha256:%064d\",\"version\":1}' > .airlock/bundle.json && tar --zstd -cf "
	   "../evil.tar.zst .airlock",
	   home, home, 0, 0, 0);
	snprintf(path, sizeof(path), "%s/evil.tar.zst", home);
	bytes = slurp(path, &len);
	struct al_error e3 = { 0 };
	assert_true(al_bundle_read_mem(NULL, bytes, len, &h, &e3) < 0);
	assert_true(e3.msg[0]);
	free(bytes);

	home_remove(home, st);
}

/* Two trees in the store: a, and b made from it by a shell command. */
static void two_trees(struct al_store *st, const char *home, const char *change, struct al_oid *a,
		      struct al_oid *b)
{
	struct al_error err = { 0 };
	sh("mkdir -p %s/a/d %s/a/gone && echo one > %s/a/f && echo keep > %s/a/d/k && echo x > "
	   "%s/a/gone/x && rm -rf %s/b && cp -a %s/a %s/b && cd %s/b && %s",
	   home, home, home, home, home, home, home, home, home, change);
	struct al_import_opts o = { .no_cache = true };
	struct al_import_result ra, rb;
	char p[600];
	snprintf(p, sizeof(p), "%s/a", home);
	if (al_manifest_import(st, p, &o, &ra, &err) < 0)
		fail_msg("%s", err.msg);
	snprintf(p, sizeof(p), "%s/b", home);
	if (al_manifest_import(st, p, &o, &rb, &err) < 0)
		fail_msg("%s", err.msg);
	*a = ra.id;
	*b = rb.id;
}

/* files of sizes about the tar's 512-byte blocks and the writer's 64 KiB
 * buffer, an executable, a directory, symlinks, a deletion */
#define PLAIN_CHANGE                                                                           \
	"echo two > f && rm -r gone && : > empty && head -c 511 /dev/urandom > r511 && "       \
	"head -c 512 /dev/urandom > r512 && head -c 513 /dev/urandom > r513 && "               \
	"head -c 200000 /dev/urandom > big && printf '#!/bin/sh\\n' > x.sh && chmod 755 x.sh " \
	"&& mkdir -p new/deeper tmp && chmod 700 new && chmod 1777 tmp && ln -s f l && "       \
	"ln -s ../d/k new/up && "                                                              \
	"touch "                                                                               \
	"n2345678901234567890123456789012345678901234567890123456789012345678901234567890123"  \
	"4567890123" /* 93 bytes: the longest plain name */

/* Read back with the library's own reader and applied: exactly the head. */
static void read_own_gives(struct al_cas *cas, int fd, const struct al_oid *a,
			   const struct al_oid *b)
{
	struct al_error err = { 0 };
	struct al_bundle bu = { 0 };
	struct al_oid got;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(al_cas_begin(cas, &err), 0);
	if (al_bundle__read_own_fd(cas, fd, &bu, &err) < 0)
		fail_msg("read: %s", err.msg);
	if (al_bundle_apply_tree(cas, &bu, a, &got, &err) < 0)
		fail_msg("apply: %s", err.msg);
	assert_int_equal(al_cas_commit(cas, &err), 0);
	assert_true(al_oid_eq(&got, b));
	al_bundle_release(&bu);
}

/* A run's changes whose names all fit a plain ustar header are written
 * and read back without libarchive. */
static void test_plain_without_libarchive(void **state)
{
	(void)state;
	assert_null(dl_archive.read_new); /* first in the file */
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	struct al_oid a, b, id;
	two_trees(st, home, PLAIN_CHANGE, &a, &b);
	int fd = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	if (al_bundle_write_fd(cas, &a, &b, fd, &id, &err) < 0)
		fail_msg("%s", err.msg);
	read_own_gives(cas, fd, &a, &b);
	assert_null(dl_archive.read_new);
	assert_null(dl_archive.write_new);
	close(fd);
	home_remove(home, st);
}

/* The plain writer's tar is libarchive's byte for byte, in one checksummed
 * frame that declares its size; libarchive reads it as it reads its own;
 * the plain reader reads libarchive's. */
static void test_plain_is_libarchives(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	struct al_oid a, b, id1, id2;
	two_trees(st, home, PLAIN_CHANGE, &a, &b);
	int f1 = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	int f2 = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(f1 >= 0 && f2 >= 0);
	if (al_bundle_write_fd(cas, &a, &b, f1, &id1, &err) < 0 ||
	    al_bundle__write_fd_archive(cas, &a, &b, f2, &id2, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(al_oid_eq(&id1, &id2));
	size_t l1, l2, t1, t2;
	char *b1 = fd_bytes(f1, &l1), *b2 = fd_bytes(f2, &l2);
	assert_int_equal(ZSTD_findFrameCompressedSize(b1, l1), l1); /* one frame */
	assert_true(l1 > 4 && (b1[4] & 0x04)); /* the frame descriptor's checksum flag */
	assert_int_equal(ZSTD_getFrameContentSize(b2, l2), ZSTD_CONTENTSIZE_UNKNOWN);
	char *tar1 = unzstd(b1, l1, &t1), *tar2 = unzstd(b2, l2, &t2);
	assert_int_equal(ZSTD_getFrameContentSize(b1, l1), t1);
	assert_int_equal(t1, t2);
	assert_memory_equal(tar1, tar2, t1);
	free(tar1);
	free(tar2);
	/* libarchive reads the plain bundle; the plain reader libarchive's */
	struct al_bundle bu = { 0 };
	if (al_bundle_read_mem(NULL, b1, l1, &bu, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(al_oid_eq(&bu.head, &b));
	al_bundle_release(&bu);
	read_own_gives(cas, f2, &a, &b);
	free(b1);
	free(b2);
	close(f1);
	close(f2);
	home_remove(home, st);
}

/* Names a plain header cannot hold go through libarchive, both ways. */
static void test_unplain_through_libarchive(void **state)
{
	(void)state;
	static const char *const changes[] = {
		"echo u > 'Q3 \xc3\x9c"
		"berblick.csv'", /* UTF-8 */
		"touch "         /* 94 bytes: files/ makes it 100 */
		"n234567890123456789012345678901234567890123456789012345678901234567890123456789"
		"012345678901234",
		"mkdir -p " /* a directory of 93: 100 with its / */
		"d23456789012345678901234567890123456789012345678901234567890123456789012345678"
		"901234567890123",
		"ln -s " /* a symlink's target of 100 */
		"t234567890123456789012345678901234567890123456789012345678901234567890123456789"
		"012345678901234567890 l",
		"ln -s '\xc3\xa9t\xc3\xa9' l2", /* a symlink's UTF-8 target */
		"mkdir -p " /* a long name libarchive splits into prefix and name */
		"a2345678901234567890123456789012345678901234567890123456789/"
		"b2345678901234567890123456789012345678901234567890123456789 && "
		"echo s > a2345678901234567890123456789012345678901234567890123456789/"
		"b2345678901234567890123456789012345678901234567890123456789/c",
	};
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	for (size_t i = 0; i < ARRAY_SIZE(changes); i++) {
		struct al_oid a, b, id1, id2;
		two_trees(st, home, changes[i], &a, &b);
		int f1 = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		int f2 = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		assert_true(f1 >= 0 && f2 >= 0);
		if (al_bundle_write_fd(cas, &a, &b, f1, &id1, &err) < 0 ||
		    al_bundle__write_fd_archive(cas, &a, &b, f2, &id2, &err) < 0)
			fail_msg("%s", err.msg);
		size_t l1, l2, t1, t2;
		char *b1 = fd_bytes(f1, &l1), *b2 = fd_bytes(f2, &l2);
		/* libarchive's stream: size undeclared */
		assert_int_equal(ZSTD_getFrameContentSize(b1, l1), ZSTD_CONTENTSIZE_UNKNOWN);
		char *tar1 = unzstd(b1, l1, &t1), *tar2 = unzstd(b2, l2, &t2);
		assert_int_equal(t1, t2);
		assert_memory_equal(tar1, tar2, t1);
		read_own_gives(cas, f1, &a, &b); /* libarchive's frame: libarchive reads it */
		/* the same tar in a frame of declared size: the plain reader meets
		 * a member it does not read and hands the bundle on */
		int f3 = zstd_file(home, tar1, t1);
		read_own_gives(cas, f3, &a, &b);
		close(f3);
		free(tar1);
		free(tar2);
		free(b1);
		free(b2);
		close(f1);
		close(f2);
	}
	home_remove(home, st);
}

/* The plain reader refuses a damaged bundle of its own whole: a changed
 * byte anywhere, a cut, bytes after its end. */
static void test_plain_damaged(void **state)
{
	(void)state;
	char home[] = "/tmp/airlock-delta-XXXXXX";
	struct al_error err = { 0 };
	struct al_store *st = home_store(home);
	struct al_cas *cas = al_store_cas(st);
	struct al_oid a, b, id;
	two_trees(st, home, "echo two > f && ln -s f l && mkdir n && head -c 3000 /dev/urandom > r",
		  &a, &b);
	int fd = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	if (al_bundle_write_fd(cas, &a, &b, fd, &id, &err) < 0)
		fail_msg("%s", err.msg);
	size_t len;
	char *bytes = fd_bytes(fd, &len);
	close(fd);
	size_t refused = 0;
	static const size_t cuts[] = { 1, 2, 3, 4, 7 }; /* the frame's checksum, and more */
	for (size_t i = 0; i < len + 1 + ARRAY_SIZE(cuts); i++) {
		int d = open(home, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		assert_true(d >= 0);
		if (i < len) { /* one byte changed */
			bytes[i] ^= 0x5a;
			assert_int_equal(write(d, bytes, len), (ssize_t)len);
			bytes[i] ^= 0x5a;
		} else if (i < len + ARRAY_SIZE(cuts)) { /* cut short */
			size_t k = len - cuts[i - len];
			assert_int_equal(write(d, bytes, k), (ssize_t)k);
		} else { /* a byte after the end */
			assert_int_equal(write(d, bytes, len), (ssize_t)len);
			assert_int_equal(write(d, "x", 1), 1);
		}
		assert_int_equal(lseek(d, 0, SEEK_SET), 0);
		struct al_bundle h = { 0 };
		struct al_error e2 = { 0 };
		if (al_bundle__read_own_fd(NULL, d, &h, &e2) < 0) {
			assert_true(e2.code < 0 && e2.msg[0]);
			assert_int_equal(h.n, 0);
			refused++;
		} else { /* bits no decoder looks at (in the frame header, a
			  * block's tables): the same tar, as its checksum says */
			if (i >= len || !al_oid_eq(&h.head, &b))
				fail_msg("byte %zu of %zu changed: read", i, len);
			al_bundle_release(&h);
		}
		close(d);
	}
	assert_true(refused >= len * 9 / 10);
	/* a header changed and the frame made anew (its checksum right): the
	 * header's own checksum refuses it */
	size_t tl;
	char *tar = unzstd(bytes, len, &tl);
	tar[136] ^= 1; /* the index member's mtime: '0' to '1' */
	free(bytes);
	int d = zstd_file(home, tar, tl);
	assert_int_equal(lseek(d, 0, SEEK_SET), 0);
	struct al_bundle h = { 0 };
	struct al_error e2 = { 0 };
	assert_true(al_bundle__read_own_fd(NULL, d, &h, &e2) < 0);
	assert_string_equal(e2.msg, "bundle refused: damaged tar header");
	close(d);
	free(tar);
	home_remove(home, st);
}

static void test_plain_name(void **state)
{
	(void)state;
	char n93[94], n92[93];
	memset(n93, 'a', 93);
	n93[93] = 0;
	memset(n92, 'a', 92);
	n92[92] = 0;
	assert_true(al_bundle__plain_name(n93, false)); /* files/ + 93 = 99 */
	assert_false(al_bundle__plain_name(n93, true)); /* with its / 100 */
	assert_true(al_bundle__plain_name(n92, true));
	assert_true(al_bundle__plain_name("a b/~c.csv", false));
	assert_false(al_bundle__plain_name("caf\xc3\xa9", false));
	assert_false(al_bundle__plain_name("a\x1b[2J", false));
	assert_false(al_bundle__plain_name("a\x7f", false));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_without_libarchive),
		cmocka_unit_test(test_bundle_of_nothing),
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_plain_is_libarchives),
		cmocka_unit_test(test_unplain_through_libarchive),
		cmocka_unit_test(test_plain_damaged),
		cmocka_unit_test(test_plain_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
