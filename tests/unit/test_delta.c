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

/* A bundle of no change (a run that changed nothing) is written without
 * libarchive: the tar libarchive writes, in one zstd frame that declares
 * its size (so zstd sizes its tables for it), and reads back as one. */
static void test_bundle_of_nothing(void **state)
{
	(void)state;
	/* first in the file: nothing has loaded libarchive yet */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle_of_nothing),
		cmocka_unit_test(test_bundle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
