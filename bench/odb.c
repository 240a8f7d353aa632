/* odb DIR S3URL COUNT SIZE: object write and read throughput through the
 * object backend interface (odb_backend.h), the local store in DIR and the
 * S3 bucket at S3URL side by side: COUNT distinct objects of SIZE bytes
 * each written, then read back (verified).  Prints, per backend,
 * "NAME write_mb_s W read_mb_s R objects_per_s_write OW". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/odb_backend.h"
#include "util.h"

static int bench(struct al_odb_backend *b, const char *name, int count, size_t size)
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
	double mb = (double)size * count / 1e6;
	printf("%s write_mb_s %.1f read_mb_s %.1f write_objects_s %.0f read_objects_s %.0f\n", name,
	       mb / tw, mb / tr, count / tw, count / tr);
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
	int r = bench(local, "local", count, size) || bench(s3, "s3", count, size);
	al_odb_backend_free(local);
	al_odb_backend_free(s3);
	return r;
}
