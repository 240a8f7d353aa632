/* cas: batches are all-or-nothing, every read verifies, corruption is loud. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "airlock/cas.h"
#include "cas_private.h"
#include "store_private.h"
#include "util.h"

struct fx {
	char dir[64];
	struct al_cas *cas;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/airlock-cas-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	if (al_cas_open(f->dir, &f->cas, NULL) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	al_cas_close(f->cas);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		p[i] = (i % 3) ? (uint8_t)x
			       : (uint8_t)'a' + (uint8_t)(i % 7); /* partly compressible */
	}
	return p;
}

static void test_put_get(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d, e, z;
	assert_int_equal(al_cas_put(f->cas, "x", 1, &d, &err), AL_EUSAGE);
	size_t big = AL_CAS_LOOSE_MIN + 12345;
	uint8_t *p = pattern(big, 1);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "hello\n", 6, &d, &err), 0);
	assert_int_equal(al_cas_put(f->cas, p, big, &e, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "", 0, &z, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "hello\n", 6, &d, &err), 0); /* dedup: a no-op */
	assert_int_equal(al_cas_commit(f->cas, &err), 0);

	struct al_oid want;
	al_sha256(p, big, want.b);
	assert_memory_equal(e.b, want.b, AL_OID_LEN);
	uint8_t *out = NULL;
	size_t len = 0;
	assert_int_equal(al_cas_get(f->cas, &d, &out, &len, &err), 0);
	assert_int_equal(len, 6);
	assert_memory_equal(out, "hello\n", 6);
	free(out);
	assert_int_equal(al_cas_get(f->cas, &e, &out, &len, &err), 0);
	assert_int_equal(len, big);
	assert_memory_equal(out, p, big);
	free(out);
	assert_int_equal(al_cas_get(f->cas, &z, &out, &len, &err), 0);
	assert_int_equal(len, 0);
	free(out);
	uint64_t sz;
	assert_int_equal(al_cas_size(f->cas, &e, &sz, &err), 0);
	assert_int_equal(sz, big);

	/* the large object is a file of its own, zstd-compressed, read-only */
	char hex[65], path[256];
	al_hex(e.b, AL_OID_LEN, hex);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", f->dir, hex, hex + 2);
	struct stat s;
	assert_int_equal(stat(path, &s), 0);
	assert_true((uint64_t)s.st_size < big);

	/* a second handle sees committed objects */
	struct al_cas *c2 = NULL;
	assert_int_equal(al_cas_open(f->dir, &c2, &err), 0);
	assert_int_equal(al_cas_has(c2, &e, &err), 1);
	al_cas_close(c2);
	free(p);
}

static void test_abort_leaves_nothing(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d, e;
	size_t big = AL_CAS_LOOSE_MIN * 2;
	uint8_t *p = pattern(big, 2);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "only in an aborted batch", 24, &d, &err), 0);
	assert_int_equal(al_cas_put(f->cas, p, big, &e, &err), 0);
	assert_int_equal(al_cas_has(f->cas, &d, &err), 1); /* visible inside the batch */
	al_cas_abort(f->cas);
	assert_int_equal(al_cas_has(f->cas, &d, &err), 0);
	assert_int_equal(al_cas_has(f->cas, &e, &err), 0);
	char hex[65], path[256];
	al_hex(e.b, AL_OID_LEN, hex);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", f->dir, hex, hex + 2);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "rmdir %s/tmp 2>/dev/null",
		 f->dir); /* empty: no temp files left */
	assert_int_equal(system(path), 0);
	free(p);
}

