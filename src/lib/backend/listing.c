/* listing: foreach and the sweep over an object backend's listing
 * (listing.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/listing.h"
#include "util.h"

struct each {
	al_odb_foreach_fn fn;
	void *ctx;
};

static int each_one(void *ctx, const struct al_oid *id, uint64_t size, int64_t stored,
		    struct al_error *err)
{
	(void)stored;
	struct each *e = ctx;
	return e->fn(e->ctx, id, size, err);
}

int al_odb__foreach_listed(struct al_odb_backend *b, al_odb__list_fn list, al_odb_foreach_fn fn,
			   void *ctx, struct al_error *err)
{
	struct each e = { fn, ctx };
	return list(b, each_one, &e, err);
}

struct sweep {
	al_odb_keep_fn keep;
	void *ctx;
	int64_t before;
	struct al_odb_sweep *out;
	struct al_oid *ids;
	size_t n, cap;
};

/* the rule: what keep does not claim and was stored before `before` */
static int sweep_one(void *ctx, const struct al_oid *id, uint64_t size, int64_t stored,
		     struct al_error *err)
{
	struct sweep *x = ctx;
	if (x->keep(x->ctx, id))
		return 0;
	if (stored >= x->before) {
		x->out->young++;
		return 0;
	}
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 256;
		struct al_oid *p = realloc(x->ids, cap * sizeof(*p));
		if (!p)
			return al_fail(err, AL_ENOMEM, ENOMEM, "odb: sweep");
		x->ids = p;
		x->cap = cap;
	}
	x->ids[x->n++] = *id;
	x->out->objects++;
	x->out->bytes += size;
	return 0;
}

int al_odb__sweep_listed(struct al_odb_backend *b, al_odb__list_fn list, al_odb__delete_fn del,
			 al_odb_keep_fn keep, al_odb_doomed_fn doomed, void *ctx, int64_t before,
			 bool dry, struct al_odb_sweep *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	struct sweep x = { .keep = keep, .ctx = ctx, .before = before, .out = out };
	int r = list(b, sweep_one, &x, err);
	_cleanup_free_ struct al_oid *ids = x.ids;
	if (r < 0 || dry || x.n == 0)
		return r;
	if (doomed && (r = doomed(ctx, ids, x.n, err)) < 0)
		return r;
	return del(b, ids, x.n, before, err);
}
