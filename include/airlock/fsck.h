/* airlock — verify a tenant's store: every object's bytes against its
 * digest, and every object reachable from a recorded snapshot present,
 * decodable and of the recorded size. */
#ifndef AIRLOCK_FSCK_H
#define AIRLOCK_FSCK_H

#include <stdint.h>

#include "airlock/error.h"
#include "airlock/oid.h"

struct al_store;

struct al_fsck_summary {
	uint64_t objects, packed, loose, bytes;
	uint64_t snapshots, nodes, entries;
	uint64_t corrupt, missing;
	uint64_t ledger;             /* tables that differ from what the ledger says */
	uint64_t unreferenced_files; /* left by an interrupted batch; harmless */
};

/* problem: "corrupt" or "missing" (an object), or "ledger" (a run record,
 * commit, head or draft state that differs from the ledger: id the
 * snapshot concerned, or zeros); why a sentence. */
typedef void (*al_fsck_report_fn)(void *ctx, const char *problem, const struct al_oid *id,
				  const char *why);

/* Only the comparison with the ledger (run records, commits, heads,
 * drafts' states): the daemon runs it at start.  Returns the number of
 * differences or a negative code. */
int al_fsck_ledger(struct al_store *st, al_fsck_report_fn report, void *ctx, struct al_error *err);

/* Returns the number of problems found (0: clean) or a negative code. */
int al_fsck(struct al_store *st, al_fsck_report_fn report, void *ctx,
	    struct al_fsck_summary *summary, struct al_error *err);

#endif
