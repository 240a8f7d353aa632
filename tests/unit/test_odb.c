/* odb: one conformance suite for every object backend (odb_backend.h), the
 * remote tier behind the local store (cas_private.h), and the S3 URL's
 * parsing.  The local ("sqlite") backend always runs; the S3 backend runs
 * when AIRLOCK_TEST_S3 names a bucket (s3://…, credentials in the
 * environment), as tests/integration/t0140-s3-odb.sh does against a real
 * Swift; AIRLOCK_TEST_S3_NETRC then lets the suite corrupt an object behind
 * the backend's back with curl.  AIRLOCK_TEST_S3_HOSTILE (an endpoint:
 * tests/servers/hostile-s3.py) runs the caps against a hostile server.
 * AIRLOCK_TEST_PG (a service role's postgres:// URL, the schema migrated)
 * runs it against the small objects kept in the database, and with
 * AIRLOCK_TEST_S3 too against the tier of both (t0156). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/odb_backend.h"
#include "backend/odb_common.h"
#include "backend/s3/s3_private.h"
#include "cas_private.h"
#include "store_private.h"
#include "util.h"
#include "fixture.h"

enum kind { SQLITE, S3, PG, TIER };
#define TIER_MAX 4096 /* the tier's threshold here: objects of both sides in every test */

struct fx {
	enum kind kind;
	char dir[64];
	char tenant[32];
	struct al_odb_backend *b;
};

static void tmpdir(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/airlock-odb-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void rmdir_r(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void random_tenant(char *out, size_t n)
{
	uint8_t r[6];
	assert_int_equal(getrandom(r, sizeof(r), 0), (ssize_t)sizeof(r));
	char hex[13];
	al_hex(r, sizeof(r), hex);
	snprintf(out, n, "t%s", hex);
}

static int open_backend(struct fx *f, const char *tenant, struct al_odb_backend **out)
{
	struct al_error err = { 0 };
	if (f->kind == SQLITE) {
		char dir[128];
		snprintf(dir, sizeof(dir), "%s/%s", f->dir, tenant);
		mkdir(dir, 0700);
		return al_odb_sqlite_open(dir, out, &err);
	}
	if (f->kind == PG) {
		int r = al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), tenant, AL_ODB_INLINE_CAP, 0, out,
				       &err);
		if (r < 0)
			print_error("open pg: %s\n", err.msg);
		return r;
	}
	struct al_s3_config cfg;
	int r = al_s3_config_parse(getenv("AIRLOCK_TEST_S3"), &cfg, &err);
	cfg.list_page = 3; /* listings of several pages (continuation tokens) */
	if (r == 0)
		r = al_odb_s3_open(&cfg, tenant, out, &err);
	if (r < 0)
		print_error("open s3: %s\n", err.msg);
	if (r < 0 || f->kind != TIER)
		return r;
	struct al_odb_backend *small = NULL;
	if ((r = al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), tenant, TIER_MAX, 0, &small, &err)) <
	    0) {
		print_error("open pg: %s\n", err.msg);
		al_odb_backend_free(*out);
		return r;
	}
	return al_odb_tier_open(small, *out, TIER_MAX, out, &err);
}

static int setup_kind(void **state, enum kind kind)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->kind = kind;
	tmpdir(f->dir, sizeof(f->dir));
	random_tenant(f->tenant, sizeof(f->tenant));
	if (open_backend(f, f->tenant, &f->b) < 0)
		return -1;
	*state = f;
	return 0;
}

static int setup_sqlite(void **state)
{
	return setup_kind(state, SQLITE);
}

static int setup_s3(void **state)
{
	return setup_kind(state, S3);
}

static int setup_pg(void **state)
{
	return setup_kind(state, PG);
}

static int setup_tier(void **state)
{
	return setup_kind(state, TIER);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	al_odb_backend_free(f->b);
	rmdir_r(f->dir);
	free(f);
	return 0;
}

static uint8_t *pattern(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		p[i] = (i % 3) ? (uint8_t)x : (uint8_t)'a' + (uint8_t)(i % 7);
	}
	return p;
}

/* Replace the stored bytes of id by other bytes, behind the backend. */
static void corrupt(struct fx *f, const struct al_oid *id)
{
	char hex[2 * AL_OID_LEN + 1];
	al_hex(id->b, AL_OID_LEN, hex);
	char cmd[2048];
	if (f->kind == PG || f->kind == TIER) {
		/* the row's bytes, where there is one (the tier's large objects
		 * are in the bucket: below) */
		snprintf(
			cmd, sizeof(cmd),
			"psql -qtAX '%s' -c \"SET airlock.tenant = '%s'\" -c \"UPDATE blobs_inline "
			"SET bytes = 'not the object' WHERE id = '\\x%s' RETURNING 1\" | grep -q 1",
			getenv("AIRLOCK_TEST_PG"), f->tenant, hex);
		if (system(cmd) == 0 || f->kind == PG)
			return;
	}
	if (f->kind == SQLITE) {
		snprintf(cmd, sizeof(cmd),
			 "sqlite3 %s/%s/objects.db \"UPDATE objects SET enc = 0, data = "
			 "zeroblob(size) WHERE hex(id) = upper('%s')\"",
			 f->dir, f->tenant, hex);
	} else {
		struct al_s3_config cfg;
		assert_int_equal(al_s3_config_parse(getenv("AIRLOCK_TEST_S3"), &cfg, NULL), 0);
		const char *netrc = getenv("AIRLOCK_TEST_S3_NETRC");
		assert_non_null(netrc);
		/* other bytes under the same key: a valid PUT of different content */
		snprintf(cmd, sizeof(cmd),
			 "printf 'not the object' >%s/bad && curl -sf -o /dev/null --netrc-file %s "
			 "--aws-sigv4 aws:amz:%s:s3 -H \"x-amz-content-sha256: $(sha256sum "
			 "<%s/bad | cut -c1-64)\" -T %s/bad %s/%s/%s%s%s/%s",
			 f->dir, netrc, cfg.region, f->dir, f->dir, cfg.endpoint, cfg.bucket,
			 cfg.prefix, cfg.prefix[0] ? "/" : "", f->tenant, hex);
	}
	assert_int_equal(system(cmd), 0);
}

static void test_roundtrip(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	/* empty, small, and larger than the local store's loose threshold */
	size_t sizes[] = { 0, 1, 4000, AL_CAS_LOOSE_MIN + 12345 };
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		_cleanup_free_ uint8_t *p = pattern(sizes[i], (unsigned)i + 1);
		struct al_oid id, want;
		al_sha256(p, sizes[i], want.b);
		assert_int_equal(f->b->exists(f->b, &want, &err), 0);
		assert_int_equal(al_odb_write_buf(f->b, p, sizes[i], &id, &err), 0);
		assert_true(al_oid_eq(&id, &want));
		assert_int_equal(f->b->exists(f->b, &id, &err), 1);
		uint64_t size = 7;
		assert_int_equal(f->b->read_header(f->b, &id, &size, &err), 0);
		assert_int_equal(size, sizes[i]);
		_cleanup_free_ uint8_t *back = NULL;
		size_t len = 0;
		assert_int_equal(al_odb_read_all(f->b, &id, &back, &len, &err), 0);
		assert_int_equal(len, sizes[i]);
		if (len)
			assert_memory_equal(back, p, len);
	}
}

static void test_absent(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid id;
	al_sha256("never stored", 12, id.b);
	assert_int_equal(f->b->exists(f->b, &id, &err), 0);
	uint64_t size;
	assert_int_equal(f->b->read_header(f->b, &id, &size, &err), AL_ENOTFOUND);
	uint8_t *p = NULL;
	size_t len;
	assert_int_equal(al_odb_read_all(f->b, &id, &p, &len, &err), AL_ENOTFOUND);
	assert_null(p);
}

static int count_fn(void *ctx, const struct al_oid *id, uint64_t size, struct al_error *err)
{
	(void)id, (void)size, (void)err;
	(*(int *)ctx)++;
	return 0;
}

struct walk {
	struct al_oid ids[4];
	uint64_t sizes[4];
	int seen[4], other;
};

static int walk_fn(void *ctx, const struct al_oid *id, uint64_t size, struct al_error *err)
{
	(void)err;
	struct walk *w = ctx;
	for (int i = 0; i < 4; i++)
		if (al_oid_eq(id, &w->ids[i])) {
			w->seen[i]++;
			assert_int_equal(size, w->sizes[i]);
			return 0;
		}
	w->other++;
	return 0;
}

