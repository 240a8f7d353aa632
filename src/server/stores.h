/* airlockd's idle tenant stores, kept for the next request or run of the
 * same tenant.  Opening a store (files, SQLite connections, schema, and
 * SQLite's sync of each write-ahead log's directory at a connection's first
 * commit) costs most of a small request and about a millisecond of a run.
 * Below http.c and scheduler.c; calls neither. */
#ifndef AL_STORES_H
#define AL_STORES_H

#include <stdint.h>

#include "airlock/error.h"

struct al_store;

/* An idle store of tenant (home is the daemon's one home), else a new one.
 * The store is the caller's alone until it gives it back. */
int srv_stores_take(const char *home, const char *tenant, struct al_store **out,
		    struct al_error *err);
/* Back to the kept ones (NULL: nothing); closed instead when a failure left
 * a transaction open, and the least recently used closed beyond
 * SRV_STORES_KEPT. */
void srv_stores_give(struct al_store *st);
/* Close the kept stores unused since before now_ns - SRV_STORES_IDLE_NS
 * (the watchdog's tick: an idle daemon gives back what they hold;
 * UINT64_MAX: all of them, at the end).  Returns how many were closed. */
unsigned srv_stores_expire(uint64_t now_ns);

#define SRV_STORES_KEPT 16               /* the request threads' 8 and as many runs */
#define SRV_STORES_IDLE_NS 1000000000ull /* kept unused for a second at most */

#endif
