/* diff1m HOME [FILES]: build two synthetic snapshots of FILES files (default
 * 1,000,000; 100 x 100 directories) that differ in 10 files, through the
 * real store, then time al_manifest_diff between them.
 * Prints: "<idA> <idB> <build_s> <first_ms> <median_ms> <max_ms> <changes>" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "util.h"

static long files_per_dir;

static int put_dir(struct al_cas *cas, struct al_entry *e, size_t n, uint8_t out[32])
{
	uint8_t *enc = NULL;
	size_t len = 0;
	if (al_node_encode(e, n, &enc, &len, NULL) < 0)
		return -1;
	int r = al_cas_put(cas, enc, len, out, NULL);
	free(enc);
	return r;
}

/* variant 1 changes file 7 of ten leaf directories */
static int build(struct al_cas *cas, int variant, uint8_t root[32])
{
	struct al_entry top[100], mid[100];
	struct al_entry *leaf = calloc((size_t)files_per_dir, sizeof(*leaf));
	char (*names)[32] = calloc((size_t)files_per_dir + 200, 32);
	char buf[64];
	for (int a = 0; a < 100; a++) {
		for (int b = 0; b < 100; b++) {
			for (long f = 0; f < files_per_dir; f++) {
				int n = snprintf(buf, sizeof(buf), "file %d/%d/%ld%s\n", a, b, f,
						 variant && f == 7 && b == 3 && a % 10 == 0 ? " changed" : "");
				snprintf(names[f], 32, "f%06ld.txt", f);
				leaf[f] = (struct al_entry){ .type = AL_T_FILE, .mode = 0644, .size = (uint64_t)n,
							     .name = names[f], .namelen = strlen(names[f]) };
				if (al_cas_put(cas, buf, (size_t)n, leaf[f].digest, NULL) < 0)
					return -1;
			}
			snprintf(names[files_per_dir + 100 + b], 32, "s%03d", b);
			mid[b] = (struct al_entry){ .type = AL_T_DIR, .mode = 0755,
						    .name = names[files_per_dir + 100 + b], .namelen = 4 };
			if (put_dir(cas, leaf, (size_t)files_per_dir, mid[b].digest) < 0)
				return -1;
		}
		static char tn[100][8];
		snprintf(tn[a], 8, "d%03d", a);
		top[a] = (struct al_entry){ .type = AL_T_DIR, .mode = 0755, .name = tn[a], .namelen = 4 };
		if (put_dir(cas, mid, 100, top[a].digest) < 0)
			return -1;
	}
	free(leaf);
	free(names);
	return put_dir(cas, top, 100, root);
}

static int count(void *ctx, const struct al_change *c, struct al_error *err)
{
	(void)c;
	(void)err;
	(*(long *)ctx)++;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long files = argc > 2 ? atol(argv[2]) : 1000000;
	files_per_dir = files / 10000 > 0 ? files / 10000 : 1;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_home_init(argv[1], &err) < 0 || al_store_open(argv[1], "default", &st, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	struct al_cas *cas = al_store_cas(st);
	uint8_t a[32], b[32];
	uint64_t t0 = al_now_ns();
	if (al_cas_begin(cas, &err) < 0 || build(cas, 0, a) < 0 || build(cas, 1, b) < 0 ||
	    al_cas_commit(cas, &err) < 0) {
		fprintf(stderr, "build failed: %s\n", err.msg);
		return 1;
	}
	double build_s = (double)(al_now_ns() - t0) / 1e9;
	struct al_snapshot_info info = { .files = (uint64_t)(files_per_dir * 10000), .source = "synthetic" };
	memcpy(info.id, a, 32);
	al_store_snapshot_add(st, &info, &err);
	memcpy(info.id, b, 32);
	al_store_snapshot_add(st, &info, &err);
	al_store_close(st);

	/* a fresh handle, as a CLI call would have */
	uint64_t t[21];
	long changes = 0;
	for (int i = 0; i < 21; i++) {
		if (al_store_open(argv[1], "default", &st, &err) < 0)
			return 1;
		changes = 0;
		uint64_t s = al_now_ns();
		if (al_manifest_diff(al_store_cas(st), a, b, count, &changes, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		t[i] = al_now_ns() - s;
		al_store_close(st);
	}
	uint64_t first = t[0];
	qsort(t, 21, sizeof(t[0]), cmp_u64);
	char ia[AL_ID_STRLEN + 1], ib[AL_ID_STRLEN + 1];
	al_id_fmt(a, ia);
	al_id_fmt(b, ib);
	printf("%s %s %.1f %.3f %.3f %.3f %ld\n", ia, ib, build_s, (double)first / 1e6, (double)t[10] / 1e6,
	       (double)t[20] / 1e6, changes);
	return 0;
}
