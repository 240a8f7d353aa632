/* liveness: which process is alive to finish a run's attempt, across the
 * nodes of one PostgreSQL (run_private.h; architecture.md "Several
 * nodes").  Each process that runs an attempt on PostgreSQL is a node: a
 * random id, made once, that beats in the `nodes` table (PostgreSQL schema
 * 6) every AL_NODE_BEAT_S seconds from a thread of its own, on a
 * connection of its own, as long as the process lives.  The first attempt
 * waits for a beat before its record names the node, so no other node
 * ever sees an attempt of a node it does not know.  A daemon (al_node_serve)
 * also sweeps: each beat it asks which tenants hold running attempts of
 * nodes whose heartbeat is older than the lease, and recovers them.
 * On the embedded home none of this runs: one machine, the flock rule. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "airlock/run.h"
#include "airlock/store.h"
#include "db.h"
#include "run_private.h"
#include "store_private.h"
#include "util.h"

static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t beaten = PTHREAD_COND_INITIALIZER;
static char node_id[AL_NODE_ID_LEN + 1];
static bool started;    /* the beating thread runs */
static int64_t last_ok; /* monotonic seconds of the last beat written (0: none) */
static struct al_error last_err;
static unsigned beats;              /* beats tried, so a waiter sees one after it asked */
static char sweep_home[4096];       /* al_node_serve's home: sweep orphans there ("": none) */
static al_node_cancel_fn cancel_fn; /* al_node_serve's: cancels asked through other nodes */
static void *cancel_ctx;

static int64_t mono_s(void)
{
	return (int64_t)(al_now_ns() / 1000000000ull);
}

const char *al_node__id(void)
{
	pthread_mutex_lock(&lk);
	if (!node_id[0]) {
		uint8_t rnd[AL_NODE_ID_LEN / 2];
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			/* getrandom on 8 bytes does not fail once the pool is ready;
			 * the time and pid keep ids apart if it ever did */
			uint64_t v = (uint64_t)al_now_ns() ^ ((uint64_t)getpid() << 40);
			memcpy(rnd, &v, sizeof(rnd));
		}
		al_hex(rnd, sizeof(rnd), node_id);
	}
	pthread_mutex_unlock(&lk);
	return node_id;
}

static int beat(struct al_db **db, struct al_error *err)
{
	if (!*db && al_store__dir_db(NULL, NULL, db, err) < 0)
		return -1;
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(*db, "SELECT airlock_node_beat(?1)", &q, err);
	if (r == 0) {
		al_db_bind_text(q, 1, al_node__id(), -1);
		r = al_db_step(q, err) == AL_DB_ROW ? 0 : -1;
	}
	if (r < 0) { /* a lost connection is opened again at the next beat */
		al_db_finalize(q);
		q = NULL;
		al_db_close(*db);
		*db = NULL;
		al_error_prefix(err, "node heartbeat: ");
	}
	return r;
}

struct names {
	char **v;
	size_t n;
};

static int add_name(void *ctx, const char *name)
{
	struct names *ns = ctx;
	char **v = realloc(ns->v, (ns->n + 1) * sizeof(*v));
	if (!v)
		return -1;
	ns->v = v;
	if (!(v[ns->n] = strdup(name)))
		return -1;
	ns->n++;
	return 0;
}

/* The tenants holding running attempts of dead nodes, each recovered. */
static void sweep(struct al_db *db, const char *home)
{
	struct al_error e = { 0 };
	struct names ns = { 0 };
	{
		_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
		if (al_db_prepare(db, "SELECT t FROM airlock_orphan_tenants(?1) AS t", &q, &e) < 0)
			goto out;
		al_db_bind_int64(q, 1, AL_NODE_LEASE_S);
		while (al_db_step(q, &e) == AL_DB_ROW)
			if (add_name(&ns, al_db_column_text(q, 0)) < 0) {
				al_fail(&e, AL_ENOMEM, ENOMEM, "node sweep");
				break;
			}
	}
	for (size_t i = 0; i < ns.n; i++) {
		struct al_store *st = NULL;
		struct al_error re = { 0 };
		int n = al_store_open(home, ns.v[i], &st, &re);
		if (n == 0)
			n = al_run_recover(st, &re);
		al_store_close(st);
		if (n < 0)
			fprintf(stderr, "airlock: recover the runs of lost nodes in %s: %s\n",
				ns.v[i], re.msg);
		else if (n > 0)
			fprintf(stderr,
				"airlock: %d run%s of lost nodes in %s recorded as failed: "
				"interrupted\n",
				n, n == 1 ? "" : "s", ns.v[i]);
	}
out:
	if (e.code)
		fprintf(stderr, "airlock: look for the runs of lost nodes: %s\n", e.msg);
	for (size_t i = 0; i < ns.n; i++)
		free(ns.v[i]);
	free(ns.v);
}

