/* tier: two object backends as one (include/airlock/odb_backend.h,
 * al_odb_tier_open): objects up to a size in the small one (the metadata
 * database's rows, backend/postgres/odb.c), the others in the large one
 * (the bucket).  An object's size decides where it is written; a read
 * does not know it, so it asks small first (one indexed lookup) and large
 * on a miss.  The threshold may change between runs of a deployment, so
 * either may hold any object: every question asks both. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/odb_backend.h"
#include "backend/odb_common.h"
#include "idset.h"
#include "util.h"

/* small objects a write_many holds in memory at once: at most this many,
 * and at most WINDOW_BYTES of them (with inline=1MiB, 256 would be
 * 256 MiB per commit) */
#define WINDOW 256
#define WINDOW_BYTES (8u << 20)

struct tier {
	struct al_odb_backend base;
	struct al_odb_backend *small, *large;
	uint64_t max;
};

static struct tier *tr(struct al_odb_backend *b)
{
	return (struct tier *)b;
}

/* max 0 (inline=0): nothing is written to small, which is still read */
static bool small_enough(const struct tier *t, uint64_t size)
{
	return t->max && size <= t->max;
}

/* After small's answer r (its error in first), the bucket's r2: a corrupt
 * row the bucket does not have either is reported as the row's failure,
 * which says more than "not found" */
static int large_answer(int r, const struct al_error *first, int r2, struct al_error *err)
{
	if (r == AL_ECORRUPT && r2 == AL_ENOTFOUND) {
		if (err)
			*err = *first;
		return r;
	}
	return r2;
}

/* the bucket is asked on a miss, and on a corrupt row */
#define ASK_LARGE(r) ((r) == AL_ENOTFOUND || (r) == AL_ECORRUPT)

/* small's read hashes a row before its sink sees a byte, so a corrupt row
 * leaves the sink untouched and the bucket's copy, if any, is read */
static int t_read(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink, void *ctx,
		  struct al_error *err)
{
	struct tier *t = tr(b);
	int r = t->small->read(t->small, id, sink, ctx, err);
	if (!ASK_LARGE(r))
		return r;
	struct al_error first = err ? *err : (struct al_error){ 0 };
	return large_answer(r, &first, t->large->read(t->large, id, sink, ctx, err), err);
}

static int t_read_header(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			 struct al_error *err)
{
	struct tier *t = tr(b);
	int r = t->small->read_header(t->small, id, size, err);
	if (!ASK_LARGE(r))
		return r;
	struct al_error first = err ? *err : (struct al_error){ 0 };
	return large_answer(r, &first, t->large->read_header(t->large, id, size, err), err);
}

static int t_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	struct tier *t = tr(b);
	int r = t->small->exists(t->small, id, err);
	return r == 0 ? t->large->exists(t->large, id, err) : r;
}

static int t_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
		   al_odb_source src, void *ctx, struct al_error *err)
{
	struct tier *t = tr(b);
	struct al_odb_backend *to = small_enough(t, size) ? t->small : t->large;
	return to->write(to, id, size, src, ctx, err);
}

/* ---- write_many: the small objects read here, a window at a time, and
 * written from memory; the large ones passed on with the caller's sources */

struct window {
	struct al_oid ids[WINDOW]; /* b[i].id, as write_many takes them */
	struct al_odb__buf b[WINDOW];
	uint8_t *owned[WINDOW]; /* b[i].p */
	struct al_odb__bufs bufs;
	uint64_t bytes; /* of b */
};

/* the window's objects to small (write), and the window emptied */
static int flush(struct tier *t, struct window *w, bool write, struct al_error *err)
{
	const struct al_odb_objects objs = al_odb__bufs_objects(&w->bufs);
	int r = write && w->bufs.n ? al_odb_write_many(t->small, w->ids, w->bufs.n, &objs, err) : 0;
	while (w->bufs.n)
		free(w->owned[--w->bufs.n]);
	w->bytes = 0;
	return r;
}

static int t_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
			const struct al_odb_objects *objs, struct al_error *err)
{
	struct tier *t = tr(b);
	_cleanup_free_ struct al_oid *large = malloc((n ? n : 1) * sizeof(*large));
	_cleanup_free_ struct window *w = calloc(1, sizeof(*w));
	if (!large || !w)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	w->bufs.b = w->b;
	size_t nl = 0;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		uint64_t size = 0;
		void *src = NULL;
		if ((r = objs->open(objs->ctx, &ids[i], &size, &src, err)) < 0)
			break;
		if (!small_enough(t, size)) {
			large[nl++] = ids[i];
		} else if (w->bufs.n && w->bytes + size > WINDOW_BYTES &&
			   (r = flush(t, w, true, err)) < 0) {
			/* the window full by its bytes: written before this one */
		} else if ((r = al_odb__read_exact(objs->read, src, size, &w->owned[w->bufs.n],
						   err)) == 0) {
			w->bytes += size;
			w->ids[w->bufs.n] = ids[i];
			w->b[w->bufs.n] = (struct al_odb__buf){ .id = ids[i],
								.p = w->owned[w->bufs.n],
								.len = (size_t)size };
			w->bufs.n++;
		}
		objs->close(src);
		if (r == 0 && w->bufs.n == WINDOW)
			r = flush(t, w, true, err);
	}
	int f = flush(t, w, r == 0, err);
	if (r == 0)
		r = f;
	if (r == 0 && nl)
		r = al_odb_write_many(t->large, large, nl, objs, err);
	return r;
}

/* ---- foreach: small's objects, then large's that small does not hold */

struct seen {
	struct al_idset set;
	al_odb_foreach_fn fn;
	void *ctx;
};

