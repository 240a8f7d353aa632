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
#include "airlock/manifest.h"
#include "cas_private.h"
#include "store_private.h"
#include "util.h"
#include "fixture.h"

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

/* Another connection writes an object's bytes over (its length kept):
 * what a read through objects.db then finds */
static void overwrite(const char *dir, const struct al_oid *d, const void *data, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", dir);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(db, "UPDATE objects SET data = ? WHERE id = ?", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_blob(st, 1, data, (int)n, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, d->b, AL_OID_LEN, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	assert_int_equal(sqlite3_changes(db), 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static int node_is(struct al_cas *c, const struct al_oid *d, const char *want)
{
	struct al_error err = { 0 };
	const uint8_t *p = NULL;
	_cleanup_free_ uint8_t *owned = NULL;
	size_t len = 0;
	int r = al_cas__node(c, d, &p, &len, &owned, &err);
	if (r == 0 && (len != strlen(want) || memcmp(p, want, len) != 0))
		return 99;
	return r;
}

/* al_cas__node: a pinned handle answers a tree node it has read again
 * without reading objects.db (seen here by spoiling the row behind it);
 * the pin's release and the sweep forget every node kept; what it read
 * unpinned, from its own open batch or from a group's held objects is not
 * kept; it keeps at most 1 MiB. */
static void test_node_cache(void **state)
{
	struct fx *f = *state;
	struct al_cas *c = f->cas;
	struct al_error err = { 0 };
	struct al_oid a, b, n1, n2;
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "node a", 6, &a, &err), 0);
	assert_int_equal(al_cas_put(c, "node b", 6, &b, &err), 0);
	assert_int_equal(al_cas_commit(c, &err), 0);
	al_cas__release_memory(c); /* idle: unpinned */

	/* unpinned: read each time */
	assert_int_equal(node_is(c, &a, "node a"), 0);
	overwrite(f->dir, &a, "spoilt", 6);
	assert_int_equal(node_is(c, &a, "node a"), AL_ECORRUPT);
	overwrite(f->dir, &a, "node a", 6);

	/* pinned: kept, and answered from memory */
	assert_int_equal(al_cas__pin(c, &err), 0);
	assert_int_equal(node_is(c, &a, "node a"), 0);
	assert_int_equal(node_is(c, &b, "node b"), 0);
	overwrite(f->dir, &a, "spoilt", 6);
	assert_int_equal(node_is(c, &a, "node a"), 0);
	assert_int_equal(node_is(c, &b, "node b"), 0);
	assert_int_equal(node_is(c, &a, "node a"), 0);
	/* the pin's release forgets it: what the collector may have swept
	 * meanwhile is not answered once pinned again */
	al_cas__release_memory(c);
	assert_int_equal(node_is(c, &a, "node a"), AL_ECORRUPT);
	assert_int_equal(al_cas__pin(c, &err), 0);
	assert_int_equal(node_is(c, &a, "node a"), AL_ECORRUPT);
	overwrite(f->dir, &a, "node a", 6);

	/* read inside a read transaction (al_cas__reads_begin): kept too */
	bool began = al_cas__reads_begin(c);
	assert_true(began);
	assert_int_equal(node_is(c, &a, "node a"), 0);
	al_cas__reads_end(c, began);
	overwrite(f->dir, &a, "spoilt", 6);
	assert_int_equal(node_is(c, &a, "node a"), 0);
	al_cas__release_memory(c);
	overwrite(f->dir, &a, "node a", 6);

	/* read from its own open batch, then rolled back: not kept */
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "new 1", 5, &n1, &err), 0);
	assert_int_equal(node_is(c, &n1, "new 1"), 0);
	al_cas_abort(c);
	assert_int_equal(node_is(c, &n1, "new 1"), AL_ENOTFOUND);
	/* read from a group's held objects, then aborted: not kept */
	assert_int_equal(al_cas__group(c, true, &err), 0);
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "new 2", 5, &n2, &err), 0);
	assert_int_equal(node_is(c, &n2, "new 2"), 0);
	al_cas_abort(c);
	assert_int_equal(al_cas__group(c, false, &err), 0);
	assert_int_equal(node_is(c, &n2, "new 2"), AL_ENOTFOUND);

	/* the sweep forgets what it kept (the deleted object among them) */
	assert_int_equal(node_is(c, &b, "node b"), 0);
	assert_int_equal(al_cas__sweep(c, &b, 1, NULL, NULL, NULL, &err), 0);
	assert_int_equal(node_is(c, &b, "node b"), AL_ENOTFOUND);
	/* and so does the collector's hold (gc.c sets it with gc.lock taken;
	 * here only its effect on the nodes kept) */
	assert_int_equal(node_is(c, &a, "node a"), 0);
	al_cas__sweeping(c, true);
	al_cas__sweeping(c, false);
	overwrite(f->dir, &a, "spoilt", 6);
	assert_int_equal(node_is(c, &a, "node a"), AL_ECORRUPT);
	overwrite(f->dir, &a, "node a", 6);
	assert_int_equal(node_is(c, &a, "node a"), 0);

	/* at most 1 MiB: 40 nodes of 40 KiB read, spoilt, read again */
	enum { N = 40, SZ = 40 * 1024 };
	struct al_oid big[N];
	uint8_t *p[N];
	assert_int_equal(al_cas_begin(c, &err), 0);
	for (int i = 0; i < N; i++) {
		p[i] = pattern(SZ, 100 + (unsigned)i);
		assert_int_equal(al_cas_put(c, p[i], SZ, &big[i], &err), 0);
	}
	assert_int_equal(al_cas_commit(c, &err), 0);
	for (int i = 0; i < N; i++) {
		const uint8_t *q;
		_cleanup_free_ uint8_t *owned = NULL;
		size_t len;
		assert_int_equal(al_cas__node(c, &big[i], &q, &len, &owned, &err), 0);
		assert_int_equal(len, SZ);
		assert_memory_equal(q, p[i], SZ);
	}
	int kept = 0;
	for (int i = 0; i < N; i++) {
		/* a raw copy, another object's bytes (whatever the encoding) */
		overwrite(f->dir, &big[i], "xx", 2);
		const uint8_t *q;
		_cleanup_free_ uint8_t *owned = NULL;
		size_t len;
		int r = al_cas__node(c, &big[i], &q, &len, &owned, &err);
		assert_true(r == 0 || r == AL_ECORRUPT);
		if (r == 0) {
			assert_memory_equal(q, p[i], SZ);
			assert_null(owned); /* the handle's */
			kept++;
		}
		free(p[i]);
	}
	assert_in_range(kept, 1, (1 << 20) / SZ);

	/* none over 64 KiB: given to the caller, not kept */
	al_cas__release_memory(c);
	struct al_oid huge;
	uint8_t *hp = pattern(65 * 1024, 7);
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, hp, 65 * 1024, &huge, &err), 0);
	assert_int_equal(al_cas_commit(c, &err), 0);
	const uint8_t *q;
	uint8_t *owned = NULL;
	size_t len;
	assert_int_equal(al_cas__node(c, &huge, &q, &len, &owned, &err), 0);
	assert_ptr_equal(q, owned);
	assert_memory_equal(q, hp, 65 * 1024);
	free(owned);
	overwrite(f->dir, &huge, "xx", 2);
	assert_int_equal(al_cas__node(c, &huge, &q, &len, &owned, &err), AL_ECORRUPT);
	free(hp);

	/* a read snapshot begun before the pin: begun again at the pin, so
	 * what was swept in between is neither answered nor kept */
	struct al_oid z;
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "node z", 6, &z, &err), 0);
	assert_int_equal(al_cas_commit(c, &err), 0);
	al_cas__release_memory(c);
	struct al_cas *gc = NULL;
	assert_int_equal(al_cas_open(f->dir, &gc, &err), 0);
	bool before = al_cas__reads_begin(c);
	assert_true(before);
	assert_int_equal(node_is(c, &a, "node a"), 0); /* the snapshot's first read */
	al_cas__sweeping(gc, true);
	assert_int_equal(al_cas__sweep(gc, &z, 1, NULL, NULL, NULL, &err), 0);
	al_cas__sweeping(gc, false);
	al_cas_close(gc);
	assert_int_equal(al_cas__pin(c, &err), 0);
	assert_int_equal(node_is(c, &z, "node z"), AL_ENOTFOUND);
	al_cas__reads_end(c, before);
	assert_int_equal(node_is(c, &z, "node z"), AL_ENOTFOUND);
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
	assert_false(al_cas__locked(f->cas));
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
	assert_true(al_cas__locked(f->cas));
	for (int i = 0; i < 600; i += 37) {
		assert_int_equal(al_cas_get(f->cas, &many[i], &buf, &len, &err), 0);
		free(buf);
	}
	assert_int_equal(al_cas_commit(f->cas, &err), 0);
	assert_false(al_cas__locked(f->cas));
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