static void test_idempotent_and_foreach(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct walk w = { 0 };
	for (int i = 0; i < 4; i++) {
		size_t n = 100 + (size_t)i * 1000;
		_cleanup_free_ uint8_t *p = pattern(n, 40 + (unsigned)i);
		assert_int_equal(al_odb_write_buf(f->b, p, n, &w.ids[i], &err), 0);
		/* again: the same name, the same bytes; no error, no second copy */
		assert_int_equal(al_odb_write_buf(f->b, p, n, &w.ids[i], &err), 0);
		w.sizes[i] = n;
	}
	assert_int_equal(f->b->foreach(f->b, walk_fn, &w, &err), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(w.seen[i], 1);
	assert_int_equal(w.other, 0);
}

static void test_tenants_apart(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	char other[32];
	random_tenant(other, sizeof(other));
	struct al_odb_backend *b2 = NULL;
	assert_int_equal(open_backend(f, other, &b2), 0);
	struct al_oid id;
	assert_int_equal(al_odb_write_buf(f->b, "mine", 4, &id, &err), 0);
	assert_int_equal(b2->exists(b2, &id, &err), 0);
	int n = 0;
	assert_int_equal(b2->foreach(b2, count_fn, &n, &err), 0);
	assert_int_equal(n, 0);
	uint8_t *p = NULL;
	size_t len;
	assert_int_equal(al_odb_read_all(b2, &id, &p, &len, &err), AL_ENOTFOUND);
	al_odb_backend_free(b2);
}

struct src {
	const uint8_t *p;
	size_t len, pos;
};

static int64_t src_read(void *ctx, void *buf, size_t n, struct al_error *err)
{
	(void)err;
	struct src *s = ctx;
	size_t k = s->len - s->pos < n ? s->len - s->pos : n;
	memcpy(buf, s->p + s->pos, k);
	s->pos += k;
	return (int64_t)k;
}

static void test_write_refuses_wrong_bytes(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	size_t sizes[] = { 10, AL_CAS_LOOSE_MIN + 5 };
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		_cleanup_free_ uint8_t *p = pattern(sizes[i], 77 + (unsigned)i);
		struct al_oid id;
		al_sha256(p, sizes[i], id.b);
		p[sizes[i] / 2] ^= 1; /* the bytes no longer hash to id */
		struct src s = { p, sizes[i], 0 };
		int r = f->b->write(f->b, &id, sizes[i], src_read, &s, &err);
		assert_int_equal(r, AL_ECORRUPT);
		assert_int_equal(f->b->exists(f->b, &id, &err), 0);
		/* a source shorter than announced */
		p[sizes[i] / 2] ^= 1;
		struct src shorter = { p, sizes[i] - 1, 0 };
		r = f->b->write(f->b, &id, sizes[i], src_read, &shorter, &err);
		assert_true(r == AL_EINVAL || r == AL_ECORRUPT);
		assert_int_equal(f->b->exists(f->b, &id, &err), 0);
	}
}

/* write_many's objects: 40 buffers, one of them (bad) with a flipped byte */
struct many {
	uint8_t *p[40];
	size_t len[40];
	struct al_oid ids[40];
	struct src srcs[40];
	int open_now, open_max, opens, bad;
};

static int many_open(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		     struct al_error *err)
{
	(void)err;
	struct many *m = ctx;
	size_t i = 0; /* by value: a backend may pass a copy of the id */
	while (i < 40 && !al_oid_eq(&m->ids[i], id))
		i++;
	assert_true(i < 40);
	m->srcs[i] = (struct src){ m->p[i], m->len[i], 0 };
	*size = m->len[i];
	*src = &m->srcs[i];
	m->opens++;
	if (++m->open_now > m->open_max)
		m->open_max = m->open_now;
	return 0;
}

static int64_t many_read(void *ctx, void *buf, size_t n, struct al_error *err)
{
	return src_read(ctx, buf, n, err);
}

static struct many *many_ctx;
static void many_close(void *src)
{
	(void)src;
	many_ctx->open_now--;
}

static void test_write_many(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct many m = { 0 };
	many_ctx = &m;
	for (unsigned i = 0; i < 40; i++) {
		m.len[i] = i == 7 ? AL_CAS_LOOSE_MIN + 99 : 50 + i * 13;
		m.p[i] = pattern(m.len[i], 900 + i);
		al_sha256(m.p[i], m.len[i], m.ids[i].b);
	}
	/* one is stored already: writing it again is harmless */
	struct al_oid pre;
	assert_int_equal(al_odb_write_buf(f->b, m.p[3], m.len[3], &pre, &err), 0);
	const struct al_odb_objects objs = { many_open, many_read, many_close, &m };
	assert_int_equal(al_odb_write_many(f->b, m.ids, 40, &objs, &err), 0);
	assert_int_equal(m.open_now, 0); /* every source opened was closed */
	/* the tier opens each to learn its size, and the large one again
	 * for the bucket */
	assert_int_equal(m.opens, f->kind == TIER ? 41 : 40);
	/* the S3 backend uploads several at once, within its bound; the local
	 * store and the database one after another */
	if (f->kind == S3)
		assert_true(m.open_max > 1 && m.open_max <= 8);
	else
		assert_int_equal(m.open_max, 1);
	for (unsigned i = 0; i < 40; i++) {
		_cleanup_free_ uint8_t *back = NULL;
		size_t len = 0;
		assert_int_equal(al_odb_read_all(f->b, &m.ids[i], &back, &len, &err), 0);
		assert_int_equal(len, m.len[i]);
		assert_memory_equal(back, m.p[i], len);
	}
	/* a batch with one object whose bytes are not its id fails as a whole,
	 * and that object is not stored */
	struct many bad = m;
	for (unsigned i = 0; i < 40; i++) {
		bad.p[i] = pattern(m.len[i], 2000 + i);
		al_sha256(bad.p[i], bad.len[i], bad.ids[i].b);
	}
	bad.p[20][0] ^= 1;
	bad.open_now = bad.open_max = bad.opens = 0;
	many_ctx = &bad;
	const struct al_odb_objects bobjs = { many_open, many_read, many_close, &bad };
	assert_int_equal(al_odb_write_many(f->b, bad.ids, 40, &bobjs, &err), AL_ECORRUPT);
	assert_int_equal(bad.open_now, 0);
	assert_int_equal(f->b->exists(f->b, &bad.ids[20], &err), 0);
	for (unsigned i = 0; i < 40; i++) {
		free(m.p[i]);
		free(bad.p[i]);
	}
}

struct sweep_fx {
	struct al_oid keep;      /* what keep claims */
	struct al_oid doomed[4]; /* what doomed was told */
	size_t ndoomed, calls;
	bool refuse; /* doomed fails */
};

static bool keep_first(void *ctx, const struct al_oid *id)
{
	return al_oid_eq(&((struct sweep_fx *)ctx)->keep, id);
}

static int doomed_note(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err)
{
	struct sweep_fx *x = ctx;
	x->calls++;
	for (size_t i = 0; i < n && x->ndoomed < 4; i++)
		x->doomed[x->ndoomed++] = ids[i];
	return x->refuse ? al_fail(err, AL_EIO, 0, "not recorded") : 0;
}

static bool told(const struct sweep_fx *x, const struct al_oid *id)
{
	for (size_t i = 0; i < x->ndoomed; i++)
		if (al_oid_eq(&x->doomed[i], id))
			return true;
	return false;
}

/* The sweep's rule on n objects (ids[0] claimed by keep, the others of
 * `bytes` bytes in all): none goes while all are young; a dry run counts,
 * deletes and tells nothing; a refusing doomed leaves everything; then
 * doomed is told the n - 1 once and they go, ids[0] stays. */
static void sweep_sequence(struct fx *f, const struct al_oid *ids, size_t n, uint64_t bytes)
{
	struct al_error err = { 0 };
	struct al_odb_sweep s;
	struct sweep_fx x = { .keep = ids[0] };
	assert_int_equal(
		f->b->sweep(f->b, keep_first, doomed_note, &x, al_wall_s() - 3600, false, &s, &err),
		0);
	assert_int_equal(s.objects, 0);
	assert_int_equal(s.young, n - 1);
	assert_int_equal(x.calls, 0);
	assert_int_equal(
		f->b->sweep(f->b, keep_first, doomed_note, &x, al_wall_s() + 3600, true, &s, &err),
		0);
	assert_int_equal(s.objects, n - 1);
	assert_int_equal(s.bytes, bytes);
	assert_int_equal(x.calls, 0);
	x.refuse = true;
	assert_int_equal(
		f->b->sweep(f->b, keep_first, doomed_note, &x, al_wall_s() + 3600, false, &s, &err),
		AL_EIO);
	assert_non_null(strstr(err.msg, "not recorded"));
	for (size_t i = 0; i < n; i++)
		assert_int_equal(f->b->exists(f->b, &ids[i], &err), 1);
	x = (struct sweep_fx){ .keep = ids[0] };
	assert_int_equal(
		f->b->sweep(f->b, keep_first, doomed_note, &x, al_wall_s() + 3600, false, &s, &err),
		0);
	assert_int_equal(s.objects, n - 1);
	assert_int_equal(x.calls, 1);
	assert_int_equal(x.ndoomed, n - 1);
	for (size_t i = 1; i < n; i++)
		assert_true(told(&x, &ids[i]));
	assert_int_equal(f->b->exists(f->b, &ids[0], &err), 1);
	for (size_t i = 1; i < n; i++)
		assert_int_equal(f->b->exists(f->b, &ids[i], &err), 0);
}

