/* Private: how the layers that act append to the ledger, inside their own
 * transaction of the tenant's metadata, so an entry exists exactly when
 * its effect does. */
#ifndef AL_LEDGER_PRIVATE_H
#define AL_LEDGER_PRIVATE_H

#include <jansson.h>

#include "airlock/ledger.h"

struct al_ledger_rec {
	const char *kind, *group, *project, *actor;
	json_t *data; /* an object; not stolen */
};
/* Append inside txn (a write transaction of the tenant's metadata,
 * db.h), and end it: on success sign a checkpoint of the ledger in it and
 * commit, so the entries and the checkpoint land with the effect or not
 * at all; on failure (r < 0) roll back.  Returns r or the commit's
 * failure. */
struct al_db_txn;
int al_ledger__append_txn(struct al_store *st, struct al_db_txn *txn,
			  const struct al_ledger_rec *rec, uint64_t *seq, struct al_error *err);
int al_ledger__commit(struct al_store *st, struct al_db_txn *txn, int r, struct al_error *err);
/* Append on db, which the caller has in a write transaction (a helper
 * given the connection, not the transaction). */
struct al_db;
int al_ledger__append_db(struct al_store *st, struct al_db *db, const struct al_ledger_rec *rec,
			 uint64_t *seq, struct al_error *err);
/* A fresh group id: "g" + 15 hex digits. */
void al_ledger__new_group(char out[17]);

#endif