/* How many files the store has under objects/ (loose objects) */
static unsigned object_files(const char *dir)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "find %s/objects -type f | wc -l", dir);
	FILE *f = popen(cmd, "r");
	unsigned n = 0;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &n), 1);
	pclose(f);
	return n;
}

/* A VFS over SQLite's own that keeps, for each file, whether bytes were
 * written to it since its last sync, by any connection (an fsync is the
 * file's, whoever calls it), and whether a WAL is synced while some
 * connection holds its database's write lock (the test is one thread, so
 * any holder is the syncing one or waits on it).  skip_syncs: syncs do
 * nothing, as for a writer that committed and has not synced yet;
 * fail_wal_syncs: that many syncs of a -wal fail; fail_db_syncs: syncs of
 * a database file fail. */
#define SHIM_FILES 8
static struct shim_state {
	char path[SHIM_FILES][256];
	bool dirty[SHIM_FILES];
	bool write_lock[SHIM_FILES]; /* a database's, by its slot */
	unsigned syncs;              /* syncs of a -wal */
	unsigned syncs_locked;       /* of them, made while its write lock was held */
	bool skip_syncs, fail_db_syncs;
	unsigned fail_wal_syncs;
	unsigned pass_wal_syncs; /* of a -wal, let these pass before failing */
	/* called once, when a checkpoint releases its lock (shm lock 1): the
	 * checkpoint is over and its caller has not yet returned */
	void (*on_checkpoint_end)(void);
	unsigned read_txns[SHIM_FILES]; /* read transactions begun, by database */
} shim;
static sqlite3_vfs shim_vfs, *real_vfs;