static void test_put_fd_changed(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	char path[128];
	snprintf(path, sizeof(path), "%s/in", f->dir);
	FILE *fp = fopen(path, "w");
	fputs("0123456789", fp);
	fclose(fp);
	int fd = open(path, O_RDONLY);
	struct al_oid d;
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put_fd(f->cas, fd, 5, &d, &err), AL_EINVAL); /* longer than said */
	assert_non_null(strstr(err.msg, "changed while being read"));
	lseek(fd, 0, SEEK_SET);
	assert_int_equal(al_cas_put_fd(f->cas, fd, 20, &d, &err),
			 AL_EINVAL); /* shorter than said */
	lseek(fd, 0, SEEK_SET);
	assert_int_equal(al_cas_put_fd(f->cas, fd, 10, &d, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	close(fd);
	struct al_oid want;
	al_sha256("0123456789", 10, want.b);
	assert_memory_equal(d.b, want.b, AL_OID_LEN);
}

static void test_corruption_detected(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d;
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "abcdefgh", 8, &d, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", f->dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db, "UPDATE objects SET data = ? WHERE id = ?", -1, &st, NULL);
	sqlite3_bind_blob(st, 1, "abcdefgX", 8, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, d.b, AL_OID_LEN, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);

	uint8_t *out = (uint8_t *)"untouched";
	size_t len = 77;
	assert_int_equal(al_cas_get(f->cas, &d, &out, &len, &err), AL_ECORRUPT);
	assert_string_equal((char *)out, "untouched"); /* never returned */
	assert_int_equal(len, 77);
	assert_non_null(strstr(err.msg, "digest mismatch"));
	int bad = al_cas_verify_all(f->cas, NULL, NULL, NULL, &err);
	assert_int_equal(bad, 1);

	struct al_oid missing = { { 1 } };
	assert_int_equal(al_cas_get(f->cas, &missing, &out, &len, &err), AL_ENOTFOUND);
}

static void test_live_batch_not_swept(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d;
	size_t big = AL_CAS_LOOSE_MIN + 1;
	uint8_t *p = pattern(big, 3);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, p, big, &d, &err),
			 0); /* a temp file in the batch directory */
	struct al_cas *other = NULL;
	assert_int_equal(al_cas_open(f->dir, &other, &err), 0); /* its open sweeps dead batches */
	al_cas_close(other);
	assert_int_equal(al_cas_commit(f->cas, &err), 0); /* ours was alive: untouched */
	uint8_t *out = NULL;
	size_t len = 0;
	assert_int_equal(al_cas_get(f->cas, &d, &out, &len, &err), 0);
	assert_int_equal(len, big);
	free(out);
	free(p);
}

/* A batch whose objects are all stored already opens no objects.db
 * transaction: another writer may take the write lock meanwhile, and its
 * commit has nothing to commit or sync.  Its first new object takes the
 * lock, as before; the batch is never idle (its gc pin stays) while open. */
static void test_stored_batch_no_txn(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d, e;
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "stored", 6, &d, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);

	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", f->dir);
	sqlite3 *other = NULL;
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_false(al_cas__idle(f->cas));
	assert_int_equal(al_cas_put(f->cas, "stored", 6, &d, &err), 0);
	assert_int_equal(al_cas_has(f->cas, &d, &err), 1);
	/* the write lock is free: another writer's transaction goes through */
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_true(al_cas__idle(f->cas));

	/* a new object: the batch holds the write lock until its commit */
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "stored", 6, &d, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "new", 3, &e, &err), 0);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_BUSY);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(al_cas_has(f->cas, &e, &err), 1);

	/* aborted before and after its first new row: nothing of it stays */
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	al_cas_abort(f->cas);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "aborted", 7, &e, &err), 0);
	al_cas_abort(f->cas);
	assert_int_equal(al_cas_has(f->cas, &e, &err), 0);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(other);
}

