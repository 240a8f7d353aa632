/* Private to fsck: the comparison of the tables with the ledger. */
#ifndef AL_FSCK_PRIVATE_H
#define AL_FSCK_PRIVATE_H

#include <stdint.h>

#include "airlock/error.h"
#include "airlock/store.h"

typedef void (*al_fsck_problem_fn)(void *ctx, const char *kind, const struct al_oid *id,
				   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Run records, commits, heads and drafts' states against what the ledger
 * says; each difference goes to problem ("ledger", the id concerned or
 * zeros, a sentence). */
int al_fsck__ledger(struct al_store *st, al_fsck_problem_fn problem, void *ctx,
		    struct al_error *err);

#endif
