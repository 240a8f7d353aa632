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

#include "synth.h"

/* variant 1 changes file 7 of ten leaf directories */
static int ten(int a, int b, long f, int variant)
{
	(void)variant;
	return f == 7 && b == 3 && a % 10 == 0;
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
	long files_per_dir = files / 10000 > 0 ? files / 10000 : 1;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (al_home_init(argv[1], &err) < 0 || al_store_open(argv[1], "default", &st, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	struct al_cas *cas = al_store_cas(st);
	struct al_oid a, b;
	uint64_t t0 = al_now_ns();
	if (al_cas_begin(cas, &err) < 0 || synth_build(cas, files_per_dir, 0, ten, &a) < 0 ||
	    synth_build(cas, files_per_dir, 1, ten, &b) < 0 || al_cas_commit(cas, &err) < 0) {
		fprintf(stderr, "build failed: %s\n", err.msg);
		return 1;
	}
	double build_s = (double)(al_now_ns() - t0) / 1e9;
	struct al_snapshot_info info = { .files = (uint64_t)(files_per_dir * 10000),
					 .source = "synthetic" };
	info.id = a;
	al_store_snapshot_add(st, &info, &err);
	info.id = b;
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
		if (al_manifest_diff(al_store_cas(st), &a, &b, count, &changes, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		t[i] = al_now_ns() - s;
		al_store_close(st);
	}
	uint64_t first = t[0];
	qsort(t, 21, sizeof(t[0]), cmp_u64);
	char ia[AL_OID_STRLEN + 1], ib[AL_OID_STRLEN + 1];
	al_oid_fmt(&a, ia);
	al_oid_fmt(&b, ib);
	printf("%s %s %.1f %.3f %.3f %.3f %ld\n", ia, ib, build_s, (double)first / 1e6,
	       (double)t[10] / 1e6, (double)t[20] / 1e6, changes);
	return 0;
}
