/* odb_common: what more than one object backend does (odb_common.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend/odb_common.h"
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

int al_odb__read_exact(al_odb_source read, void *src, uint64_t size, uint8_t **out,
		       struct al_error *err)
{
	uint8_t *p = malloc(size + 1); /* one more: a source that goes on is caught */
	if (!p)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	uint64_t got = 0;
	int r = 0;
	for (;;) {
		int64_t n = read(src, p + got, size + 1 - got, err);
		if (n <= 0) {
			r = (int)n;
			break;
		}
		if ((got += (uint64_t)n) > size) {
			r = al_fail(err, AL_EINVAL, 0, "odb: more than the %llu bytes announced",
				    (unsigned long long)size);
			break;
		}
	}
	if (r == 0 && got != size)
		r = al_fail(err, AL_EINVAL, 0, "odb: %llu bytes of the %llu announced",
			    (unsigned long long)got, (unsigned long long)size);
	if (r < 0) {
		free(p);
		return r;
	}
	*out = p;
	return 0;
}

static int64_t buf_read(void *ctx, void *to, size_t n, struct al_error *err)
{
	(void)err;
	struct al_odb__buf *b = ctx;
	size_t k = b->len - b->pos < n ? b->len - b->pos : n;
	if (k)
		memcpy(to, b->p + b->pos, k);
	b->pos += k;
	return (int64_t)k;
}

static int buf_open(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		    struct al_error *err)
{
	struct al_odb__bufs *bufs = ctx;
	for (size_t i = 0; i < bufs->n; i++)
		if (al_oid_eq(&bufs->b[i].id, id)) {
			bufs->b[i].pos = 0;
			*size = bufs->b[i].len;
			*src = &bufs->b[i];
			return 0;
		}
	return al_fail(err, AL_EINVAL, 0, "odb: an object the batch does not hold");
}

static void buf_close(void *src)
{
	(void)src;
}

struct al_odb_objects al_odb__bufs_objects(struct al_odb__bufs *bufs)
{
	return (struct al_odb_objects){ buf_open, buf_read, buf_close, bufs };
}