struct shim_file {
	sqlite3_file base;
	int slot;    /* shim.path's, or -1 */
	int db_slot; /* a -wal's: its database's slot, or -1 */
	sqlite3_file real[];
};
#define REAL(f) (((struct shim_file *)(f))->real)

static int shim_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int shim_read(sqlite3_file *f, void *p, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xRead(REAL(f), p, n, o);
}
static int shim_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 o)
{
	struct shim_file *s = (struct shim_file *)f;
	if (s->slot >= 0)
		shim.dirty[s->slot] = true;
	return REAL(f)->pMethods->xWrite(REAL(f), p, n, o);
}
static int shim_truncate(sqlite3_file *f, sqlite3_int64 n)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int shim_sync(sqlite3_file *f, int flags)
{
	struct shim_file *s = (struct shim_file *)f;
	if (shim.skip_syncs)
		return SQLITE_OK;
	bool wal = s->db_slot >= 0;
	if (wal && shim.fail_wal_syncs && shim.pass_wal_syncs)
		shim.pass_wal_syncs--;
	else if (wal && shim.fail_wal_syncs) {
		shim.fail_wal_syncs--;
		return SQLITE_IOERR_FSYNC;
	}
	if (!wal && shim.fail_db_syncs && s->slot >= 0 &&
	    !strchr(strrchr(shim.path[s->slot], '/'), '-')) /* not a -journal, -shm */
		return SQLITE_IOERR_FSYNC;
	int rc = REAL(f)->pMethods->xSync(REAL(f), flags);
	if (rc == SQLITE_OK && s->slot >= 0) {
		shim.dirty[s->slot] = false;
		if (wal) {
			shim.syncs++;
			shim.syncs_locked += shim.write_lock[s->db_slot];
		}
	}
	return rc;
}
static int shim_size(sqlite3_file *f, sqlite3_int64 *n)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), n);
}
static int shim_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int shim_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int shim_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int shim_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int shim_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int shim_caps(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int shim_shm_map(sqlite3_file *f, int i, int sz, int ext, void volatile **p)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), i, sz, ext, p);
}
/* The WAL's write lock is shm lock 0, taken through the database file */
static int shim_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	struct shim_file *s = (struct shim_file *)f;
	int rc = REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
	if (rc == SQLITE_OK && off == 0 && s->slot >= 0 && (flags & SQLITE_SHM_EXCLUSIVE))
		shim.write_lock[s->slot] = (flags & SQLITE_SHM_LOCK) != 0;
	/* a read transaction takes one of the WAL's read marks, locks 3-7 */
	if (rc == SQLITE_OK && off >= 3 && s->slot >= 0 &&
	    flags == (SQLITE_SHM_LOCK | SQLITE_SHM_SHARED))
		shim.read_txns[s->slot]++;
	if (rc == SQLITE_OK && off == 1 && n == 1 &&
	    flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE) && shim.on_checkpoint_end) {
		void (*hook)(void) = shim.on_checkpoint_end;
		shim.on_checkpoint_end = NULL;
		hook();
	}
	return rc;
}
static void shim_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int shim_shm_unmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int shim_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p)
{
	return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int shim_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}
static sqlite3_io_methods shim_io = {
	3,
	shim_close,
	shim_read,
	shim_write,
	shim_truncate,
	shim_sync,
	shim_size,
	shim_lock,
	shim_unlock,
	shim_reserved,
	shim_fcntl,
	shim_sector,
	shim_caps,
	shim_shm_map,
	shim_shm_lock,
	shim_shm_barrier,
	shim_shm_unmap,
	shim_fetch,
	shim_unfetch,
};

static int slot_of(const char *path, bool add)
{
	for (int i = 0; i < SHIM_FILES; i++)
		if (strcmp(shim.path[i], path) == 0)
			return i;
	for (int i = 0; add && i < SHIM_FILES; i++)
		if (!shim.path[i][0]) {
			snprintf(shim.path[i], sizeof(shim.path[i]), "%s", path);
			return i;
		}
	return -1;
}

static int shim_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)v;
	struct shim_file *s = (struct shim_file *)f;
	s->slot = name ? slot_of(name, true) : -1;
	s->db_slot = -1;
	if (name && (flags & SQLITE_OPEN_WAL)) {
		char db[256];
		snprintf(db, sizeof(db), "%.*s", (int)(strlen(name) - 4), name);
		s->db_slot = slot_of(db, true);
	}
	int rc = real_vfs->xOpen(real_vfs, name, s->real, flags, out);
	f->pMethods = rc == SQLITE_OK ? &shim_io : NULL;
	return rc;
}

static void shim_install(bool shm)
{
	memset(&shim, 0, sizeof(shim));
	real_vfs = sqlite3_vfs_find("unix");
	shim_vfs = *real_vfs;
	shim_vfs.zName = "airlock-test-shim";
	shim_vfs.szOsFile = (int)sizeof(struct shim_file) + real_vfs->szOsFile;
	shim_vfs.xOpen = shim_open;
	shim_io.iVersion = shm ? 3 : 1; /* version 1: no shared memory, so no WAL */
	assert_int_equal(sqlite3_vfs_register(&shim_vfs, 1), SQLITE_OK);
}

static void shim_remove(void)
{
	sqlite3_vfs_unregister(&shim_vfs);
	sqlite3_vfs_register(real_vfs, 1);
}