/* sweep: what keep claims stays; of the rest, only what is older than
 * `before` goes, and doomed is told all of it before the first delete (a
 * failure there deletes nothing); the local store has no sweep of its own
 * (gc.c's) */
static void test_sweep(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	if (f->kind == SQLITE) {
		assert_null(f->b->sweep);
		return;
	}
	struct al_oid ids[3];
	for (unsigned i = 0; i < 3; i++) {
		_cleanup_free_ uint8_t *p = pattern(100 + i, 3000 + i);
		assert_int_equal(al_odb_write_buf(f->b, p, 100 + i, &ids[i], &err), 0);
	}
	sweep_sequence(f, ids, 3, 101 + 102);
}

/* An S3 backend freed is parked with its connections (the daemon opens one
 * per request and per run): the next open with the same configuration
 * takes it back, with its own tenant's keys; one in use, or another
 * configuration, gets a backend of its own. */
static void test_pool(void **state)
{
	struct fx *f = *state;
	if (f->kind != S3)
		return;
	struct al_error err = { 0 };
	struct al_odb_backend *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	char ta[16], tb[16];
	random_tenant(ta, sizeof(ta));
	random_tenant(tb, sizeof(tb));
	assert_int_equal(open_backend(f, ta, &a), 0);
	struct al_oid id;
	assert_int_equal(al_odb_write_buf(a, "pooled", 6, &id, &err), 0);
	uintptr_t parked = (uintptr_t)a;
	al_odb_backend_free(a);
	assert_int_equal(open_backend(f, tb, &b), 0);
	assert_true((uintptr_t)b == parked);
	uint64_t before = al_odb_s3__connects(b);
	assert_true(before >= 1);
	assert_int_equal(b->exists(b, &id, &err), 0);     /* tenant tb's keys, not ta's */
	assert_int_equal(al_odb_s3__connects(b), before); /* on the kept connection */
	assert_int_equal(open_backend(f, ta, &c), 0);
	assert_true(c != b);
	assert_int_equal(c->exists(c, &id, &err), 1);
	al_odb_backend_free(b);
	struct al_s3_config cfg;
	assert_int_equal(al_s3_config_parse(getenv("AIRLOCK_TEST_S3"), &cfg, &err), 0);
	cfg.list_page = 4;
	assert_int_equal(al_odb_s3_open(&cfg, ta, &d, &err), 0);
	assert_true((uintptr_t)d != parked);
	assert_int_equal(d->exists(d, &id, &err), 1);
	al_odb_backend_free(c);
	al_odb_backend_free(d);
}

static void test_read_verifies(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	_cleanup_free_ uint8_t *p = pattern(5000, 9);
	struct al_oid id;
	assert_int_equal(al_odb_write_buf(f->b, p, 5000, &id, &err), 0);
	corrupt(f, &id);
	uint8_t *back = NULL;
	size_t len;
	assert_int_equal(al_odb_read_all(f->b, &id, &back, &len, &err), AL_ECORRUPT);
	assert_null(back);
	assert_non_null(strstr(err.msg, "corrupt"));
	if (f->kind == PG) {
		/* a row that is not its object is no copy of it: not there, not
		 * listed (so a sync writes it again), its size not answered */
		uint64_t size = 0;
		int n = 0;
		assert_int_equal(f->b->exists(f->b, &id, &err), 0);
		assert_int_equal(f->b->read_header(f->b, &id, &size, &err), AL_ECORRUPT);
		assert_int_equal(f->b->foreach(f->b, count_fn, &n, &err), 0);
		assert_int_equal(n, 0);
	}
	/* writing the object again repairs it: the name is the content */
	if (f->kind != SQLITE) {
		assert_int_equal(al_odb_write_buf(f->b, p, 5000, &id, &err), 0);
		assert_int_equal(al_odb_read_all(f->b, &id, &back, &len, &err), 0);
		assert_memory_equal(back, p, 5000);
		free(back);
	}
}

/* ---- the remote tier: a local store with a remote behind it -------------------- */

/* A remote that refuses every write (the tier's error path). */
struct refusing {
	struct al_odb_backend base;
	struct al_odb_backend *inner;
};
static int refuse_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
			al_odb_source src, void *ctx, struct al_error *err)
{
	(void)b, (void)id, (void)size, (void)src, (void)ctx;
	return al_fail(err, AL_EIO, 0, "remote down");
}
static int pass_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	struct al_odb_backend *in = ((struct refusing *)b)->inner;
	return in->exists(in, id, err);
}
static void refusing_free(struct al_odb_backend *b)
{
	al_odb_backend_free(((struct refusing *)b)->inner);
	free(b);
}

struct tier {
	char dir[64];
	struct al_odb_backend *remote_view; /* the remote, opened separately */
};

static struct al_cas *tier_open(struct tier *t, const char *name)
{
	char d[128];
	snprintf(d, sizeof(d), "%s/%s", t->dir, name);
	mkdir(d, 0700);
	struct al_cas *c = NULL;
	assert_int_equal(al_cas_open(d, &c, NULL), 0);
	struct al_odb_backend *remote = NULL;
	snprintf(d, sizeof(d), "%s/remote", t->dir);
	mkdir(d, 0700);
	assert_int_equal(al_odb_sqlite_open(d, &remote, NULL), 0);
	al_cas__set_remote(c, remote);
	return c;
}

/* One small object stored by a node "node-a" (and so pushed to the
 * remote), the node closed: its id. */
static struct al_oid stored_by_a(struct tier *t, const char *data)
{
	struct al_error err = { 0 };
	struct al_cas *a = tier_open(t, "node-a");
	struct al_oid id;
	assert_int_equal(al_cas_begin(a, &err), 0);
	assert_int_equal(al_cas_put(a, data, strlen(data), &id, &err), 0);
	assert_int_equal(al_cas_commit(a, &err), 0);
	al_cas_close(a);
	return id;
}

/* A diff of trees this node has not got fetches their nodes from the
 * remote inside its read transaction (al_cas__reads_begin): the fetch's
 * write ends it first.  Outside a batch the fetched nodes are kept; inside
 * one they join the batch, and its abort takes them back, from memory
 * too; inside a group they are kept once it commits. */
static void test_tier_diff_fetches(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_cas *a = tier_open(&t, "node-a");
	assert_int_equal(al_cas_begin(a, &err), 0);
	struct al_oid x = dirs_tree(a, 3, 1), y = dirs_tree(a, 3, 2);
	assert_int_equal(al_cas_commit(a, &err), 0);
	al_cas_close(a);

	struct al_changes ch;
	struct al_oid d;
	struct al_cas *b = tier_open(&t, "node-b");
	assert_int_equal(al_manifest_changes(b, &x, &y, &ch, &err), 0);
	assert_int_equal(ch.n, 3);
	al_changes_release(&ch);
	assert_true(al_cas__idle(b)); /* no transaction left open */
	assert_int_equal(al_cas_begin(b, &err), 0);
	assert_int_equal(al_cas_put(b, "after", 5, &d, &err), 0);
	assert_int_equal(al_cas_commit(b, &err), 0);
	al_cas_close(b);

	const uint8_t *p;
	uint8_t *owned = NULL;
	size_t len;
	struct al_cas *c = tier_open(&t, "node-c");
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_manifest_changes(c, &x, &y, &ch, &err), 0);
	assert_int_equal(ch.n, 3);
	al_changes_release(&ch);
	assert_true(al_cas__locked(c)); /* the fetches joined the batch */
	al_cas_abort(c);
	al_cas__set_remote(c, NULL);
	assert_int_equal(al_cas__node(c, &y, &p, &len, &owned, &err), AL_ENOTFOUND);
	assert_int_equal(al_cas__node(c, &x, &p, &len, &owned, &err), AL_ENOTFOUND);
	al_cas_close(c);

	struct al_cas *g = tier_open(&t, "node-g");
	assert_int_equal(al_cas__group(g, true, &err), 0);
	assert_int_equal(al_cas_begin(g, &err), 0);
	assert_int_equal(al_manifest_changes(g, &x, &y, &ch, &err), 0);
	assert_int_equal(ch.n, 3);
	al_changes_release(&ch);
	assert_int_equal(al_cas_commit(g, &err), 0);
	assert_int_equal(al_cas__group(g, false, &err), 0);
	al_cas__set_remote(g, NULL);
	assert_int_equal(al_cas__node(g, &x, &p, &len, &owned, &err), 0);
	free(owned);
	assert_true(al_cas__idle(g));
	al_cas_close(g);
	sh("rm -rf %s", t.dir);
}