static int64_t rows_with(sqlite3 *db, const struct al_oid *d)
{
	sqlite3_stmt *q;
	int64_t n = -1;
	assert_int_equal(
		sqlite3_prepare_v2(db, "SELECT count(*) FROM objects WHERE id = ?", -1, &q, NULL),
		SQLITE_OK);
	sqlite3_bind_blob(q, 1, d->b, AL_OID_LEN, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

/* A group commit's batch (al_cas__group): its small objects are kept in
 * memory until its commit, readable meanwhile, so objects.db's write lock
 * stays free for other writers; batches begun inside it join it; past
 * HELD_MAX they go to objects.db as any batch's; an abort leaves nothing. */
static void test_group_batch(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid d1, d2, d3;
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", f->dir);
	sqlite3 *other = NULL;
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);

	assert_int_equal(al_cas__group(f->cas, true, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "g1", 2, &d1, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0); /* joins */
	assert_int_equal(al_cas_put(f->cas, "g2", 2, &d2, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0); /* leaves */
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "g3", 2, &d3, &err), 0);
	al_cas_abort(f->cas); /* leaves; g3 stays in the outer batch */
	/* not in objects.db yet, its lock free; readable here */
	assert_int_equal(rows_with(other, &d1), 0);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t size = 0;
	assert_int_equal(al_cas_get(f->cas, &d2, &buf, &len, &err), 0);
	assert_int_equal(len, 2);
	assert_memory_equal(buf, "g2", 2);
	free(buf);
	assert_int_equal(al_cas_has(f->cas, &d1, &err), 1);
	assert_int_equal(al_cas_size(f->cas, &d3, &size, &err), 0);
	assert_int_equal(size, 2);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(al_cas__group(f->cas, false, &err), 0);
	assert_int_equal(rows_with(other, &d1) + rows_with(other, &d2) + rows_with(other, &d3), 3);

	/* past HELD_MAX: the rest go to objects.db, its lock taken */
	struct al_oid many[600];
	assert_int_equal(al_cas__group(f->cas, true, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	for (int i = 0; i < 600; i++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "many %d", i);
		assert_int_equal(al_cas_put(f->cas, s, (size_t)n, &many[i], &err), 0);
		if (i == 100)
			assert_int_equal(
				sqlite3_exec(other, "BEGIN IMMEDIATE; COMMIT", NULL, NULL, NULL),
				SQLITE_OK);
	}
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_BUSY);
	for (int i = 0; i < 600; i += 37) {
		assert_int_equal(al_cas_get(f->cas, &many[i], &buf, &len, &err), 0);
		free(buf);
	}
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(al_cas__group(f->cas, false, &err), 0);
	for (int i = 0; i < 600; i++)
		assert_int_equal(rows_with(other, &many[i]), 1);

	/* a large object of a joined batch: a file in objects/ at that batch's
	 * end, so the group's later reads find it before the group commits */
	uint8_t *big = pattern(AL_CAS_LOOSE_MIN + 10, 9);
	struct al_oid bd;
	assert_int_equal(al_cas__group(f->cas, true, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, big, AL_CAS_LOOSE_MIN + 10, &bd, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(al_cas_get(f->cas, &bd, &buf, &len, &err), 0);
	assert_int_equal(len, AL_CAS_LOOSE_MIN + 10);
	assert_memory_equal(buf, big, len);
	free(buf);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(al_cas__group(f->cas, false, &err), 0);
	free(big);
	assert_int_equal(rows_with(other, &bd), 1);

	/* a joined batch that fails to publish its files (a file where a
	 * directory of objects/ goes): the group fails whole with that error,
	 * not a later one's, even once the cause is gone */
	uint8_t *b1 = NULL, *b2 = NULL;
	struct al_oid i1, i2;
	char hex1[AL_OID_STRLEN + 1], hex2[AL_OID_STRLEN + 1], blocker[200];
	for (unsigned seed = 20;; seed++) {
		free(b1);
		free(b2);
		b1 = pattern(AL_CAS_LOOSE_MIN + 1, seed);
		b2 = pattern(AL_CAS_LOOSE_MIN + 2, seed + 100);
		al_sha256(b1, AL_CAS_LOOSE_MIN + 1, i1.b);
		al_sha256(b2, AL_CAS_LOOSE_MIN + 2, i2.b);
		al_oid_fmt(&i1, hex1);
		al_oid_fmt(&i2, hex2);
		snprintf(blocker, sizeof(blocker), "%s/objects/%.2s", f->dir, hex2 + 7);
		struct stat sb;
		if (memcmp(hex1 + 7, hex2 + 7, 2) != 0 && stat(blocker, &sb) < 0)
			break;
	}
	FILE *bf = fopen(blocker, "w");
	assert_non_null(bf);
	fclose(bf);
	assert_int_equal(al_cas__group(f->cas, true, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, b1, AL_CAS_LOOSE_MIN + 1, &i1, &err), 0);
	assert_int_equal(al_cas_put(f->cas, b2, AL_CAS_LOOSE_MIN + 2, &i2, &err), 0);
	assert_true(al_cas_commit(f->cas, &err) < 0);
	assert_non_null(strstr(err.msg, "publish object"));
	unlink(blocker);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "later", 5, &d1, &err), 0);
	err = (struct al_error){ 0 };
	assert_true(al_cas_commit(f->cas, &err) < 0);
	assert_non_null(strstr(err.msg, "publish object"));
	err = (struct al_error){ 0 };
	assert_true(al_cas_commit(f->cas, &err) < 0);
	assert_non_null(strstr(err.msg, "publish object"));
	assert_int_equal(al_cas__group(f->cas, false, &err), 0);
	assert_int_equal(rows_with(other, &i2), 0);
	/* nothing of it is left to fail the next batch */
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, b2, AL_CAS_LOOSE_MIN + 2, &i2, &err), 0);
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_int_equal(rows_with(other, &i2), 1);
	free(b1);
	free(b2);

	/* a batch open before cannot become a group's */
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas__group(f->cas, true, &err), AL_EUSAGE);
	al_cas_abort(f->cas);

	/* aborted: nothing of it stays */
	assert_int_equal(al_cas__group(f->cas, true, &err), 0);
	assert_int_equal(al_cas_begin(f->cas, &err), 0);
	assert_int_equal(al_cas_put(f->cas, "gone", 4, &d1, &err), 0);
	al_cas_abort(f->cas);
	assert_int_equal(al_cas__group(f->cas, false, &err), 0);
	assert_int_equal(al_cas_has(f->cas, &d1, &err), 0);
	assert_int_equal(rows_with(other, &d1), 0);
	sqlite3_close(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_put_fd_changed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corruption_detected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_batch_not_swept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stored_batch_no_txn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_batch, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
