/* airlockd's collector: every --gc-interval seconds, one pass over each
 * tenant in turn (gc.h) on a thread of its own.  One tenant at a time: a
 * pass is disk-bound, and running every tenant's at once would compete with
 * the runs it should stay out of the way of.  Requests are never blocked by
 * it beyond the sweep's short pause of writers (docs/architecture.md). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "airlock/gc.h"
#include "server.h"

static pthread_t gc_thread;
static pthread_mutex_t gc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gc_cond;
static bool gc_started, gc_stop;

static bool stopping(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&gc_lock);
	bool s = gc_stop;
	pthread_mutex_unlock(&gc_lock);
	return s;
}

static void done(void *ctx, const char *tenant, int r, const struct al_gc_report *p,
		 const struct al_error *err)
{
	(void)ctx;
	if (r < 0)
		fprintf(stderr, "airlock serve: gc %s: %s\n", tenant, err->msg);
	else
		fprintf(stderr,
			"airlock serve: gc %s: %llu objects (%llu bytes), %llu snapshots, %llu "
			"orphan files, "
			"%llu lower layers (%llu bytes) reclaimed%s; ledger entry %llu\n",
			tenant, (unsigned long long)p->objects, (unsigned long long)p->bytes,
			(unsigned long long)p->snapshots, (unsigned long long)p->orphan_files,
			(unsigned long long)p->layers, (unsigned long long)p->layer_bytes,
			p->objects_skipped ? " (objects skipped: writers did not pause)" : "",
			(unsigned long long)p->seq);
}

static void *gc_main(void *arg)
{
	struct srv *s = arg;
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)s->cfg.gc_interval_s;
		pthread_mutex_lock(&gc_lock);
		while (!gc_stop && pthread_cond_timedwait(&gc_cond, &gc_lock, &until) != ETIMEDOUT)
			;
		bool stop = gc_stop;
		pthread_mutex_unlock(&gc_lock);
		if (stop)
			return NULL;
		struct al_gc_opts o = { .lower_budget = s->cfg.lower_budget, .actor = "airlockd" };
		struct al_error err = { 0 };
		if (al_gc_home(s->cfg.home, &o, done, stopping, NULL, &err) < 0)
			fprintf(stderr, "airlock serve: gc: %s\n", err.msg);
	}
}

int srv_gc_start(struct srv *s)
{
	if (!s->cfg.gc_interval_s)
		return 0;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gc_cond, &ca);
	pthread_condattr_destroy(&ca);
	gc_stop = false;
	if (pthread_create(&gc_thread, NULL, gc_main, s) != 0)
		return -1;
	gc_started = true;
	return 0;
}

void srv_gc_stop(struct srv *s)
{
	(void)s;
	if (!gc_started)
		return;
	pthread_mutex_lock(&gc_lock);
	gc_stop = true;
	pthread_cond_signal(&gc_cond);
	pthread_mutex_unlock(&gc_lock);
	pthread_join(gc_thread, NULL); /* a pass in progress finishes its tenant */
	gc_started = false;
}