static void test_tier_push_then_fetch(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_cas *a = tier_open(&t, "node-a");
	_cleanup_free_ uint8_t *big = pattern(AL_CAS_LOOSE_MIN * 2, 5);
	struct al_oid small_id, big_id;
	assert_int_equal(al_cas_begin(a, &err), 0);
	assert_int_equal(al_cas_put(a, "small", 5, &small_id, &err), 0);
	assert_int_equal(al_cas_put(a, big, AL_CAS_LOOSE_MIN * 2, &big_id, &err), 0);
	assert_int_equal(al_cas_commit(a, &err), 0);
	al_cas_close(a);

	/* the remote has both, checked through a handle of its own */
	char d[128];
	snprintf(d, sizeof(d), "%s/remote", t.dir);
	struct al_odb_backend *r = NULL;
	assert_int_equal(al_odb_sqlite_open(d, &r, &err), 0);
	assert_int_equal(r->exists(r, &small_id, &err), 1);
	assert_int_equal(r->exists(r, &big_id, &err), 1);

	/* node b starts cold: size from the remote without fetching, has asks
	 * the remote, a read fetches, verifies and keeps the object */
	struct al_cas *b = tier_open(&t, "node-b");
	uint64_t size = 0;
	assert_int_equal(al_cas_size(b, &big_id, &size, &err), 0);
	assert_int_equal(size, AL_CAS_LOOSE_MIN * 2);
	assert_int_equal(al_cas__has_local(b, &big_id, &err), 0);
	assert_int_equal(al_cas_has(b, &big_id, &err), 1);
	uint8_t *p = NULL;
	size_t len = 0;
	assert_int_equal(al_cas_get(b, &small_id, &p, &len, &err), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(p, "small", 5);
	free(p);
	struct al_cas_reader *rd = NULL;
	assert_int_equal(al_cas_reader_open(b, &big_id, &rd, &err), 0);
	_cleanup_free_ uint8_t *back = malloc(AL_CAS_LOOSE_MIN * 2);
	size_t got = 0;
	int64_t n;
	while ((n = al_cas_reader_read(rd, back + got, AL_CAS_LOOSE_MIN * 2 - got, &err)) > 0)
		got += (size_t)n;
	assert_int_equal(n, 0);
	assert_int_equal(got, AL_CAS_LOOSE_MIN * 2);
	assert_memory_equal(back, big, got);
	al_cas_reader_close(rd);
	assert_int_equal(al_cas__has_local(b, &small_id, &err), 1);
	assert_int_equal(al_cas__has_local(b, &big_id, &err), 1);
	/* kept: readable with the remote gone */
	al_cas__set_remote(b, NULL);
	assert_int_equal(al_cas_get(b, &big_id, &p, &len, &err), 0);
	free(p);
	struct al_cas_stats st;
	assert_int_equal(al_cas_verify_all(b, NULL, NULL, &st, &err), 0);
	al_cas_close(b);

	/* a corrupt remote copy is refused and nothing is kept */
	_cleanup_free_ uint8_t *other = pattern(3000, 11);
	struct al_oid oid;
	assert_int_equal(al_odb_write_buf(r, other, 3000, &oid, &err), 0);
	char hex[2 * AL_OID_LEN + 1], cmd[512];
	al_hex(oid.b, AL_OID_LEN, hex);
	snprintf(cmd, sizeof(cmd),
		 "sqlite3 %s/objects.db \"UPDATE objects SET enc = 0, data = zeroblob(size) "
		 "WHERE hex(id) = upper('%s')\"",
		 d, hex);
	assert_int_equal(system(cmd), 0);
	struct al_cas *c = tier_open(&t, "node-c");
	p = NULL;
	assert_int_equal(al_cas_get(c, &oid, &p, &len, &err), AL_ECORRUPT);
	assert_null(p);
	assert_int_equal(al_cas__has_local(c, &oid, &err), 0);
	/* inside a batch: the fetched row joins it, and leaves with its abort */
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_get(c, &small_id, &p, &len, &err), 0);
	free(p);
	assert_int_equal(al_cas__has_local(c, &small_id, &err), 1);
	al_cas_abort(c);
	assert_int_equal(al_cas__has_local(c, &small_id, &err), 0);
	assert_int_equal(al_cas_get(c, &small_id, &p, &len, &err), 0);
	free(p);
	al_cas_close(c);
	al_odb_backend_free(r);
	rmdir_r(t.dir);
}

/* A group commit's batch on a node that fetches an object from the
 * remote: stored as any read's, readable at once (not held). */
static void test_tier_group_fetch(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_oid id = stored_by_a(&t, "fetched");
	struct al_cas *b = tier_open(&t, "node-b");
	uint8_t *p = NULL;
	size_t len = 0;
	assert_int_equal(al_cas__group(b, true, &err), 0);
	assert_int_equal(al_cas_begin(b, &err), 0);
	assert_int_equal(al_cas_get(b, &id, &p, &len, &err), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(p, "fetched", 7);
	free(p);
	assert_int_equal(al_cas_commit(b, &err), 0);
	assert_int_equal(al_cas__group(b, false, &err), 0);
	assert_int_equal(al_cas__has_local(b, &id, &err), 1);
	al_cas_close(b);
	rmdir_r(t.dir);
}

static void test_tier_remote_failure_aborts_batch(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	char d[128];
	snprintf(d, sizeof(d), "%s/a", t.dir);
	mkdir(d, 0700);
	struct al_cas *a = NULL;
	assert_int_equal(al_cas_open(d, &a, &err), 0);
	struct refusing *rf = calloc(1, sizeof(*rf));
	snprintf(d, sizeof(d), "%s/remote", t.dir);
	mkdir(d, 0700);
	assert_int_equal(al_odb_sqlite_open(d, &rf->inner, &err), 0);
	rf->base = *rf->inner;
	rf->base.write = refuse_write;
	rf->base.exists = pass_exists;
	rf->base.free = refusing_free;
	al_cas__set_remote(a, &rf->base);
	struct al_oid id;
	assert_int_equal(al_cas_begin(a, &err), 0);
	assert_int_equal(al_cas_put(a, "lost?", 5, &id, &err), 0);
	assert_int_equal(al_cas_commit(a, &err), AL_EIO);
	assert_non_null(strstr(err.msg, "remote down"));
	/* nothing committed locally: no object exists only on this node */
	assert_int_equal(al_cas__has_local(a, &id, &err), 0);
	al_cas_close(a);
	rmdir_r(t.dir);
}

/* A remote whose read, once the bytes are on their way, plays what another
 * node's gc pass and a catch-up on this node may do meanwhile: the object
 * leaves the remote, and the node's sweep generation moves on (under the
 * catch-up's lock) without having seen it in the local store. */
struct racing {
	struct al_odb_backend base;
	struct al_odb_backend *inner;
	struct al_cas *node; /* the store the catch-up moves on */
	char remote_db[160];
	bool race;
	unsigned writes; /* objects written to the remote */
};
static int racing_read(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink,
		       void *ctx, struct al_error *err)
{
	struct racing *x = (struct racing *)b;
	int r = x->inner->read(x->inner, id, sink, ctx, err);
	if (r < 0 || !x->race)
		return r;
	char hex[2 * AL_OID_LEN + 1], cmd[512];
	al_hex(id->b, AL_OID_LEN, hex);
	snprintf(cmd, sizeof(cmd), "sqlite3 %s \"DELETE FROM objects WHERE hex(id) = upper('%s')\"",
		 x->remote_db, hex);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(x->inner->exists(x->inner, id, err), 0);
	int64_t gen, serial;
	assert_int_equal(al_cas__gen_bump(x->node, &gen, &serial, err), 0);
	assert_int_equal(al_cas__gen_write(x->node, gen + 1, serial, err), 0);
	return r;
}
static int racing_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
			al_odb_source src, void *ctx, struct al_error *err)
{
	struct racing *x = (struct racing *)b;
	x->writes++;
	return x->inner->write(x->inner, id, size, src, ctx, err);
}
static int racing_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	struct al_odb_backend *in = ((struct racing *)b)->inner;
	return in->exists(in, id, err);
}
static int racing_header(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			 struct al_error *err)
{
	struct al_odb_backend *in = ((struct racing *)b)->inner;
	return in->read_header(in, id, size, err);
}
static void racing_free(struct al_odb_backend *b)
{
	al_odb_backend_free(((struct racing *)b)->inner);
	free(b);
}

static struct al_cas *racing_open(struct tier *t, const char *name, struct racing **out)
{
	char d[128];
	snprintf(d, sizeof(d), "%s/%s", t->dir, name);
	mkdir(d, 0700);
	struct al_cas *c = NULL;
	assert_int_equal(al_cas_open(d, &c, NULL), 0);
	struct racing *x = calloc(1, sizeof(*x));
	snprintf(d, sizeof(d), "%s/remote", t->dir);
	assert_int_equal(al_odb_sqlite_open(d, &x->inner, NULL), 0);
	snprintf(x->remote_db, sizeof(x->remote_db), "%s/objects.db", d);
	x->base = *x->inner;
	x->base.read = racing_read;
	x->base.read_header = racing_header;
	x->base.write = racing_write;
	x->base.write_many = NULL;
	x->base.exists = racing_exists;
	x->base.sweep = NULL;
	x->base.foreach = NULL;
	x->base.free = racing_free;
	x->node = c;
	al_cas__set_remote(c, &x->base);
	*out = x;
	return c;
}

/* A fetch that a catch-up overtook lands only once its bytes are in the
 * remote again (alone, or with its batch); one that nothing overtook
 * writes nothing.  Without it, the node would trust an object the remote
 * lost: its dedup does not upload what it holds. */
