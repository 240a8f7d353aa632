/* airlockd's run scheduler: the runs in flight and the last SCHED_RECENT
 * that failed (one that ended recorded is its record's from then on).  Each
 * run gets a thread of its own, with a store handle of its own while it runs
 * (stores.h), so a run never blocks a request; a run is cancelled through an
 * eventfd the sandbox polls.  No HTTP in here: whoever waits for a run's end
 * registers a waiter, whose callbacks the scheduler calls under its lock (the
 * HTTP layer suspends and resumes its connection there). */
#ifndef AL_SCHEDULER_H
#define AL_SCHEDULER_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "airlock/error.h"
#include "airlock/auth.h"
#include "airlock/run.h"
#include "airlock/util.h"
#include "airlock/volume.h"
#include "decode.h"

#define SCHED_RECENT 256          /* failed runs remembered */
#define SCHED_LIVE_MAX (1u << 20) /* output kept per stream while a run lasts */

/* Someone waiting for a run's end.  begin(ctx) is called once the run is
 * started, end(ctx) once it has ended (rc and err are set), each once and
 * under the scheduler's lock, so end never comes before begin. */
struct sched_waiter {
	void (*begin)(void *ctx);
	void (*end)(void *ctx);
	void *ctx;
};

struct sched_run {
	struct sched_run *next;
	struct sched *sched;
	char id[AL_RUN_ID_LEN + 1];
	char tenant[64], principal[AL_PRINCIPAL_MAX + 1], project[AL_NAME_MAX + 1];
	char image[AL_OID_STRLEN + 1];     /* as resolved for the principal: the run uses this id */
	struct al_oid image_id;            /* the same, for req.o.image_id */
	char replay_of[AL_RUN_ID_LEN + 1]; /* a replay of this run ("": a run) */
	int64_t started;
	int cancel_fd;
	bool done, cancel_requested;
	struct al_error err; /* when rc < 0 */
	int rc;
	json_t *body; /* the request (its secrets wiped at the end) */
	struct run_request req;
	struct al_policy
		*policy; /* the tenant's as the run was accepted (req.o.policy), until it ends */
	struct sched_waiter waiter; /* .end NULL: nobody waits (any more) */
	char *live[2]; /* the output so far (the first SCHED_LIVE_MAX bytes), while it runs */
	size_t live_len[2], live_cap[2];
};

struct sched {
	const char *home;
	const char *init_path;
	unsigned max_runs;    /* in flight; beyond: refused */
	unsigned grace_s;     /* drain: wait this long, then cancel */
	pthread_mutex_t lock; /* runs, active, stopping and every run's fields */
	pthread_cond_t runs_done;
	sem_t heavy;            /* slots for the heavy phases of runs (run.h throttle) */
	struct sched_run *runs; /* in flight, waited for, and recently failed (bounded) */
	unsigned active;
	bool stopping;
};

int sched_init(struct sched *s, const char *home, const char *init_path, unsigned max_runs,
	       unsigned grace_s);
void sched_release(struct sched *s);
void sched_lock(struct sched *s);
void sched_unlock(struct sched *s);

/* A run to fill (body, req, project, tenant, principal, image, req.o) and
 * start; sched_run_free releases one that was not started. */
struct sched_run *sched_run_new(void);
void sched_run_free(struct sched_run *r);

/* Name the run, start its thread and list it; w (may be NULL) waits for
 * it.  Refused (AL_EUNAVAIL, r not taken) while stopping or at a limit:
 * max_runs, or the tenant's runs_per_tenant / runs_per_principal in
 * flight.  On success the scheduler owns r. */
int sched_start(struct sched *s, struct sched_run *r, unsigned runs_per_tenant,
		unsigned runs_per_principal, const struct sched_waiter *w, struct al_error *err);

/* Under the lock: the run with this id in the tenant (in flight, or
 * ended and still waited for, or recently failed), or NULL. */
struct sched_run *sched_find(struct sched *s, const char *tenant, const char *id);
/* Under the lock: signal the sandbox to stop (a second signal is a no-op). */
void sched_cancel(struct sched_run *r);
/* Under the lock: nobody waits for r any more (it may be forgotten). */
void sched_unwait(struct sched_run *r);

/* SIGTERM: refuse new runs, give running ones grace_s, then cancel them and
 * wait until every run has recorded its end. */
void sched_drain(struct sched *s);

#endif