static bool wal_dirty(const char *dir)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/objects.db-wal", dir);
	int i = slot_of(p, false);
	assert_true(i >= 0);
	return shim.dirty[i];
}

/* objects.db's wake page's synced counter (a u64 at byte 256:
 * formats.md): read, or set to v */
static uint64_t wake_synced(const char *dir, const uint64_t *v)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/objects.db-wake", dir);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	uint64_t got = 0;
	if (v)
		assert_int_equal(pwrite(fd, v, sizeof(*v), 256), sizeof(*v));
	else
		assert_int_equal(pread(fd, &got, sizeof(got), 256), sizeof(got));
	close(fd);
	return v ? *v : got;
}

static int put_commit(struct al_cas *c, const char *str, struct al_oid *id);

/* A batch of one object committed by a writer that has not reached its
 * sync yet: its WAL is unsynced (shim.skip_syncs) and the wake page's
 * synced counter is as it was before the commit. */
static void unsynced_commit(const char *dir, struct al_cas *c, const char *str, struct al_oid *id)
{
	uint64_t before = wake_synced(dir, NULL);
	shim.skip_syncs = true;
	assert_int_equal(put_commit(c, str, id), 0);
	shim.skip_syncs = false;
	wake_synced(dir, &before);
}

/* A batch of one object, str, committed: al_cas_commit's answer, its
 * error in commit_err */
static struct al_error commit_err;
static int put_commit(struct al_cas *c, const char *str, struct al_oid *id)
{
	commit_err = (struct al_error){ 0 };
	assert_int_equal(al_cas_begin(c, &commit_err), 0);
	assert_int_equal(al_cas_put(c, str, strlen(str), id, &commit_err), 0);
	return al_cas_commit(c, &commit_err);
}

/* A store in a new directory through the shim (state): two handles, or
 * one where there is no WAL */
struct shim_fx {
	char dir[64];
	struct al_cas *a, *b;
};

static int shim_store(void **state, bool shm)
{
	struct shim_fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/airlock-cas-shim-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	shim_install(shm);
	if (al_cas_open(f->dir, &f->a, NULL) < 0 || (shm && al_cas_open(f->dir, &f->b, NULL) < 0))
		return -1;
	*state = f;
	return 0;
}

static int shim_setup(void **state)
{
	return shim_store(state, true);
}

static int shim_setup_no_wal(void **state)
{
	return shim_store(state, false);
}

static int shim_teardown(void **state)
{
	struct shim_fx *f = *state;
	al_cas_close(f->a);
	al_cas_close(f->b);
	shim_remove();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	int r = system(cmd);
	free(f);
	return r == 0 ? 0 : -1;
}

/* objects.db commits without a sync and syncs its WAL after, outside the
 * write lock; al_cas_commit returns with the batch durable.  A batch that
 * finds its object stored by a writer that has not synced yet syncs too,
 * so what it names is durable when it returns (unless every commit it can
 * see is synced already, by any connection: a new handle of a later
 * process finds the objects of an earlier one without a sync); so does a
 * sweep's commit before it removes files. */
static void test_commit_syncs_outside_lock(void **state)
{
	struct shim_fx *f = *state;
	struct al_cas *a = f->a, *b = f->b;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	assert_int_equal(al_cas__synchronous(a), 1); /* NORMAL: commits do not sync */
	assert_false(wal_dirty(dir));                /* but the schema's migrations did */
	struct al_oid x, y;
	/* (the test stays under the WAL's bound, 64 frames: a checkpoint
	 * there takes the write lock and syncs the WAL inside it) */

	/* the WAL's first commit syncs its header inside the lock, as SQLite
	 * does at every restart of the WAL; the commits after it do not */
	assert_int_equal(put_commit(a, "zeroth object", &x), 0);
	shim.syncs_locked = shim.syncs = 0;
	assert_int_equal(put_commit(a, "first object", &x), 0);
	assert_false(wal_dirty(dir));
	assert_int_equal(shim.syncs_locked, 0);
	assert_int_equal(shim.syncs, 1);

	/* a commits and has not synced when b finds its object */
	unsynced_commit(dir, a, "second object", &y);
	assert_true(wal_dirty(dir));
	assert_int_equal(put_commit(b, "second object", &y), 0);
	assert_false(wal_dirty(dir));
	/* found again with every commit synced since: nothing to sync */
	unsigned before = shim.syncs;
	assert_int_equal(put_commit(b, "second object", &y), 0);
	assert_int_equal(shim.syncs, before);
	/* after one, unsynced: b syncs again */
	unsynced_commit(dir, a, "fourth object", &y);
	assert_true(wal_dirty(dir));
	assert_int_equal(put_commit(b, "fourth object", &y), 0);
	assert_false(wal_dirty(dir));
	/* a new handle (a later process's) finds what a synced: no sync; what
	 * a has not synced: it syncs */
	assert_int_equal(put_commit(a, "fifth object", &y), 0);
	struct al_cas *c = NULL;
	assert_int_equal(al_cas_open(dir, &c, &err), 0);
	before = shim.syncs;
	assert_int_equal(put_commit(c, "fifth object", &y), 0);
	assert_int_equal(shim.syncs, before);
	al_cas_close(c);
	unsynced_commit(dir, a, "sixth object", &y);
	assert_int_equal(al_cas_open(dir, &c, &err), 0);
	assert_true(wal_dirty(dir));
	assert_int_equal(put_commit(c, "sixth object", &y), 0);
	assert_false(wal_dirty(dir));
	al_cas_close(c);

	/* a sweep's commit, before the files go */
	unsynced_commit(dir, a, "third object", &y);
	struct al_cas__sweep_stats st;
	assert_int_equal(al_cas__sweep(b, &x, 1, NULL, NULL, &st, &err), 0);
	assert_int_equal(st.objects, 1);
	assert_false(wal_dirty(dir));
	assert_int_equal(shim.syncs_locked, 0);
	assert_int_equal(al_cas_has(a, &x, &err), 0);
	assert_int_equal(al_cas_has(a, &y, &err), 1);

	/* a sweep whose sync fails removes no file: its rows may come back */
	size_t big = AL_CAS_LOOSE_MIN + 1000;
	uint8_t *p = pattern(big, 7);
	struct al_oid l;
	assert_int_equal(al_cas_begin(a, &err), 0);
	assert_int_equal(al_cas_put(a, p, big, &l, &err), 0);
	assert_int_equal(al_cas_commit(a, &err), 0);
	free(p);
	unsigned files = object_files(dir);
	assert_true(files >= 1);
	shim.fail_wal_syncs = 1;
	assert_int_equal(al_cas__sweep(b, &l, 1, NULL, NULL, &st, &err), AL_EIO);
	assert_int_equal(object_files(dir), files);
	assert_int_equal(al_cas__sweep(b, &l, 1, NULL, NULL, &st, &err), 0);
	assert_int_equal(object_files(dir), files - 1);
}

