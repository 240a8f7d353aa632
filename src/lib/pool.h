/* Private: a fixed pool of worker threads running index ranges. */
#ifndef AL_POOL_H
#define AL_POOL_H

#include <stddef.h>

struct al_pool;
typedef void (*al_pool_fn)(void *ctx, size_t i, unsigned worker);

/* extra workers beside the calling thread; 0 runs everything inline */
int al_pool_new(unsigned extra, struct al_pool **out);
void al_pool_free(struct al_pool *p);
unsigned al_pool_size(const struct al_pool *p); /* extra + 1 */
/* Run fn for every i in [0, n) on all threads; the caller is worker 0.
 * Returns when all are done. */
void al_pool_run(struct al_pool *p, size_t n, al_pool_fn fn, void *ctx);

#endif