static int seen_small(void *ctx, const struct al_oid *id, uint64_t size, struct al_error *err)
{
	struct seen *s = ctx;
	if (al_idset_add(&s->set, id) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	return s->fn(s->ctx, id, size, err);
}

static int seen_large(void *ctx, const struct al_oid *id, uint64_t size, struct al_error *err)
{
	struct seen *s = ctx;
	return al_idset_has(&s->set, id) ? 0 : s->fn(s->ctx, id, size, err);
}

static int t_foreach(struct al_odb_backend *b, al_odb_foreach_fn fn, void *ctx,
		     struct al_error *err)
{
	struct tier *t = tr(b);
	struct seen s = { .fn = fn, .ctx = ctx };
	int r = t->small->foreach(t->small, seen_small, &s, err);
	if (r == 0)
		r = t->large->foreach(t->large, seen_large, &s, err);
	al_idset_release(&s.set);
	return r;
}

/* ---- sweep: doomed told once, the lists of both, before either deletes.
 * small's sweep runs first; when it has a list it calls small_doomed,
 * which runs large's sweep, whose doomed (or its end, when large has
 * nothing to delete) tells the caller both lists; small deletes last. */

struct tsweep {
	struct tier *t;
	al_odb_keep_fn keep;
	al_odb_doomed_fn doomed;
	void *ctx;
	int64_t before;
	struct al_odb_sweep large_out;
	const struct al_oid *small_ids;
	size_t nsmall;
	bool large_done, told;
};

static bool t_keep(void *ctx, const struct al_oid *id)
{
	struct tsweep *x = ctx;
	return x->keep(x->ctx, id);
}

/* the caller told small's ids and large's, each id once (an object both
 * sides hold goes from both: two copies, one id; the collector records
 * each id once) */
static int tell(struct tsweep *x, const struct al_oid *ids, size_t n, struct al_error *err)
{
	x->told = true;
	if (!x->doomed)
		return 0;
	size_t all = x->nsmall;
	struct al_idset seen = { 0 };
	_cleanup_free_ struct al_oid *both = malloc((x->nsmall + n + 1) * sizeof(*both));
	int r = both ? 0 : AL_ENOMEM;
	for (size_t i = 0; i < x->nsmall && r == 0; i++)
		r = al_idset_add(&seen, &x->small_ids[i]) < 0 ? AL_ENOMEM : 0;
	if (r == 0 && x->nsmall)
		memcpy(both, x->small_ids, x->nsmall * sizeof(*both));
	for (size_t i = 0; i < n && r == 0; i++)
		if (!al_idset_has(&seen, &ids[i]))
			both[all++] = ids[i];
	al_idset_release(&seen);
	if (r < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	return x->doomed(x->ctx, both, all, err);
}

static int large_doomed(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err)
{
	return tell(ctx, ids, n, err);
}

static int large_sweep(struct tsweep *x, struct al_error *err)
{
	struct tier *t = x->t;
	x->large_done = true;
	int r = t->large->sweep ? t->large->sweep(t->large, t_keep, large_doomed, x, x->before,
						  false, &x->large_out, err)
				: 0;
	if (r == 0 && !x->told && x->nsmall)
		r = tell(x, NULL, 0, err);
	return r;
}

static int small_doomed(void *ctx, const struct al_oid *ids, size_t n, struct al_error *err)
{
	struct tsweep *x = ctx;
	x->small_ids = ids;
	x->nsmall = n;
	return large_sweep(x, err);
}

static void add(struct al_odb_sweep *to, const struct al_odb_sweep *s)
{
	to->objects += s->objects;
	to->bytes += s->bytes;
	to->young += s->young;
}

static int t_sweep(struct al_odb_backend *b, al_odb_keep_fn keep, al_odb_doomed_fn doomed,
		   void *ctx, int64_t before, bool dry, struct al_odb_sweep *out,
		   struct al_error *err)
{
	struct tier *t = tr(b);
	memset(out, 0, sizeof(*out));
	struct tsweep x = { .t = t, .keep = keep, .doomed = doomed, .ctx = ctx, .before = before };
	struct al_odb_sweep so = { 0 };
	int r = 0;
	if (t->small->sweep)
		r = t->small->sweep(t->small, t_keep, dry ? NULL : small_doomed, &x, before, dry,
				    &so, err);
	if (r == 0 && dry && t->large->sweep)
		r = t->large->sweep(t->large, t_keep, NULL, &x, before, true, &x.large_out, err);
	else if (r == 0 && !x.large_done)
		r = large_sweep(&x, err);
	add(out, &so);
	add(out, &x.large_out);
	return r;
}

static void t_free(struct al_odb_backend *b)
{
	struct tier *t = tr(b);
	al_odb_backend_free(t->small);
	al_odb_backend_free(t->large);
	free(t);
}

int al_odb_tier_open(struct al_odb_backend *small, struct al_odb_backend *large, uint64_t max,
		     struct al_odb_backend **out, struct al_error *err)
{
	struct tier *t = calloc(1, sizeof(*t));
	if (!t) {
		al_odb_backend_free(small);
		al_odb_backend_free(large);
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	}
	t->small = small;
	t->large = large;
	t->max = max;
	t->base = (struct al_odb_backend){
		.version = AL_ODB_BACKEND_VERSION,
		.name = large->name,
		.read = t_read,
		.read_header = t_read_header,
		.write = t_write,
		.exists = t_exists,
		.foreach = t_foreach,
		.free = t_free,
		.write_many = t_write_many,
		.sweep = t_sweep,
	};
	*out = &t->base;
	return 0;
}