static off_t file_size(const char *dir, const char *name)
{
	char p[256];
	struct stat sb;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* A sync of the WAL that fails after its commit is visible: the commit
 * fails, and the WAL is copied into the database and synced there (the
 * bytes are in the page cache), emptied so that nothing is appended after
 * a frame that may be lost.  While that copy cannot be made, every commit
 * fails, whoever makes it, even one whose own sync succeeds. */
static void test_sync_failure(void **state)
{
	struct shim_fx *f = *state;
	struct al_cas *a = f->a, *b = f->b;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid x, y, z;
	char db[128];
	snprintf(db, sizeof(db), "%s/objects.db", dir);

	/* the copy succeeds: the commit failed, its object is durable */
	shim.fail_wal_syncs = 1;
	assert_int_equal(put_commit(a, "object x", &x), AL_EIO);
	assert_non_null(strstr(commit_err.msg, "objects.db-wal"));
	assert_int_equal(file_size(dir, "objects.db-wal"), 0);
	assert_false(shim.dirty[slot_of(db, false)]);
	assert_int_equal(al_cas_has(b, &x, &err), 1);

	/* the copy fails too: refused, by b as well, until it succeeds (a
	 * commit first: the WAL's first commit after it was emptied syncs its
	 * header inside the commit, which then fails whole) */
	assert_int_equal(put_commit(a, "object v", &z), 0);
	shim.fail_wal_syncs = 1;
	shim.fail_db_syncs = true;
	assert_int_equal(put_commit(a, "object y", &y), AL_EIO);
	assert_int_equal(put_commit(b, "object z", &z), AL_EIO);
	assert_non_null(strstr(commit_err.msg, "could not be copied"));
	assert_int_equal(put_commit(b, "object y", &y), AL_EIO); /* found stored */
	wake_synced(dir, &(uint64_t){ UINT64_MAX }); /* even with every commit said synced */
	assert_int_equal(put_commit(b, "object y", &y), AL_EIO);
	shim.fail_db_syncs = false;
	assert_int_equal(put_commit(b, "object z", &z), 0);
	assert_int_equal(file_size(dir, "objects.db-wal"), 0);
	assert_false(shim.dirty[slot_of(db, false)]);
	/* mended: commits sync as before */
	assert_int_equal(put_commit(a, "object w", &z), 0);
	assert_int_equal(al_cas_has(b, &y, &err), 1);
}

/* Where SQLite cannot keep a WAL (no shared memory), objects.db commits
 * sync as they go, and a batch still commits. */
static void test_commit_without_wal(void **state)
{
	struct shim_fx *f = *state;
	struct al_cas *a = f->a;
	const char *dir = f->dir;
	assert_int_equal(al_cas__synchronous(a), 2); /* FULL */
	struct al_oid x;
	for (int i = 0; i < 2; i++) /* a new row, then one found stored */
		assert_int_equal(put_commit(a, "an object", &x), 0);
	char p[128];
	snprintf(p, sizeof(p), "%s/objects.db", dir);
	assert_false(shim.dirty[slot_of(p, false)]);
	snprintf(p, sizeof(p), "%s/objects.db-wal", dir);
	assert_int_equal(slot_of(p, false), -1);
}

/* The wake page's word at byte 64: odd while a failed sync of the WAL is
 * not mended (formats.md) */
static uint32_t unsynced_word(const char *dir)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/objects.db-wake", dir);
	uint32_t v = 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &v, sizeof(v), 64), sizeof(v));
	close(fd);
	return v;
}

static bool unsynced_marked(const char *dir)
{
	return unsynced_word(dir) & 1;
}

