/* odb DIR S3URL COUNT SIZE: object write and read throughput through the
 * object backend interface (odb_backend.h), the local store in DIR and the
 * S3 bucket at S3URL side by side: COUNT distinct objects of SIZE bytes
 * each written one at a time, then read back (verified), then COUNT more
 * written as one batch (what a commit or an import does: S3's write_many,
 * 8 uploads at once; the local store's al_cas batch, one commit).  Prints,
 * per backend, "NAME write_mb_s W read_mb_s R write_objects_s OW
 * read_objects_s OR batch_mb_s B batch_objects_s OB". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/odb_backend.h"
#include "util.h"

struct mem {
	uint8_t *p;
	size_t size;
	size_t pos;
};

struct by_pos {
	struct mem *objs;
	const struct al_oid *ids;
	size_t n;
};

/* write_many hands back a pointer into the ids it was given: its position
 * is the object's */
static int pos_open(void *ctx, const struct al_oid *id, uint64_t *size, void **src,
		    struct al_error *err)
{
	struct by_pos *x = ctx;
	size_t i = (size_t)(id - x->ids);
	struct mem *m = malloc(sizeof(*m));
	if (i >= x->n || !m) {
		free(m);
		return al_fail(err, AL_ENOMEM, 0, "bench");
	}
	*m = x->objs[i];
	m->pos = 0;
	*size = m->size;
	*src = m;
	return 0;
}

static int64_t mem_read(void *ctx, void *buf, size_t n, struct al_error *err)
{
	(void)err;
	struct mem *m = ctx;
	size_t k = m->size - m->pos < n ? m->size - m->pos : n;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (int64_t)k;
}

static void mem_close(void *src)
{
	free(src);
}

/* COUNT objects written as one batch: S3's write_many, or (local, dir set)
 * one al_cas batch; seconds, or negative on failure */
static double batch(struct al_odb_backend *b, const char *dir, const char *name, int count,
		    size_t size)
{
	struct al_error err = { 0 };
	struct mem *objs = calloc((size_t)count, sizeof(*objs));
	struct al_oid *ids = calloc((size_t)count, sizeof(*ids));
	if (!objs || !ids)
		return -1;
	uint64_t salt = al_now_ns() ^ 0x5a5a5a5a;
	for (int i = 0; i < count; i++) {
		objs[i].p = malloc(size);
		objs[i].size = size;
		for (size_t k = 0; k < size; k++)
			objs[i].p[k] = (uint8_t)(k * 31 + (size_t)i);
		memcpy(objs[i].p, &salt, sizeof(salt));
		memcpy(objs[i].p + sizeof(salt), &i, sizeof(i));
		al_sha256(objs[i].p, size, ids[i].b);
	}
	double t = -1;
	uint64_t t0 = al_now_ns();
	if (dir) {
		struct al_cas *c = NULL;
		int r = al_cas_open(dir, &c, &err);
		if (r == 0)
			r = al_cas_begin(c, &err);
		for (int i = 0; r == 0 && i < count; i++) {
			struct al_oid got;
			r = al_cas_put(c, objs[i].p, size, &got, &err);
		}
		if (r == 0)
			r = al_cas_commit(c, &err);
		al_cas_close(c);
		if (r == 0)
			t = (double)(al_now_ns() - t0) / 1e9;
	} else {
		struct by_pos ctx = { objs, ids, (size_t)count };
		const struct al_odb_objects src = { pos_open, mem_read, mem_close, &ctx };
		if (al_odb_write_many(b, ids, (size_t)count, &src, &err) == 0)
			t = (double)(al_now_ns() - t0) / 1e9;
	}
	if (t < 0)
		fprintf(stderr, "%s: batch: %s\n", name, err.msg);
	for (int i = 0; i < count; i++)
		free(objs[i].p);
	free(objs);
	free(ids);
	return t;
}

static int bench(struct al_odb_backend *b, const char *dir, const char *name, int count,
		 size_t size)
{
	struct al_error err = { 0 };
	uint8_t *buf = malloc(size);
	struct al_oid *ids = calloc((size_t)count, sizeof(*ids));
	if (!buf || !ids)
		return 1;
	for (size_t i = 0; i < size; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	/* distinct per run too: a bucket that already has them would skip nothing,
	 * but the local store would */
	uint64_t salt = al_now_ns();
	uint64_t t0 = al_now_ns();
	for (int i = 0; i < count; i++) {
		memcpy(buf, &salt, sizeof(salt));
		memcpy(buf + sizeof(salt), &i, sizeof(i));
		if (al_odb_write_buf(b, buf, size, &ids[i], &err) < 0) {
			fprintf(stderr, "%s: write: %s\n", name, err.msg);
			return 1;
		}
	}
	double tw = (double)(al_now_ns() - t0) / 1e9;
	t0 = al_now_ns();
	for (int i = 0; i < count; i++) {
		uint8_t *p = NULL;
		size_t len;
		if (al_odb_read_all(b, &ids[i], &p, &len, &err) < 0 || len != size) {
			fprintf(stderr, "%s: read: %s\n", name, err.msg);
			return 1;
		}
		free(p);
	}
	double tr = (double)(al_now_ns() - t0) / 1e9;
	double tb = batch(b, dir, name, count, size);
	if (tb < 0)
		return 1;
	double mb = (double)size * count / 1e6;
	printf("%s write_mb_s %.1f read_mb_s %.1f write_objects_s %.0f read_objects_s %.0f "
	       "batch_mb_s %.1f batch_objects_s %.0f\n",
	       name, mb / tw, mb / tr, count / tw, count / tr, mb / tb, count / tb);
	free(buf);
	free(ids);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: odb DIR S3URL COUNT SIZE\n");
		return 2;
	}
	int count = atoi(argv[3]);
	size_t size = (size_t)strtoull(argv[4], NULL, 10);
	struct al_error err = { 0 };
	struct al_odb_backend *local = NULL, *s3 = NULL;
	struct al_s3_config cfg;
	if (al_odb_sqlite_open(argv[1], &local, &err) < 0 ||
	    al_s3_config_parse(argv[2], &cfg, &err) < 0 ||
	    al_odb_s3_open(&cfg, "bench", &s3, &err) < 0) {
		fprintf(stderr, "odb: %s\n", err.msg);
		return 1;
	}
	int r = bench(local, argv[1], "local", count, size) || bench(s3, NULL, "s3", count, size);
	al_odb_backend_free(local);
	al_odb_backend_free(s3);
	return r;
}