static void test_tier_fetch_overtaken(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_cas *a = tier_open(&t, "node-a");
	_cleanup_free_ uint8_t *big = pattern(AL_CAS_LOOSE_MIN * 2, 7);
	struct al_oid ids[4];
	const char *small[3] = { "one", "two", "three" };
	assert_int_equal(al_cas_begin(a, &err), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(al_cas_put(a, small[i], strlen(small[i]), &ids[i], &err), 0);
	assert_int_equal(al_cas_put(a, big, AL_CAS_LOOSE_MIN * 2, &ids[3], &err), 0);
	assert_int_equal(al_cas_commit(a, &err), 0);
	al_cas_close(a);

	struct racing *x = NULL;
	struct al_cas *b = racing_open(&t, "node-b", &x);
	int64_t gen, serial;

	/* nothing overtakes the fetch: it lands, and nothing is written */
	uint8_t *p = NULL;
	size_t len = 0;
	assert_int_equal(al_cas_get(b, &ids[0], &p, &len, &err), 0);
	free(p);
	assert_int_equal(x->writes, 0);
	assert_int_equal(al_cas__has_local(b, &ids[0], &err), 1);

	/* alone: the catch-up overtakes it, and it lands uploaded again */
	x->race = true;
	assert_int_equal(al_cas_get(b, &ids[1], &p, &len, &err), 0);
	free(p);
	assert_int_equal(x->writes, 1);
	assert_int_equal(x->inner->exists(x->inner, &ids[1], &err), 1);
	/* the file was missing: the catch-up's serial is a random one */
	assert_int_equal(al_cas__gen_read(b, &gen, &serial, &err), 0);
	assert_int_equal(gen, 0);
	assert_true(serial >= 0);

	/* in a batch: the fetched rows land at its commit, with their bytes
	 * in the remote again; before it, the remote lacks them */
	x->writes = 0;
	assert_int_equal(al_cas_begin(b, &err), 0);
	assert_int_equal(al_cas_get(b, &ids[2], &p, &len, &err), 0);
	free(p);
	x->race = false;
	struct al_cas_reader *rd = NULL;
	assert_int_equal(al_cas_reader_open(b, &ids[3], &rd, &err), 0);
	al_cas_reader_close(rd);
	struct al_oid mine;
	assert_int_equal(al_cas_put(b, "new here", 8, &mine, &err), 0);
	assert_int_equal(x->inner->exists(x->inner, &ids[2], &err), 0);
	assert_int_equal(x->writes, 0);
	assert_int_equal(al_cas_commit(b, &err), 0);
	/* the new object, and both fetched (the serial moved since the
	 * first of them began) */
	assert_int_equal(x->writes, 3);
	assert_int_equal(x->inner->exists(x->inner, &ids[2], &err), 1);
	assert_int_equal(x->inner->exists(x->inner, &mine, &err), 1);
	assert_int_equal(al_cas__has_local(b, &ids[2], &err), 1);
	assert_int_equal(al_cas__has_local(b, &ids[3], &err), 1);

	al_cas_close(b);

	/* a batch whose fetch nothing overtook writes only its own object */
	struct al_cas *c = racing_open(&t, "node-c", &x);
	assert_int_equal(al_cas__gen_write(c, 4, 9, &err), 0);
	assert_int_equal(al_cas_begin(c, &err), 0);
	assert_int_equal(al_cas_get(c, &ids[0], &p, &len, &err), 0);
	free(p);
	assert_int_equal(al_cas_put(c, "also new", 8, &mine, &err), 0);
	assert_int_equal(al_cas_commit(c, &err), 0);
	assert_int_equal(x->writes, 1);
	assert_int_equal(al_cas__has_local(c, &ids[0], &err), 1);
	assert_int_equal(al_cas__gen_read(c, &gen, &serial, &err), 0);
	assert_int_equal(gen, 4);
	assert_int_equal(serial, 9);
	al_cas_close(c);
	rmdir_r(t.dir);
}

/* bucket.gen: the format before serials, none with a serial, damage; a
 * catch-up's bump moves the serial on, to a random one after damage */
static void test_gen_file(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_cas *c = tier_open(&t, "node");
	char path[128];
	snprintf(path, sizeof(path), "%s/node/bucket.gen", t.dir);
	static const struct {
		const char *text;
		int64_t gen, serial;
	} cases[] = {
		{ "5\n", 5, 0 },      { "5 7\n", 5, 7 },
		{ "-1 7\n", -1, 7 },  { "x\033[31m", -1, -1 },
		{ "5 7", -1, -1 },    { "-2 7\n", -1, -1 },
		{ "5 -7\n", -1, -1 }, { "99999999999999999999 1\n", -1, -1 },
	};
	int64_t gen, serial;
	assert_int_equal(al_cas__gen_read(c, &gen, &serial, &err), 0);
	assert_true(gen == -1 && serial == -1); /* no file */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");
		fputs(cases[i].text, f);
		fclose(f);
		assert_int_equal(al_cas__gen_read(c, &gen, &serial, &err), 0);
		assert_int_equal(gen, cases[i].gen);
		assert_int_equal(serial, cases[i].serial);
	}
	FILE *f = fopen(path, "w");
	fputs("5 7\n", f);
	fclose(f);
	assert_int_equal(al_cas__gen_bump(c, &gen, &serial, &err), 0);
	assert_true(gen == 5 && serial == 8);
	assert_int_equal(al_cas__gen_read(c, &gen, &serial, &err), 0);
	assert_true(gen == 5 && serial == 8);
	/* damaged: none, and a serial no fetch can have read */
	f = fopen(path, "w");
	fputs("garbage", f);
	fclose(f);
	int64_t s1, s2;
	assert_int_equal(al_cas__gen_bump(c, &gen, &s1, &err), 0);
	assert_true(gen == -1 && s1 >= 0);
	assert_int_equal(al_cas__gen_read(c, &gen, &serial, &err), 0);
	assert_true(gen == -1 && serial == s1);
	unlink(path);
	assert_int_equal(al_cas__gen_bump(c, &gen, &s2, &err), 0);
	assert_true(gen == -1 && s2 >= 0 && s2 != s1);
	al_cas_close(c);
	rmdir_r(t.dir);
}

/* A fetch lands (its row committed) only while no catch-up holds
 * bucket.lock: another process holds it here, and the fetch of a third
 * waits at its landing with its row unseen, then lands once it is let go.
 * (Had it not waited, the row would be there before the holder's end.) */