/* A handle that cannot map objects.db's wake page cannot count its
 * commits there: it commits synced (FULL), so no other handle takes a
 * commit of its for synced before it is. */
static void test_unmapped_writer_syncs(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	char wake[128];
	snprintf(wake, sizeof(wake), "%s/objects.db-wake", dir);
	assert_int_equal(rename(wake, "/tmp/airlock-cas-wake-aside"), 0);
	assert_int_equal(mkdir(wake, 0700), 0); /* not a file: no page */
	struct al_cas *w = NULL;
	assert_int_equal(al_cas_open(dir, &w, &err), 0);
	assert_int_equal(al_cas__synchronous(w), 2); /* FULL */
	assert_int_equal(rmdir(wake), 0);
	assert_int_equal(rename("/tmp/airlock-cas-wake-aside", wake), 0);
	struct al_oid y;
	assert_int_equal(put_commit(w, "an unmapped writer's", &y), 0);
	assert_false(wal_dirty(dir)); /* synced in its commit */
	al_cas_close(w);
}

/* A wake page made anew (deleted with no airlock running, or an older
 * airlock's zeroes) knows of no sync: the first batch that finds an
 * object stored syncs, whoever wrote it; then the next need not. */
static void test_new_wake_page(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid y;
	unsynced_commit(dir, f->a, "a killed writer's", &y); /* and killed */
	al_cas_close(f->a);
	al_cas_close(f->b);
	f->a = f->b = NULL;
	char wake[128];
	snprintf(wake, sizeof(wake), "%s/objects.db-wake", dir);
	assert_int_equal(unlink(wake), 0);
	assert_int_equal(al_cas_open(dir, &f->a, &err), 0);
	assert_true(wal_dirty(dir));
	assert_int_equal(put_commit(f->a, "a killed writer's", &y), 0);
	assert_false(wal_dirty(dir));
	assert_int_equal(al_cas_open(dir, &f->b, &err), 0);
	unsigned before = shim.syncs;
	assert_int_equal(put_commit(f->b, "a killed writer's", &y), 0);
	assert_int_equal(shim.syncs, before);
}

/* n bytes that do not compress, the same for the same seed */
static uint8_t *noise(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n);
	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		p[i] = (uint8_t)seed;
	}
	return p;
}

/* A commit past the WAL's bound checkpoints it in its WAL hook, which
 * syncs the WAL first; when that sync fails, the commit's own sync after
 * it would succeed (the kernel reports a write-back error once per open
 * file): the failure is marked, and the WAL is copied into the database
 * (emptied) before the commit returns. */
