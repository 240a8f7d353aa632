/* Private to libairlock: RFC 6962 over a stored tree, and the compact
 * range (merkle.c).  The public hashing is in airlock/ledger.h. */
#ifndef AL_MERKLE_H
#define AL_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#include "airlock/error.h"

/* A tree whose complete, aligned subtrees can be looked up: subtree() gives
 * the hash of the leaves [idx*2^level, (idx+1)*2^level). */
struct al_merkle_store {
	int (*subtree)(void *ctx, unsigned level, uint64_t idx, uint8_t out[AL_DIGEST_LEN],
		       struct al_error *err);
	void *ctx;
};
/* MTH(D[lo:hi]), hi > lo, from O(log n) subtrees. */
int al_merkle__mth(const struct al_merkle_store *t, uint64_t lo, uint64_t hi,
		   uint8_t out[AL_DIGEST_LEN], struct al_error *err);
/* RFC 6962 PROOF(index, D[0:size]) and PROOF(size1, D[0:size2]); the caller
 * checked the sizes.  *out is malloc'ed (NULL when the proof is empty). */
int al_merkle__inclusion(const struct al_merkle_store *t, uint64_t index, uint64_t size,
			 uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err);
int al_merkle__consistency(const struct al_merkle_store *t, uint64_t size1, uint64_t size2,
			   uint8_t (**out)[AL_DIGEST_LEN], size_t *nout, struct al_error *err);

/* The complete subtrees of a prefix read so far, left to right: enough to
 * give its root, in O(log n) memory.  Zero-initialised is empty. */
struct al_merkle_range {
	uint8_t h[64][AL_DIGEST_LEN];
	unsigned level[64];
	int n;
	uint64_t size;
};
/* Append a complete subtree (a leaf: level 0) and merge equal neighbours. */
void al_merkle__range_push(struct al_merkle_range *g, const uint8_t h[AL_DIGEST_LEN],
			   unsigned level);
/* The root of the prefix (g->n > 0). */
void al_merkle__range_root(const struct al_merkle_range *g, uint8_t out[AL_DIGEST_LEN]);

#endif
