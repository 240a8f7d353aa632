/* stores: airlockd's idle tenant stores (stores.h).  One list for the
 * request threads and the runs' threads alike: a run's thread lives for one
 * run, so a store kept per thread would close with it.  A kept store holds
 * SQLite's caches (given back first: al_store_release_memory), zstd
 * contexts and buffers, about 300 KiB; it is handed out only to the tenant
 * it was opened for. */
#include <pthread.h>
#include <string.h>

#include "airlock/store.h"
#include "airlock/util.h"
#include "stores.h"

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct al_store *st;
	uint64_t used_ns;
} kept[SRV_STORES_KEPT];

int srv_stores_take(const char *home, const char *tenant, struct al_store **out,
		    struct al_error *err)
{
	*out = NULL;
	pthread_mutex_lock(&kept_lock);
	size_t best = SRV_STORES_KEPT;
	for (size_t i = 0; i < SRV_STORES_KEPT; i++) /* the warmest: the last one used */
		if (kept[i].st && !strcmp(al_store_tenant(kept[i].st), tenant) &&
		    (best == SRV_STORES_KEPT || kept[i].used_ns > kept[best].used_ns))
			best = i;
	if (best < SRV_STORES_KEPT) {
		*out = kept[best].st;
		kept[best].st = NULL;
	}
	pthread_mutex_unlock(&kept_lock);
	return *out ? 0 : al_store_open(home, tenant, out, err);
}

void srv_stores_give(struct al_store *st)
{
	if (!st)
		return;
	if (!al_store_idle(st)) { /* a failure left something open: do not reuse it */
		al_store_close(st);
		return;
	}
	al_store_release_memory(st);
	pthread_mutex_lock(&kept_lock);
	size_t slot = 0; /* an empty slot, else the least recently used */
	for (size_t i = 0; i < SRV_STORES_KEPT && kept[slot].st; i++)
		if (!kept[i].st || kept[i].used_ns < kept[slot].used_ns)
			slot = i;
	struct al_store *old = kept[slot].st;
	kept[slot].st = st;
	kept[slot].used_ns = al_now_ns();
	pthread_mutex_unlock(&kept_lock);
	al_store_close(old);
}

unsigned srv_stores_expire(uint64_t now_ns)
{
	struct al_store *idle[SRV_STORES_KEPT];
	unsigned n = 0;
	pthread_mutex_lock(&kept_lock);
	for (size_t i = 0; i < SRV_STORES_KEPT; i++)
		if (kept[i].st &&
		    (now_ns == UINT64_MAX || kept[i].used_ns + SRV_STORES_IDLE_NS <= now_ns)) {
			idle[n++] = kept[i].st; /* used after now_ns: kept */
			kept[i].st = NULL;
		}
	pthread_mutex_unlock(&kept_lock);
	for (unsigned i = 0; i < n; i++)
		al_store_close(idle[i]);
	return n;
}