static void test_checkpoint_sync_failure(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid id;
	/* a commit first: the WAL's first commit syncs its header inside the
	 * commit, which then fails whole (test_sync_failure) */
	assert_int_equal(put_commit(f->a, "a first commit", &id), 0);
	assert_int_equal(al_cas_begin(f->a, &err), 0);
	for (int j = 0; j < 6; j++) { /* 1.2 MB that does not compress, in one batch:
					 past the WAL's 1 MiB bound */
		uint8_t *p = noise(200 * 1024, 88172645463325252ull + (uint64_t)j);
		assert_int_equal(al_cas_put(f->a, p, 200 * 1024, &id, &err), 0);
		free(p);
	}
	shim.fail_wal_syncs = 1;
	if (al_cas_commit(f->a, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(shim.fail_wal_syncs, 0);              /* the checkpoint's sync failed */
	assert_int_equal(file_size(dir, "objects.db-wal"), 0); /* copied */
	assert_false(unsynced_marked(dir));                    /* and mended */
	assert_int_equal(al_cas_has(f->b, &id, &err), 1);
}

/* A writer killed before its sync left a WAL past what a restart keeps;
 * the next open copies it into the database, syncing the WAL first, and
 * that sync fails (the write-back error, reported once, to this file).
 * The failure is marked as any other failed sync of the WAL: a batch that
 * finds the killed writer's object then copies the WAL into the database
 * before it names it, or fails while it cannot. */
static void test_open_checkpoint_sync_failure(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid first, id;
	assert_int_equal(put_commit(f->a, "a first commit", &first), 0);
	al_cas_close(f->b);
	f->b = NULL;
	uint64_t synced = wake_synced(dir, NULL);
	al_cas__hold_checkpoints(f->a, true); /* as inside meta.db's lock */
	assert_int_equal(al_cas_begin(f->a, &err), 0);
	for (int j = 0; j < 12; j++) { /* 2.4 MB: past AL_SQLITE_WAL_KEEP */
		uint8_t *p = noise(200 * 1024, 88172645463325252ull + (uint64_t)j);
		assert_int_equal(al_cas_put(f->a, p, 200 * 1024, &id, &err), 0);
		free(p);
	}
	shim.skip_syncs = true; /* and killed before its sync */
	assert_int_equal(al_cas_commit(f->a, &err), 0);
	shim.skip_syncs = false;
	wake_synced(dir, &synced);
	al_cas_close(f->a);
	f->a = NULL;
	assert_true(file_size(dir, "objects.db-wal") > 2 * 1024 * 1024);
	assert_false(unsynced_marked(dir));

	shim.fail_wal_syncs = 1;
	assert_int_equal(al_cas_open(dir, &f->a, &err), 0);
	assert_int_equal(shim.fail_wal_syncs, 0); /* the open's checkpoint's sync failed */
	assert_true(unsynced_marked(dir));

	/* the killed writer's last object, found stored: while the database
	 * cannot be synced the batch fails, and then it copies first */
	uint8_t *p = noise(200 * 1024, 88172645463325252ull + 11);
	struct al_oid again;
	assert_int_equal(al_cas_begin(f->a, &err), 0);
	assert_int_equal(al_cas_put(f->a, p, 200 * 1024, &again, &err), 0);
	assert_true(al_oid_eq(&again, &id));
	shim.fail_db_syncs = true;
	assert_int_equal(al_cas_commit(f->a, &err), AL_EIO);
	shim.fail_db_syncs = false;
	assert_true(unsynced_marked(dir));
	assert_int_equal(al_cas_begin(f->a, &err), 0);
	assert_int_equal(al_cas_put(f->a, p, 200 * 1024, &again, &err), 0);
	assert_int_equal(al_cas_commit(f->a, &err), 0);
	free(p);
	assert_false(unsynced_marked(dir));
	assert_int_equal(file_size(dir, "objects.db-wal"), 0); /* copied */
	assert_int_equal(al_cas_open(dir, &f->b, &err), 0);
}

/* A copy that mends a failed sync clears only the failures it saw before
 * it began: another writer's, marked between the copy's end and the
 * clear (its commit went into the emptied WAL, its sync failed and so did
 * its own copy), stays marked, and commits keep failing until a copy
 * succeeds. */
static struct {
	struct shim_fx *f;
	struct al_oid z;
	int rc;
	bool marked;
} between;

static void commit_between(void)
{
	/* b's commit is the emptied WAL's first, which syncs its header in
	 * the commit (that passes); then b's sync of the WAL fails, and so
	 * does its copy (the database's sync) */
	shim.pass_wal_syncs = 1;
	shim.fail_wal_syncs = 1;
	shim.fail_db_syncs = true;
	between.rc = put_commit(between.f->b, "b's object, whose sync failed", &between.z);
	shim.fail_db_syncs = false;
	shim.fail_wal_syncs = shim.pass_wal_syncs = 0;
	between.marked = unsynced_marked(between.f->dir);
}

/* a's sync fails, and its copy: marked, commits refused; then a's next
 * commit copies (and mends), and hook runs between the copy's end and
 * a's clear, where b's commit fails (between) */
static void mend_with(struct shim_fx *f, void (*hook)(void))
{
	struct al_oid x, y;
	assert_int_equal(put_commit(f->a, "a first commit", &x), 0);
	shim.fail_wal_syncs = 1;
	shim.fail_db_syncs = true;
	assert_int_equal(put_commit(f->a, "object x", &x), AL_EIO);
	shim.fail_db_syncs = false;
	assert_true(unsynced_marked(f->dir));
	between.f = f;
	shim.on_checkpoint_end = hook;
	assert_int_equal(put_commit(f->a, "object y", &y), 0);
	assert_null(shim.on_checkpoint_end); /* it ran */
	assert_int_equal(between.rc, AL_EIO);
	assert_true(between.marked);
}

static void test_unsynced_clear_keeps_later(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid w;
	mend_with(f, commit_between);
	assert_true(unsynced_marked(dir)); /* b's failure stays */
	assert_int_equal(al_cas_has(f->a, &between.z, &err), 1);
	/* while the database cannot be synced, commits fail, a new object or
	 * b's found stored */
	shim.fail_db_syncs = true;
	assert_int_equal(put_commit(f->a, "an unrelated object", &w), AL_EIO);
	assert_int_equal(put_commit(f->a, "b's object, whose sync failed", &between.z), AL_EIO);
	shim.fail_db_syncs = false;
	assert_int_equal(put_commit(f->a, "b's object, whose sync failed", &between.z), 0);
	assert_false(unsynced_marked(dir));
	assert_int_equal(file_size(dir, "objects.db-wal"), 0);
}

/* The same, when the word has been cleared in between: a read it marked
 * before its copy; between the copy's end and a's clear, b mends it (its
 * own copy clears it), then b's next sync fails and so does its copy,
 * marking it again.  A word back at the value a read would let a's clear
 * erase b's failure, whose frames a's copy never saw: every mark and
 * clear moves it to a value it never had. */
static void commit_mend_then_fail(void)
{
	struct al_oid o;
	between.rc = put_commit(between.f->b, "b's commit, which mends", &o);
	between.marked = unsynced_marked(between.f->dir);
	assert_int_equal(between.rc, 0);
	assert_false(between.marked);
	commit_between();
}

static void test_unsynced_clear_after_clear(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_oid w;
	uint32_t before = unsynced_word(dir);
	mend_with(f, commit_mend_then_fail);
	assert_true(unsynced_marked(dir));                /* b's second failure stays */
	assert_int_equal(unsynced_word(dir), before + 3); /* marked, cleared, marked again */
	shim.fail_db_syncs = true;
	assert_int_equal(put_commit(f->a, "an unrelated object", &w), AL_EIO);
	shim.fail_db_syncs = false;
	assert_int_equal(put_commit(f->a, "an unrelated object", &w), 0);
	assert_false(unsynced_marked(dir));
}

/* A migration at open commits synced whatever the connection does; when
 * that sync fails the open fails, and the failure is marked as any other
 * failed sync of the WAL (it was the write-back error of frames another
 * writer committed before, reported once). */
static void test_migration_sync_failure(void **state)
{
	struct shim_fx *f = *state;
	const char *dir = f->dir;
	struct al_error err = { 0 };
	struct al_oid x;
	assert_int_equal(put_commit(f->a, "an object", &x), 0);
	al_cas_close(f->a);
	al_cas_close(f->b);
	f->a = f->b = NULL;
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", dir);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=1", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_false(unsynced_marked(dir));
	shim.fail_wal_syncs = 1;
	assert_true(al_cas_open(dir, &f->a, &err) < 0);
	assert_int_equal(shim.fail_wal_syncs, 0);
	assert_true(unsynced_marked(dir));
	assert_int_equal(al_cas_open(dir, &f->a, &err), 0); /* migrated now */
	assert_int_equal(put_commit(f->a, "an object", &x), 0);
	assert_false(unsynced_marked(dir)); /* its sync copied first */
	assert_int_equal(al_cas_open(dir, &f->b, &err), 0);
}

static int raw_row(const char *dir, const char *data, struct al_oid *id)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", dir);
	al_sha256(data, strlen(data), id->b);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "INSERT INTO objects(id, size, enc, data) "
					    "VALUES (?, ?, 0, ?)",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_blob(st, 1, id->b, AL_OID_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)strlen(data));
	sqlite3_bind_blob(st, 3, data, (int)strlen(data), SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* al_manifest_changes reads in one read transaction of objects.db (each
 * lookup outside one is its own, and SQLite empties the page cache at
 * each after another connection's commit), begun again every 256
 * lookups; a write of the handle's own ends it first. */
static void test_diff_one_read(void **state)
{
	struct shim_fx *f = *state;
	struct al_cas *c = f->a;
	struct al_error err = { 0 };
	int slot = -1;
	char path[128];
	snprintf(path, sizeof(path), "%s/objects.db", f->dir);
	slot = slot_of(path, false);
	assert_true(slot >= 0);

	enum { N = 300 };
	assert_int_equal(al_cas_begin(c, &err), 0);
	struct al_oid a = dirs_tree(c, N, 1), b = dirs_tree(c, N, 2);
	assert_int_equal(al_cas_commit(c, &err), 0);
	al_cas__release_memory(c); /* unpinned: every node a lookup */

	/* 2 roots and 2 x 300 directories: 602 lookups, 3 transactions */
	struct al_changes ch;
	shim.read_txns[slot] = 0;
	assert_int_equal(al_manifest_changes(c, &a, &b, &ch, &err), 0);
	assert_int_equal(ch.n, N);
	al_changes_release(&ch);
	assert_in_range(shim.read_txns[slot], 1, 4);
	shim.read_txns[slot] = 0;
	assert_int_equal(al_manifest_changes(c, &b, &b, &ch, &err), 0);
	assert_int_equal(ch.n, 0);
	assert_in_range(shim.read_txns[slot], 1, 2);

	/* the snapshot is begun again every 256 lookups */
	uint8_t *out;
	size_t len;
	struct al_oid later;
	bool began = al_cas__reads_begin(c);
	assert_true(began);
	assert_false(al_cas__reads_begin(c)); /* one at a time */
	assert_int_equal(al_cas_get(c, &a, &out, &len, &err), 0);
	free(out);
	assert_int_equal(raw_row(f->dir, "committed meanwhile", &later), 0);
	assert_int_equal(al_cas_get(c, &later, &out, &len, &err), AL_ENOTFOUND);
	int seen_at = 0;
	for (int i = 3; i <= 300 && !seen_at; i++)
		if (al_cas_get(c, &later, &out, &len, &err) == 0) {
			free(out);
			seen_at = i;
		}
	assert_in_range(seen_at, 3, 256);
	al_cas__reads_end(c, began);

	/* a write of its own inside ends it first */
	struct al_oid d;
	began = al_cas__reads_begin(c);
	assert_true(began);
	assert_int_equal(al_cas_get(c, &a, &out, &len, &err), 0);
	free(out);
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "written inside", 14, &d, &err), 0);
	assert_int_equal(al_cas_commit(c, &err), 0);
	al_cas__reads_end(c, began);
	assert_int_equal(al_cas_get(f->b, &d, &out, &len, &err), 0);
	free(out);
	/* inside a transaction of its own: none begun */
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_put(c, "another", 7, &d, &err), 0);
	assert_false(al_cas__reads_begin(c));
	assert_int_equal(al_cas_commit(c, &err), 0);
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
		cmocka_unit_test_setup_teardown(test_node_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit_syncs_outside_lock, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_commit_without_wal, shim_setup_no_wal,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_sync_failure, shim_setup, shim_teardown),
		cmocka_unit_test_setup_teardown(test_unmapped_writer_syncs, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_new_wake_page, shim_setup, shim_teardown),
		cmocka_unit_test_setup_teardown(test_diff_one_read, shim_setup, shim_teardown),
		cmocka_unit_test_setup_teardown(test_open_checkpoint_sync_failure, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_unsynced_clear_keeps_later, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_unsynced_clear_after_clear, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_migration_sync_failure, shim_setup,
						shim_teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_sync_failure, shim_setup,
						shim_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