static void test_tier_landing_waits(void **state)
{
	(void)state;
	struct tier t;
	tmpdir(t.dir, sizeof(t.dir));
	struct al_error err = { 0 };
	struct al_oid id = stored_by_a(&t, "waits");

	struct racing *x = NULL;
	struct al_cas *b = racing_open(&t, "node-b", &x);
	int go[2], held[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(held), 0);
	pid_t holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		/* a catch-up of another process, between its bump and what
		 * follows: the lock held exclusively, the serial moved */
		close(go[1]); /* the parent's end: its exit, even a failed one, lets go */
		close(held[0]);
		int64_t gen, serial;
		int lk = al_cas__gen_lock(b, true, NULL);
		if (lk < 0 || al_cas__gen_read(b, &gen, &serial, NULL) < 0 ||
		    al_cas__gen_write(b, gen, serial + 1, NULL) < 0)
			_exit(1);
		char ch = 1;
		if (write(held[1], &ch, 1) != 1 || read(go[0], &ch, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(held[1]);
	char ch;
	assert_int_equal(read(held[0], &ch, 1), 1);
	pid_t fetcher = fork();
	assert_true(fetcher >= 0);
	if (fetcher == 0) {
		close(go[1]);
		close(held[0]);
		/* a fetch on the same node, with a handle of its own */
		struct racing *xf = NULL;
		struct al_cas *f = racing_open(&t, "node-b", &xf);
		uint8_t *p = NULL;
		size_t len = 0;
		_exit(al_cas_get(f, &id, &p, &len, NULL) == 0 ? 0 : 1);
	}
	/* the fetcher is waiting on the lock: its row is not there yet */
	struct timespec nap = { 0, 300 * 1000 * 1000 };
	nanosleep(&nap, NULL);
	int st;
	assert_int_equal(waitpid(fetcher, &st, WNOHANG), 0);
	assert_int_equal(al_cas__has_local(b, &id, &err), 0);
	assert_int_equal(write(go[1], "x", 1), 1);
	close(go[1]);
	close(held[0]);
	assert_int_equal(waitpid(holder, &st, 0), holder);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(waitpid(fetcher, &st, 0), fetcher);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(al_cas__has_local(b, &id, &err), 1);
	al_cas_close(b);
	rmdir_r(t.dir);
}

/* ---- the S3 URL ------------------------------------------------------------------ */

static const char *const aws_vars[] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
					"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
					"AWS_REGION",        "AWS_DEFAULT_REGION" };

static void test_s3_config(void **state)
{
	(void)state;
	/* the environment as it was, for the S3 group that may follow */
	char *saved[ARRAY_SIZE(aws_vars)];
	for (size_t i = 0; i < ARRAY_SIZE(aws_vars); i++)
		saved[i] = getenv(aws_vars[i]) ? strdup(getenv(aws_vars[i])) : NULL;
	struct al_s3_config c;
	struct al_error err = { 0 };
	setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s3cret", 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	assert_int_equal(al_s3_config_parse("s3://my-bucket", &c, &err), 0);
	assert_string_equal(c.bucket, "my-bucket");
	assert_string_equal(c.prefix, "");
	assert_string_equal(c.region, "us-east-1");
	assert_string_equal(c.endpoint, "https://s3.us-east-1.amazonaws.com");
	assert_string_equal(c.access_key, "AKID");
	setenv("AWS_REGION", "eu-west-3", 1);
	assert_int_equal(
		al_s3_config_parse("s3://b.x-1/a/b/?endpoint=http://127.0.0.1:9000/", &c, &err), 0);
	assert_string_equal(c.prefix, "a/b");
	assert_string_equal(c.endpoint, "http://127.0.0.1:9000");
	assert_string_equal(c.region, "eu-west-3");
	assert_int_equal(al_s3_config_parse("s3://b12?region=r1", &c, &err), 0);
	assert_string_equal(c.region, "r1");
	assert_false(c.inline_set); /* the store's default */
	assert_int_equal(al_s3_config_parse("s3://b12?inline=0", &c, &err), 0);
	assert_true(c.inline_set);
	assert_int_equal(c.inline_max, 0);
	assert_int_equal(al_s3_config_parse("s3://b12?region=r1&inline=1048576", &c, &err), 0);
	assert_int_equal(c.inline_max, AL_ODB_INLINE_CAP);

	const char *bad[] = {
		"http://bucket",
		"s3://",
		"s3://ab",
		"s3://Bucket",
		"s3://-bucket",
		"s3://bucket/../x",
		"s3://bucket/a//b",
		"s3://bucket/a/./b",
		"s3://bucket/a b",
		"s3://bucket/\x1b[31m",
		"s3://bucket?endpoint=ftp://host",
		"s3://bucket?endpoint=http://host/path",
		"s3://bucket?endpoint=http://user@host",
		"s3://bucket?endpoint=http://ho st",
		"s3://bucket?region=EU",
		"s3://bucket?color=red",
		"s3://bucket?endpoint",
		"s3://bucket?credentials=/nonexistent/file",
		"s3://bucket?inline=",
		"s3://bucket?inline=1048577",
		"s3://bucket?inline=-1",
		"s3://bucket?inline=16k",
		"s3://bucket?inline=99999999999999999999",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err.msg[0] = 0;
		assert_int_equal(al_s3_config_parse(bad[i], &c, &err), AL_EINVAL);
		assert_true(err.msg[0]);
		for (const char *m = err.msg; *m; m++)
			assert_true((unsigned char)*m >= 0x20 && *m != 0x7f);
	}
	unsetenv("AWS_SECRET_ACCESS_KEY");
	assert_int_equal(al_s3_config_parse("s3://bucket", &c, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "credentials"));
	setenv("AWS_SECRET_ACCESS_KEY", "line\r\nX-Injected: 1", 1);
	assert_int_equal(al_s3_config_parse("s3://bucket", &c, &err), AL_EINVAL);
	setenv("AWS_SECRET_ACCESS_KEY", "s3cret", 1);
	setenv("AWS_SESSION_TOKEN", "tok\nX: 1", 1);
	assert_int_equal(al_s3_config_parse("s3://bucket", &c, &err), AL_EINVAL);
	unsetenv("AWS_SESSION_TOKEN");

	/* a credentials file: the caller's, 0600, two lines */
	char dir[64], path[128], url[200];
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/creds", dir);
	FILE *fp = fopen(path, "w");
	fputs("FILEKEY\nfilesecret\n", fp);
	fclose(fp);
	snprintf(url, sizeof(url), "s3://bucket?credentials=%s", path);
	chmod(path, 0644);
	assert_int_equal(al_s3_config_parse(url, &c, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "0600"));
	chmod(path, 0600);
	assert_int_equal(al_s3_config_parse(url, &c, &err), 0);
	assert_string_equal(c.access_key, "FILEKEY");
	assert_string_equal(c.secret_key, "filesecret");
	char link[160];
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	snprintf(url, sizeof(url), "s3://bucket?credentials=%s", link);
	assert_int_equal(al_s3_config_parse(url, &c, &err), AL_EINVAL);
	rmdir_r(dir);
	for (size_t i = 0; i < ARRAY_SIZE(aws_vars); i++) {
		if (saved[i])
			setenv(aws_vars[i], saved[i], 1);
		else
			unsetenv(aws_vars[i]);
		free(saved[i]);
	}
}

/* ---- a hostile server (tests/servers/hostile-s3.py) ------------------------------- */

/* the server misbehaves as the bucket's name says (hostile-s3.py) */
static struct al_odb_backend *hostile_bucket(const char *bucket, uint64_t max_keys)
{
	char url[300];
	snprintf(url, sizeof(url), "s3://%s/p?endpoint=%s", bucket,
		 getenv("AIRLOCK_TEST_S3_HOSTILE"));
	setenv("AWS_ACCESS_KEY_ID", "k", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
	struct al_s3_config cfg;
	struct al_odb_backend *b = NULL;
	assert_int_equal(al_s3_config_parse(url, &cfg, NULL), 0);
	cfg.max_keys = max_keys;
	cfg.backoff_ms = 1;
	assert_int_equal(al_odb_s3_open(&cfg, "t", &b, NULL), 0);
	return b;
}

static struct al_odb_backend *hostile(void)
{
	return hostile_bucket("bucket", 0);
}

/* listings that would never end, or blow up a parser that expands entities */
static void test_hostile_listings(void **state)
{
	(void)state;
	struct al_error err = { 0 };
	int n = 0;
	struct al_odb_backend *b = hostile_bucket("endless", 100);
	assert_int_equal(b->foreach(b, count_fn, &n, &err), AL_ELIMIT);
	assert_int_equal(n, 100);
	assert_non_null(strstr(err.msg, "more than 100 keys"));
	al_odb_backend_free(b);
	n = 0;
	b = hostile_bucket("loop", 0);
	assert_int_equal(b->foreach(b, count_fn, &n, &err), AL_EIO);
	assert_non_null(strstr(err.msg, "repeats its continuation token"));
	al_odb_backend_free(b);
	b = hostile_bucket("empty", 0);
	assert_int_equal(b->foreach(b, count_fn, &n, &err), AL_EIO);
	assert_non_null(strstr(err.msg, "without keys"));
	al_odb_backend_free(b);
	n = 0;
	b = hostile_bucket("bomb", 0);
	assert_int_equal(b->foreach(b, count_fn, &n, &err), 0);
	assert_int_equal(n, 0); /* "&lol9;" is no key of ours, and nothing was expanded */
	al_odb_backend_free(b);
}

static void test_hostile_listing_capped(void **state)
{
	(void)state;
	struct al_odb_backend *b = hostile();
	struct al_error err = { 0 };
	int n = 0;
	assert_int_equal(b->foreach(b, count_fn, &n, &err), AL_ELIMIT);
	assert_int_equal(n, 0);
	al_odb_backend_free(b);
}

static void test_hostile_huge_object_refused(void **state)
{
	(void)state;
	struct al_odb_backend *b = hostile();
	struct al_error err = { 0 };
	struct al_oid id;
	memset(id.b, 0xff, sizeof(id.b)); /* the server says 1 TiB for this one */
	uint8_t *p = NULL;
	size_t len;
	assert_int_equal(al_odb_read_all(b, &id, &p, &len, &err), AL_ELIMIT);
	assert_null(p);
	/* any other: wrong bytes, refused */
	al_sha256("x", 1, id.b);
	assert_int_equal(al_odb_read_all(b, &id, &p, &len, &err), AL_ECORRUPT);
	assert_null(p);
	al_odb_backend_free(b);
}

static void test_hostile_error_document_capped(void **state)
{
	(void)state;
	struct al_odb_backend *b = hostile();
	struct al_error err = { 0 };
	struct al_oid id;
	assert_int_equal(al_odb_write_buf(b, "data", 4, &id, &err), AL_ELIMIT);
	al_odb_backend_free(b);
}

/* ---- the tier: small objects in the database, the others in the bucket ---------- */

struct sides {
	struct al_odb_backend *db, *bucket; /* each side alone, the tier's tenant */
};

static void sides_open(struct fx *f, struct sides *v)
{
	struct al_s3_config cfg;
	assert_int_equal(al_s3_config_parse(getenv("AIRLOCK_TEST_S3"), &cfg, NULL), 0);
	assert_int_equal(al_odb_s3_open(&cfg, f->tenant, &v->bucket, NULL), 0);
	assert_int_equal(al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), f->tenant, AL_ODB_INLINE_CAP, 0,
					&v->db, NULL),
			 0);
}

static void sides_close(struct sides *v)
{
	al_odb_backend_free(v->db);
	al_odb_backend_free(v->bucket);
}

