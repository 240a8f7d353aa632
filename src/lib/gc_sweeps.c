/* gc_sweeps: the bucket's sweeps told to every node (gc_private.h).
 *
 * A node's local store dedups against itself: an object it holds is not
 * uploaded again.  Another node's pass may meanwhile delete that object
 * from the shared bucket (old and unreferenced then), so a commit naming it
 * would name an object the bucket lacks.  Each pass therefore records what
 * it deletes, under a new sweep generation, in the transaction that holds
 * the tenant's write lock; and every write transaction of a node, once it
 * holds that lock, catches up: what was swept since the generation its
 * local store last caught up with, and that it holds, goes to the bucket
 * again before the transaction names anything (a fetch from the bucket
 * that such a catch-up overtakes is uploaded again as it lands: cas.c,
 * land_fetched).  Why that suffices:
 * docs/architecture.md, "Garbage collection in the bucket". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/store.h"
#include "cas_private.h"
#include "db.h"
#include "gc_private.h"
#include "util.h"

/* settings blobs_gen (the last pass's) and blobs_pruned (the newest whose
 * ids are forgotten); 0 when absent */
static int gens_read(struct al_db *db, int64_t *gen, int64_t *pruned, struct al_error *err)
{
	*gen = *pruned = 0;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db,
			      "SELECT name, value FROM settings"
			      " WHERE name IN ('blobs_gen', 'blobs_pruned')",
			      &q, err);
	while (r == 0 && (r = al_db_step(q, err)) == AL_DB_ROW) {
		r = 0;
		const char *name = al_db_column_text(q, 0);
		int64_t v = al_db_column_int64(q, 1);
		if (!strcmp(name, "blobs_gen"))
			*gen = v;
		else
			*pruned = v;
	}
	return r < 0 ? al_error_prefix(err, "bucket sweeps: ") : 0;
}

static int setting_put(struct al_db *db, const char *name, int64_t v, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	int r = al_db_prepare(db, "DELETE FROM settings WHERE name = ?1", &del, err);
	if (r == 0) {
		al_db_bind_text(del, 1, name, -1);
		r = al_db_step(del, err);
	}
	if (r == 0 && (r = al_db_prepare(db, "INSERT INTO settings(name, value) VALUES (?1, ?2)",
					 &ins, err)) == 0) {
		al_db_bind_text(ins, 1, name, -1);
		al_db_bind_int64(ins, 2, v);
		r = al_db_step(ins, err);
	}
	return r < 0 ? al_error_prefix(err, "bucket sweeps: ") : 0;
}

int al_gc__swept_record(struct al_db *db, const struct al_oid *ids, size_t n, int64_t now,
			struct al_error *err)
{
	int64_t gen, pruned;
	int r = gens_read(db, &gen, &pruned, err);
	if (r < 0)
		return r;
	gen++;
	_cleanup_db_stmt_ struct al_db_stmt *ins = NULL, *old = NULL, *del = NULL;
	if ((r = al_db_prepare(db,
			       "INSERT INTO blobs_swept(gen, id, time) VALUES (?1, ?2, ?3) "
			       "ON CONFLICT DO NOTHING",
			       &ins, err)) < 0)
		return al_error_prefix(err, "bucket sweeps: ");
	for (size_t i = 0; i < n; i++) {
		al_db_bind_int64(ins, 1, gen);
		al_db_bind_blob(ins, 2, ids[i].b, AL_OID_LEN);
		al_db_bind_int64(ins, 3, now);
		if ((r = al_db_step(ins, err)) < 0)
			return al_error_prefix(err, "bucket sweeps: ");
		al_db_reset(ins);
	}
	if ((r = setting_put(db, "blobs_gen", gen, err)) < 0)
		return r;
	/* the ids of passes older than AL_GC_SWEPT_KEEP are forgotten; a node
	 * further behind uploads whatever the bucket lacks instead */
	int64_t forget = 0;
	if ((r = al_db_prepare(db, "SELECT coalesce(max(gen), 0) FROM blobs_swept WHERE time < ?1",
			       &old, err)) == 0) {
		al_db_bind_int64(old, 1, now - AL_GC_SWEPT_KEEP);
		if ((r = al_db_step(old, err)) == AL_DB_ROW) {
			forget = al_db_column_int64(old, 0);
			r = 0;
		}
	}
	if (r == 0 && forget > pruned &&
	    (r = al_db_prepare(db, "DELETE FROM blobs_swept WHERE gen <= ?1", &del, err)) == 0) {
		al_db_bind_int64(del, 1, forget);
		if ((r = al_db_step(del, err)) == 0)
			r = setting_put(db, "blobs_pruned", forget, err);
	}
	return r < 0 ? al_error_prefix(err, "bucket sweeps: ") : 0;
}

static int swept_since(struct al_db *db, int64_t since, struct al_oid **ids, size_t *n,
		       struct al_error *err)
{
	*ids = NULL;
	*n = 0;
	size_t cap = 0;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT id FROM blobs_swept WHERE gen > ?1", &q, err);
	if (r == 0)
		al_db_bind_int64(q, 1, since);
	while (r == 0 && (r = al_db_step(q, err)) == AL_DB_ROW) {
		r = 0;
		if (al_db_column_bytes(q, 0) != AL_OID_LEN)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			struct al_oid *v = realloc(*ids, cap * sizeof(*v));
			if (!v) {
				r = al_fail(err, AL_ENOMEM, ENOMEM, "bucket sweeps");
				break;
			}
			*ids = v;
		}
		memcpy((*ids)[(*n)++].b, al_db_column_blob(q, 0), AL_OID_LEN);
	}
	return r < 0 ? al_error_prefix(err, "bucket sweeps: ") : 0;
}

int al_gc__catch_up(void *ctx, struct al_db *db, struct al_error *err)
{
	struct al_store *st = ctx;
	struct al_cas *cas = al_store_cas(st);
	int64_t gen, pruned, mine, serial;
	int r = gens_read(db, &gen, &pruned, err);
	if (r < 0)
		return r;
	/* cheap and unlocked first: the generation moves only under the
	 * tenant's write lock, which this transaction holds */
	if ((r = al_cas__gen_read(cas, &mine, &serial, err)) < 0 || mine == gen)
		return r;
	/* first the serial moves on: a fetch that landed before it is seen
	 * below, one that lands after it is uploaded again as it lands
	 * (cas.c, land_fetched) */
	if ((r = al_cas__gen_bump(cas, &mine, &serial, err)) < 0)
		return r;
	if (mine < 0) {
		/* a store that holds nothing trusts nothing: it starts here */
		if ((r = al_cas__empty(cas, err)) < 0)
			return r;
		mine = r ? gen : 0;
	}
	if (mine > gen || mine < pruned) {
		/* behind what the database remembers, or ahead of it (the
		 * database restored from a backup): every object the bucket
		 * lacks goes there */
		struct al_cas_sync_stats s;
		r = al_cas__reupload_missing(cas, &s, err);
	} else if (mine < gen) {
		struct al_oid *ids = NULL;
		size_t n = 0;
		if ((r = swept_since(db, mine, &ids, &n, err)) == 0)
			r = al_cas__reupload(cas, ids, n, NULL, err);
		free(ids);
	}
	if (r < 0)
		return al_error_prefix(err, "bucket sweeps: catching up: ");
	return al_cas__gen_write(cas, gen, serial, err);
}
