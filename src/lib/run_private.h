/* Private: what a replay (replay.c) asks of a run beyond al_run_opts, and
 * the pieces of the run's record it shares. */
#ifndef AL_RUN_PRIVATE_H
#define AL_RUN_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "airlock/policy.h"
#include "airlock/run.h"

struct al_run__ext {
	const struct al_oid *base;  /* the run's base (NULL: the project's head when it starts) */
	const struct al_oid *image; /* the image's id as recorded, used as is (NULL: resolve
				     * o->image) */
	bool env_exact;             /* o->env is the whole environment: no default is added */
	int64_t source_date;        /* with env_exact: the SOURCE_DATE_EPOCH it sets (0: none) */
	const struct al_policy *policy; /* the tenant's effective policy (NULL: look it up) */
	/* Called with the run's record before it is written, a failed
	 * attempt's too (then without "result"): it may add fields.  An error
	 * fails the attempt at its "record" stage. */
	int (*record)(void *ctx, struct al_store *st, json_t *rec, struct al_error *err);
	void *ctx;
};

/* al_run with x (may be NULL: al_run itself). */
int al_run__exec(struct al_store *st, const struct al_run_opts *o, const struct al_run__ext *x,
		 struct al_run_info *out, struct al_error *err);

/* A run record without a draft and its `run` ledger entry, in one
 * transaction; its group is the record's, else a new one.  rec is
 * completed (group, draft), not stolen. */
int al_run__record_draftless(struct al_store *st, const char *id, json_t *rec,
			     struct al_error *err);

/* SOURCE_DATE_EPOCH for a run of project on head: the time of the live
 * volume's latest commit whose result is head (the commit that made it the
 * head), else the project's creation. */
int al_run__source_date(struct al_store *st, const char *project, const struct al_oid *head,
			int64_t *out, struct al_error *err);

/* Liveness across nodes on PostgreSQL (liveness.c): this process's node
 * id (AL_NODE_ID_LEN hex, one per process), its heartbeat every
 * AL_NODE_BEAT_S seconds, and the lease after which another node takes
 * an attempt of a silent node for interrupted. */
#define AL_NODE_ID_LEN 16
#define AL_NODE_BEAT_S 2
#define AL_NODE_LEASE_S (5 * AL_NODE_BEAT_S)
const char *al_node__id(void);
/* Before an attempt on PostgreSQL names this node: its heartbeat thread
 * runs and has beaten recently (waits for a beat otherwise; its error). */
int al_node__join(struct al_error *err);
/* Has node beaten within the lease (by the database's clock)? */
struct al_db;
int al_node__alive(struct al_db *db, const char *node, bool *alive, struct al_error *err);

#endif
