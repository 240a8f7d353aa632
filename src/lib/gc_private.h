/* Private to libairlock: how a run marks the lower layers it uses (gc.c). */
#ifndef AL_GC_PRIVATE_H
#define AL_GC_PRIVATE_H

#include <stdbool.h>

#include "airlock/error.h"

/* Hold the layer lowers/<name> in use: its lock file <name>.lock, held
 * shared (until the returned fd is closed) and stamped with the time (the
 * layer's last use).  Take it before looking for the layer: a collector
 * that removed it meanwhile has also removed the lock file, which this
 * notices and retries on a fresh one.  Returns the fd or a negative code. */
int al_gc__layer_use(int lowers, const char *name, struct al_error *err);

/* Is lowers/<name> (a ".tmp-" directory being materialised) abandoned: its
 * <name>.lock is missing or held by no process?  The materialiser creates
 * and locks it before the directory exists and removes it last. */
bool al_gc__staging_dead(int lowers, const char *name);

#endif