/* Cancels asked through other nodes of this node's runs in flight
 * (run_cancels, schema 6), each handed to the daemon under lk, so none
 * comes after al_node_serve_stop. */
static void cancels(struct al_db *db)
{
	struct al_error e = { 0 };
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if (al_db_prepare(db, "SELECT tenant, id FROM airlock_node_cancels(?1)", &q, &e) < 0) {
		fprintf(stderr, "airlock: look for cancels: %s\n", e.msg);
		return;
	}
	al_db_bind_text(q, 1, al_node__id(), -1);
	while (al_db_step(q, &e) == AL_DB_ROW) {
		pthread_mutex_lock(&lk);
		if (cancel_fn)
			cancel_fn(cancel_ctx, al_db_column_text(q, 0), al_db_column_text(q, 1));
		pthread_mutex_unlock(&lk);
	}
	if (e.code)
		fprintf(stderr, "airlock: look for cancels: %s\n", e.msg);
}

static void *beat_main(void *arg)
{
	(void)arg;
	struct al_db *db = NULL;
	for (;;) {
		struct al_error e = { 0 };
		int r = beat(&db, &e);
		pthread_mutex_lock(&lk);
		if (r == 0)
			last_ok = mono_s();
		else
			last_err = e;
		beats++;
		char home[sizeof(sweep_home)]; /* a copy: al_node_serve_stop may clear it */
		memcpy(home, sweep_home, sizeof(home));
		pthread_cond_broadcast(&beaten);
		pthread_mutex_unlock(&lk);
		if (r < 0)
			fprintf(stderr, "airlock: %s\n", e.msg);
		else if (home[0]) {
			cancels(db);
			sweep(db, home);
		}
		struct timespec ts = { .tv_sec = AL_NODE_BEAT_S };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	return NULL;
}

/* Under lk: the thread started (once per process). */
static int start_locked(struct al_error *err)
{
	if (started)
		return 0;
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1u << 20);
	/* no signal is the beat's: each stays with the threads that wait for it */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&t, &attr, beat_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0)
		return al_fail(err, AL_EUNAVAIL, r, "node heartbeat: cannot start its thread");
	started = true;
	return 0;
}

int al_node__join(struct al_error *err)
{
	al_node__id();
	pthread_mutex_lock(&lk);
	int r = start_locked(err);
	/* a beat recent enough that no node can take this one for dead
	 * before the next: else wait for the next beat, and fail with its
	 * error if it fails */
	while (r == 0 && !(last_ok && mono_s() - last_ok < AL_NODE_LEASE_S / 2)) {
		unsigned seen = beats;
		while (beats == seen)
			pthread_cond_wait(&beaten, &lk);
		if (!(last_ok && mono_s() - last_ok < AL_NODE_LEASE_S / 2)) {
			*err = last_err;
			r = err->code ? -1 : al_fail(err, AL_EIO, 0, "node heartbeat failed");
		}
	}
	pthread_mutex_unlock(&lk);
	return r;
}

int al_node__alive(struct al_db *db, const char *node, bool *alive, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db, "SELECT CAST(airlock_node_alive(?1, ?2) AS INTEGER)", &q, err);
	if (r < 0)
		return r;
	al_db_bind_text(q, 1, node, -1);
	al_db_bind_int64(q, 2, AL_NODE_LEASE_S);
	if (al_db_step(q, err) != AL_DB_ROW)
		return al_error_prefix(err, "node liveness: ");
	*alive = al_db_column_int64(q, 0) == 1;
	return 0;
}

int al_node_serve(const char *home, al_node_cancel_fn fn, void *ctx, struct al_error *err)
{
	if (!al_store__on_postgres())
		return 0; /* one machine: the flock rule (run.c) */
	if (strlen(home) >= sizeof(sweep_home))
		return al_fail(err, AL_EINVAL, 0, "node: the home's path is too long");
	pthread_mutex_lock(&lk);
	snprintf(sweep_home, sizeof(sweep_home), "%s", home);
	cancel_fn = fn;
	cancel_ctx = ctx;
	pthread_mutex_unlock(&lk);
	return al_node__join(err);
}

void al_node_serve_stop(void)
{
	pthread_mutex_lock(&lk);
	sweep_home[0] = 0; /* no sweep after the daemon stops */
	cancel_fn = NULL;
	cancel_ctx = NULL;
	pthread_mutex_unlock(&lk);
}