/* An object up to the threshold is written to the database only, a
 * larger one to the bucket only; the tier reads, sizes and finds both;
 * one that both sides hold (the threshold changed) is listed once. */
static void test_tier_sides(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct sides v;
	sides_open(f, &v);
	_cleanup_free_ uint8_t *small = pattern(TIER_MAX, 61), *large = pattern(TIER_MAX + 1, 62);
	struct al_oid s_id, l_id, both;
	assert_int_equal(al_odb_write_buf(f->b, small, TIER_MAX, &s_id, &err), 0);
	assert_int_equal(al_odb_write_buf(f->b, large, TIER_MAX + 1, &l_id, &err), 0);
	assert_int_equal(v.db->exists(v.db, &s_id, &err), 1);
	assert_int_equal(v.bucket->exists(v.bucket, &s_id, &err), 0);
	assert_int_equal(v.db->exists(v.db, &l_id, &err), 0);
	assert_int_equal(v.bucket->exists(v.bucket, &l_id, &err), 1);
	uint64_t size = 0;
	assert_int_equal(f->b->read_header(f->b, &l_id, &size, &err), 0);
	assert_int_equal(size, TIER_MAX + 1);
	/* held by both sides: the tier reports it once */
	assert_int_equal(al_odb_write_buf(v.db, "on both sides", 13, &both, &err), 0);
	assert_int_equal(al_odb_write_buf(v.bucket, "on both sides", 13, &both, &err), 0);
	struct walk w = { .ids = { s_id, l_id, both }, .sizes = { TIER_MAX, TIER_MAX + 1, 13 } };
	al_sha256("never stored", 12, w.ids[3].b);
	assert_int_equal(f->b->foreach(f->b, walk_fn, &w, &err), 0);
	assert_int_equal(w.seen[0], 1);
	assert_int_equal(w.seen[3], 0);
	assert_int_equal(w.seen[1], 1);
	assert_int_equal(w.seen[2], 1);
	assert_int_equal(w.other, 0);
	/* only in the bucket, though small (written before the threshold): read there */
	struct al_oid old;
	assert_int_equal(al_odb_write_buf(v.bucket, "small, in the bucket", 20, &old, &err), 0);
	_cleanup_free_ uint8_t *back = NULL;
	size_t len = 0;
	assert_int_equal(al_odb_read_all(f->b, &old, &back, &len, &err), 0);
	assert_int_equal(len, 20);
	assert_int_equal(f->b->exists(f->b, &old, &err), 1);
	/* a corrupt row whose object the bucket also holds: read from the bucket */
	struct al_oid good;
	assert_int_equal(al_odb_write_buf(v.db, "a good copy too", 15, &good, &err), 0);
	assert_int_equal(al_odb_write_buf(v.bucket, "a good copy too", 15, &good, &err), 0);
	corrupt(f, &good);
	_cleanup_free_ uint8_t *back2 = NULL;
	assert_int_equal(al_odb_read_all(v.db, &good, &back2, &len, &err), AL_ECORRUPT);
	assert_int_equal(al_odb_read_all(f->b, &good, &back2, &len, &err), 0);
	assert_int_equal(len, 15);
	assert_memory_equal(back2, "a good copy too", 15);
	uint64_t hsize = 0; /* and its size, its presence: the bucket's copy's */
	assert_int_equal(f->b->read_header(f->b, &good, &hsize, &err), 0);
	assert_int_equal(hsize, 15);
	assert_int_equal(f->b->exists(f->b, &good, &err), 1);
	sides_close(&v);
}

/* write_many's source must be exactly the size its open announced, on the
 * database's side as through a single write */
struct longer {
	struct src s;
	const uint8_t *p;
	size_t announce, give;
};

static int longer_open(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		       struct al_error *err)
{
	(void)id, (void)err;
	struct longer *l = ctx;
	l->s = (struct src){ l->p, l->give, 0 };
	*size = l->announce;
	*src = &l->s;
	return 0;
}

static void longer_close(void *src)
{
	(void)src;
}

static void test_write_many_exact_size(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	static const uint8_t p[] = "twenty bytes exactly";
	struct al_oid id;
	al_sha256(p, 19, id.b); /* the id of the first 19 bytes */
	struct longer l = { .p = p, .announce = 19, .give = 20 };
	const struct al_odb_objects objs = { longer_open, src_read, longer_close, &l };
	assert_int_equal(al_odb_write_many(f->b, &id, 1, &objs, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "more than the 19 bytes announced"));
	assert_int_equal(f->b->exists(f->b, &id, &err), 0);
	l.give = 18; /* shorter */
	assert_int_equal(al_odb_write_many(f->b, &id, 1, &objs, &err), AL_EINVAL);
	assert_int_equal(f->b->exists(f->b, &id, &err), 0);
	l.give = 19;
	assert_int_equal(al_odb_write_many(f->b, &id, 1, &objs, &err), 0);
	assert_int_equal(f->b->exists(f->b, &id, &err), 1);
}

/* A backend that stores nothing and counts what write_many hands it: its
 * calls, objects and the most bytes one call held. */
struct counting {
	struct al_odb_backend base;
	size_t calls, objects, most_n;
	uint64_t most;
};

static int counting_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
			       const struct al_odb_objects *objs, struct al_error *err)
{
	struct counting *c = (struct counting *)b;
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t size = 0;
		void *src = NULL;
		int r = objs->open(objs->ctx, &ids[i], &size, &src, err);
		if (r < 0)
			return r;
		objs->close(src);
		bytes += size;
	}
	c->calls++;
	c->objects += n;
	c->most = bytes > c->most ? bytes : c->most;
	c->most_n = n > c->most_n ? n : c->most_n;
	return 0;
}

static void counting_free(struct al_odb_backend *b)
{
	(void)b; /* the test's */
}

/* The tier's write_many holds its small objects in memory a window at a
 * time: at most 256 of them and at most 8 MiB (inline=1MiB allows 1 MiB
 * rows: 256 of them were 256 MiB per commit). */
static void test_tier_window_bytes(void **state)
{
	(void)state;
	struct counting small = { .base = { .write_many = counting_write_many,
					    .free = counting_free } },
			large = small;
	struct al_odb_backend *t = NULL;
	struct al_error err = { 0 };
	assert_int_equal(al_odb_tier_open(&small.base, &large.base, 1u << 20, &t, &err), 0);
	enum { BIG = 20, TINY = 300 };
	struct al_odb__buf b[BIG + TINY];
	struct al_oid ids[BIG + TINY];
	uint8_t *mem = calloc(BIG, 1u << 20);
	assert_non_null(mem);
	for (size_t i = 0; i < BIG + TINY; i++) {
		uint8_t *p = i < BIG ? mem + i * (1u << 20) : (uint8_t *)&ids[i]; /* any bytes */
		size_t len = i < BIG ? 1u << 20 : 8;
		if (i < BIG)
			memcpy(p, &i, sizeof(i)); /* each its own */
		else
			memcpy(p, &i, 8);
		b[i] = (struct al_odb__buf){ .p = p, .len = len };
		al_sha256(p, len, b[i].id.b);
	}
	for (size_t i = 0; i < BIG + TINY; i++)
		ids[i] = b[i].id;
	struct al_odb__bufs bufs = { b, BIG + TINY };
	const struct al_odb_objects objs = al_odb__bufs_objects(&bufs);
	assert_int_equal(al_odb_write_many(t, ids, BIG + TINY, &objs, &err), 0);
	assert_int_equal(small.objects, BIG + TINY);
	assert_int_equal(large.objects, 0);
	assert_int_equal(small.most, 8u << 20); /* by bytes: 8 of the 1 MiB objects at once */
	assert_int_equal(small.most_n, 256);    /* by count */
	/* 8 + 8 MiB; 4 MiB and 252 tiny ones (256); the last 48 */
	assert_int_equal(small.calls, 4);
	free(mem);
	al_odb_backend_free(t);
}

/* A sweep (kept claimed, everything else old) that tells doomed once, of
 * id alone. */
static void sweep_tells_only(struct fx *f, const struct al_oid *kept, const struct al_oid *id)
{
	struct al_error err = { 0 };
	struct al_odb_sweep s;
	struct sweep_fx x = { .keep = *kept };
	assert_int_equal(
		f->b->sweep(f->b, keep_first, doomed_note, &x, al_wall_s() + 3600, false, &s, &err),
		0);
	assert_int_equal(x.calls, 1);
	assert_int_equal(x.ndoomed, 1);
	assert_true(told(&x, id));
}

/* A sweep of the tier tells doomed once, the lists of both sides, before
 * either deletes; keep and the age rule hold on both; a refusal deletes
 * nothing on either side. */
