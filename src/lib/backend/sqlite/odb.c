/* odb: the object backend interface's shared helpers, and the local store
 * (cas.c) as a backend (include/airlock/odb_backend.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/odb_backend.h"
#include "backend/odb_common.h"
#include "cas_private.h"
#include "util.h"

void al_odb_backend_free(struct al_odb_backend *b)
{
	if (b)
		b->free(b);
}

static int buf_sink(void *ctx, const void *p, size_t n, struct al_error *err)
{
	if (al_buf_put(ctx, p, n) < 0)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	return 0;
}

int al_odb_read_all(struct al_odb_backend *b, const struct al_oid *id, uint8_t **out, size_t *len,
		    struct al_error *err)
{
	struct al_buf buf = { 0 };
	int r = b->read(b, id, buf_sink, &buf, err);
	if (r == 0 && al_buf_reserve(&buf, 1) < 0)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	if (r < 0) {
		al_buf_release(&buf); /* unverified bytes never reach the caller */
		return r;
	}
	buf.p[buf.len] = 0;
	*out = buf.p;
	*len = buf.len;
	return 0;
}

int al_odb_write_many(struct al_odb_backend *b, const struct al_oid *ids, size_t n,
		      const struct al_odb_objects *objs, struct al_error *err)
{
	if (b->write_many)
		return b->write_many(b, ids, n, objs, err);
	for (size_t i = 0; i < n; i++) {
		uint64_t size = 0;
		void *src = NULL;
		int r = objs->open(objs->ctx, &ids[i], &size, &src, err);
		if (r < 0)
			return r;
		r = b->write(b, &ids[i], size, objs->read, src, err);
		objs->close(src);
		if (r < 0)
			return r;
	}
	return 0;
}

int al_odb_write_buf(struct al_odb_backend *b, const void *data, size_t len, struct al_oid *id_out,
		     struct al_error *err)
{
	struct al_odb__buf one = { .p = data, .len = len };
	al_sha256(data, len, one.id.b);
	*id_out = one.id;
	struct al_odb__bufs bufs = { &one, 1 };
	const struct al_odb_objects objs = al_odb__bufs_objects(&bufs);
	return al_odb_write_many(b, id_out, 1, &objs, err);
}

/* ---- the local store as a backend ------------------------------------------------ */

struct sqlite_odb {
	struct al_odb_backend base;
	struct al_cas *cas;
};

static struct al_cas *cas_of(struct al_odb_backend *b)
{
	return ((struct sqlite_odb *)b)->cas;
}

static int sq_read(struct al_odb_backend *b, const struct al_oid *id, al_cas_sink sink, void *ctx,
		   struct al_error *err)
{
	return al_cas_stream(cas_of(b), id, sink, ctx, err);
}

static int sq_read_header(struct al_odb_backend *b, const struct al_oid *id, uint64_t *size,
			  struct al_error *err)
{
	return al_cas_size(cas_of(b), id, size, err);
}

static int sq_exists(struct al_odb_backend *b, const struct al_oid *id, struct al_error *err)
{
	return al_cas__has_local(cas_of(b), id, err);
}

#define SQ_CHUNK (256u * 1024)

static int sq_write(struct al_odb_backend *b, const struct al_oid *id, uint64_t size,
		    al_odb_source src, void *ctx, struct al_error *err)
{
	struct al_cas *c = cas_of(b);
	_cleanup_free_ uint8_t *chunk = malloc(SQ_CHUNK);
	if (!chunk)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	int r = al_cas_begin(c, err);
	if (r < 0)
		return r;
	struct al_cas_writer *w = NULL;
	if ((r = al_cas_write_begin(c, size, &w, err)) < 0)
		goto fail;
	uint64_t total = 0;
	for (;;) {
		int64_t n = src(ctx, chunk, SQ_CHUNK, err);
		if (n < 0) {
			r = (int)n;
			goto fail;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		if (total > size) {
			r = al_fail(err, AL_EINVAL, 0, "odb: more than the %llu bytes announced",
				    (unsigned long long)size);
			goto fail;
		}
		if ((r = al_cas_write(w, chunk, (size_t)n, err)) < 0)
			goto fail;
	}
	struct al_oid got;
	r = al_cas_write_end(w, &got, err);
	w = NULL;
	if (r < 0)
		goto fail;
	if (!al_oid_eq(&got, id)) {
		char hex[AL_OID_STRLEN + 1];
		al_oid_fmt(id, hex);
		r = al_fail(err, AL_ECORRUPT, 0, "odb: the bytes written as %s hash to another id",
			    hex);
		goto fail;
	}
	return al_cas_commit(c, err);
fail:
	al_cas_write_abort(w);
	al_cas_abort(c);
	return r;
}

struct sq_walk {
	al_odb_foreach_fn fn;
	void *ctx;
};

static int sq_walk_one(void *ctx, const struct al_cas__object *o, struct al_error *err)
{
	struct sq_walk *w = ctx;
	return w->fn(w->ctx, &o->id, o->size, err);
}

static int sq_foreach(struct al_odb_backend *b, al_odb_foreach_fn fn, void *ctx,
		      struct al_error *err)
{
	struct sq_walk w = { fn, ctx };
	return al_cas__foreach(cas_of(b), 0, sq_walk_one, &w, err);
}

static void sq_free(struct al_odb_backend *b)
{
	al_cas_close(cas_of(b));
	free(b);
}

int al_odb_sqlite_open(const char *dir, struct al_odb_backend **out, struct al_error *err)
{
	struct sqlite_odb *s = calloc(1, sizeof(*s));
	if (!s)
		return al_fail(err, AL_ENOMEM, ENOMEM, "odb");
	int r = al_cas_open(dir, &s->cas, err);
	if (r < 0) {
		free(s);
		return r;
	}
	s->base = (struct al_odb_backend){
		.version = AL_ODB_BACKEND_VERSION,
		.name = "sqlite",
		.read = sq_read,
		.read_header = sq_read_header,
		.write = sq_write,
		.exists = sq_exists,
		.foreach = sq_foreach,
		.free = sq_free,
	};
	*out = &s->base;
	return 0;
}
