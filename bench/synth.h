/* Synthetic trees built through the real store (bench helpers): 100 top
 * directories x 100 subdirectories x files_per_dir files.  A variant
 * changes file 7 of the leaf directories it selects. */
#ifndef BENCH_SYNTH_H
#define BENCH_SYNTH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"

typedef int (*synth_changed_fn)(int a, int b, long f, int variant);

static int synth_put_dir(struct al_cas *cas, struct al_entry *e, size_t n, struct al_oid *out)
{
	uint8_t *enc = NULL;
	size_t len = 0;
	if (al_node_encode(e, n, &enc, &len, NULL) < 0)
		return -1;
	int r = al_cas_put(cas, enc, len, out, NULL);
	free(enc);
	return r;
}

/* Build one tree inside an open batch; changed(a, b, f, variant) says which
 * files carry the variant's content. */
static int synth_build(struct al_cas *cas, long files_per_dir, int variant,
		       synth_changed_fn changed, struct al_oid *root)
{
	static char tn[100][8], mn[100][8];
	struct al_entry top[100], mid[100];
	struct al_entry *leaf = calloc((size_t)files_per_dir, sizeof(*leaf));
	char(*names)[24] = calloc((size_t)files_per_dir, 24);
	char buf[64];
	if (!leaf || !names)
		return -1;
	for (int a = 0; a < 100; a++) {
		for (int b = 0; b < 100; b++) {
			for (long f = 0; f < files_per_dir; f++) {
				bool ch = variant && changed(a, b, f, variant);
				int n = snprintf(buf, sizeof(buf), "file %d/%d/%ld%s%d\n", a, b, f,
						 ch ? " changed " : "", ch ? variant : 0);
				snprintf(names[f], 24, "f%06ld.txt", f);
				leaf[f] = (struct al_entry){ .type = AL_T_FILE,
							     .mode = 0644,
							     .size = (uint64_t)n,
							     .name = names[f],
							     .namelen = strlen(names[f]) };
				if (al_cas_put(cas, buf, (size_t)n, &leaf[f].digest, NULL) < 0)
					return -1;
			}
			snprintf(mn[b], 8, "s%03d", b);
			mid[b] = (struct al_entry){
				.type = AL_T_DIR, .mode = 0755, .name = mn[b], .namelen = 4
			};
			if (synth_put_dir(cas, leaf, (size_t)files_per_dir, &mid[b].digest) < 0)
				return -1;
			uint64_t sz = 0;
			for (long f = 0; f < files_per_dir; f++)
				sz += leaf[f].size;
			mid[b].size = sz;
		}
		snprintf(tn[a], 8, "d%03d", a);
		top[a] = (struct al_entry){
			.type = AL_T_DIR, .mode = 0755, .name = tn[a], .namelen = 4
		};
		uint64_t sz = 0;
		for (int b = 0; b < 100; b++)
			sz += mid[b].size;
		top[a].size = sz;
		if (synth_put_dir(cas, mid, 100, &top[a].digest) < 0)
			return -1;
	}
	free(leaf);
	free(names);
	return synth_put_dir(cas, top, 100, root);
}

#endif