static void test_tier_sweep(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct sides v;
	sides_open(f, &v);
	struct al_oid ids[4]; /* 0, 1 in the database; 2, 3 in the bucket */
	for (unsigned i = 0; i < 4; i++) {
		size_t n = i < 2 ? 100 + i : TIER_MAX + 100 + i;
		_cleanup_free_ uint8_t *p = pattern(n, 7000 + i);
		assert_int_equal(al_odb_write_buf(f->b, p, n, &ids[i], &err), 0);
	}
	assert_int_equal(v.db->exists(v.db, &ids[1], &err), 1);
	assert_int_equal(v.bucket->exists(v.bucket, &ids[3], &err), 1);
	sweep_sequence(f, ids, 4, 101 + (TIER_MAX + 102) + (TIER_MAX + 103));
	/* a side with nothing to delete: the other's list alone, told once */
	_cleanup_free_ uint8_t *p = pattern(TIER_MAX + 7, 7100);
	struct al_oid lone;
	assert_int_equal(al_odb_write_buf(f->b, p, TIER_MAX + 7, &lone, &err), 0);
	sweep_tells_only(f, &ids[0], &lone);
	assert_int_equal(f->b->exists(f->b, &lone, &err), 0);
	/* an object both sides hold: both copies go, its id told once (the
	 * collector records each id once) */
	struct al_oid twice;
	assert_int_equal(al_odb_write_buf(v.db, "held twice", 10, &twice, &err), 0);
	assert_int_equal(al_odb_write_buf(v.bucket, "held twice", 10, &twice, &err), 0);
	sweep_tells_only(f, &ids[0], &twice);
	assert_int_equal(v.db->exists(v.db, &twice, &err), 0);
	assert_int_equal(v.bucket->exists(v.bucket, &twice, &err), 0);
	sides_close(&v);
}

/* A row written again after the sweep listed it (another node's upload
 * in between) is kept: the delete checks its time again. */
struct rewrite_fx {
	struct al_odb_backend *other; /* another connection */
	struct al_oid target;
	const uint8_t *bytes;
	size_t len;
	bool done;
};

static bool keep_none_rewrite(void *ctx, const struct al_oid *id)
{
	struct rewrite_fx *x = ctx;
	if (!x->done && al_oid_eq(id, &x->target)) {
		struct al_oid again;
		assert_int_equal(al_odb_write_buf(x->other, x->bytes, x->len, &again, NULL), 0);
		x->done = true;
	}
	return false;
}

static void test_pg_sweep_rewritten_kept(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	_cleanup_free_ uint8_t *a = pattern(300, 5100), *b = pattern(301, 5101);
	struct al_oid ia, ib;
	assert_int_equal(al_odb_write_buf(f->b, a, 300, &ia, &err), 0);
	assert_int_equal(al_odb_write_buf(f->b, b, 301, &ib, &err), 0);
	sleep(2); /* stored (whole seconds) before `before` */
	struct rewrite_fx x = { .target = ib, .bytes = b, .len = 301 };
	assert_int_equal(open_backend(f, f->tenant, &x.other), 0);
	struct al_odb_sweep s;
	assert_int_equal(
		f->b->sweep(f->b, keep_none_rewrite, NULL, &x, al_wall_s(), false, &s, &err), 0);
	assert_true(x.done);
	assert_int_equal(s.objects, 2); /* both were listed as doomed */
	assert_int_equal(f->b->exists(f->b, &ia, &err), 0);
	assert_int_equal(f->b->exists(f->b, &ib, &err), 1); /* written again meanwhile: kept */
	al_odb_backend_free(x.other);
}

/* The database's side: a larger object than it keeps is refused (the
 * tier never sends one), and the threshold is capped. */
static void test_pg_limits(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_odb_backend *b = NULL;
	assert_int_equal(al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), f->tenant, 10, 0, &b, &err), 0);
	struct al_oid id;
	assert_int_equal(al_odb_write_buf(b, "eleven byte", 11, &id, &err), AL_EINVAL);
	assert_non_null(strstr(err.msg, "more than the 10"));
	assert_int_equal(b->exists(b, &id, &err), 0);
	assert_int_equal(al_odb_write_buf(b, "ten bytes!", 10, &id, &err), 0);
	al_odb_backend_free(b);
	assert_int_equal(al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), f->tenant, AL_ODB_INLINE_CAP + 1,
					0, &b, &err),
			 AL_EINVAL);
	assert_int_equal(al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), "Bad Tenant", 10, 0, &b, &err),
			 AL_EINVAL);
}

/* A listing is capped (as the bucket's keys): a database that answers
 * page after page of ever higher ids would otherwise grow the collector's
 * lists forever.  Past the cap, foreach and the sweep are refused and the
 * sweep deletes nothing. */
static void test_pg_listing_capped(void **state)
{
	struct fx *f = *state;
	struct al_error err = { 0 };
	struct al_oid id;
	for (int i = 0; i < 25; i++) {
		char v[16];
		int n = snprintf(v, sizeof(v), "row %d", i);
		assert_int_equal(al_odb_write_buf(f->b, v, (size_t)n, &id, &err), 0);
	}
	struct al_odb_backend *b = NULL;
	assert_int_equal(al_odb_pg_open(getenv("AIRLOCK_TEST_PG"), f->tenant, 10, 20, &b, &err), 0);
	int n = 0;
	assert_int_equal(b->foreach(b, count_fn, &n, &err), AL_ELIMIT);
	assert_int_equal(n, 20);
	assert_non_null(strstr(err.msg, "more than 20 rows"));
	struct sweep_fx x = { 0 }; /* keeps nothing of these: no id is x.keep */
	struct al_odb_sweep s = { 0 };
	assert_int_equal(
		b->sweep(b, keep_first, doomed_note, &x, al_wall_s() + 86400, false, &s, &err),
		AL_ELIMIT);
	assert_int_equal(x.calls, 0); /* refused before anything was doomed */
	al_odb_backend_free(b);
	n = 0;
	assert_int_equal(f->b->foreach(f->b, count_fn, &n, &err), 0);
	assert_int_equal(n, 25); /* nothing was deleted */
}

#define CONFORMANCE(setup)                                                                        \
	cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),                         \
		cmocka_unit_test_setup_teardown(test_absent, setup, teardown),                    \
		cmocka_unit_test_setup_teardown(test_idempotent_and_foreach, setup, teardown),    \
		cmocka_unit_test_setup_teardown(test_tenants_apart, setup, teardown),             \
		cmocka_unit_test_setup_teardown(test_write_refuses_wrong_bytes, setup, teardown), \
		cmocka_unit_test_setup_teardown(test_read_verifies, setup, teardown),             \
		cmocka_unit_test_setup_teardown(test_write_many, setup, teardown),                \
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),                     \
		cmocka_unit_test_setup_teardown(test_pool, setup, teardown)

int main(void)
{
	const struct CMUnitTest local[] = {
		CONFORMANCE(setup_sqlite),
		cmocka_unit_test(test_tier_push_then_fetch),
		cmocka_unit_test(test_tier_diff_fetches),
		cmocka_unit_test(test_tier_remote_failure_aborts_batch),
		cmocka_unit_test(test_tier_group_fetch),
		cmocka_unit_test(test_tier_fetch_overtaken),
		cmocka_unit_test(test_gen_file),
		cmocka_unit_test(test_tier_landing_waits),
		cmocka_unit_test(test_s3_config),
		cmocka_unit_test(test_tier_window_bytes),
	};
	const struct CMUnitTest s3[] = { CONFORMANCE(setup_s3) };
	const struct CMUnitTest pg[] = {
		CONFORMANCE(setup_pg),
		cmocka_unit_test_setup_teardown(test_pg_limits, setup_pg, teardown),
		cmocka_unit_test_setup_teardown(test_pg_listing_capped, setup_pg, teardown),
		cmocka_unit_test_setup_teardown(test_pg_sweep_rewritten_kept, setup_pg, teardown),
		cmocka_unit_test_setup_teardown(test_write_many_exact_size, setup_pg, teardown),
	};
	const struct CMUnitTest tier[] = {
		CONFORMANCE(setup_tier),
		cmocka_unit_test_setup_teardown(test_tier_sides, setup_tier, teardown),
		cmocka_unit_test_setup_teardown(test_tier_sweep, setup_tier, teardown),
		cmocka_unit_test_setup_teardown(test_write_many_exact_size, setup_tier, teardown),
	};
	const struct CMUnitTest hostile_server[] = {
		cmocka_unit_test(test_hostile_listing_capped),
		cmocka_unit_test(test_hostile_huge_object_refused),
		cmocka_unit_test(test_hostile_error_document_capped),
		cmocka_unit_test(test_hostile_listings),
	};
	int failed = cmocka_run_group_tests_name("odb: local store", local, NULL, NULL);
	if (getenv("AIRLOCK_TEST_S3"))
		failed += cmocka_run_group_tests_name("odb: s3", s3, NULL, NULL);
	if (getenv("AIRLOCK_TEST_PG"))
		failed += cmocka_run_group_tests_name("odb: postgres (small objects)", pg, NULL,
						      NULL);
	if (getenv("AIRLOCK_TEST_PG") && getenv("AIRLOCK_TEST_S3"))
		failed += cmocka_run_group_tests_name("odb: postgres + s3 (the tier)", tier, NULL,
						      NULL);
	if (getenv("AIRLOCK_TEST_S3_HOSTILE"))
		failed += cmocka_run_group_tests_name("odb: a hostile s3", hostile_server, NULL,
						      NULL);
	return failed;
}
