/* scheduler: airlockd's run scheduler (scheduler.h).  The list keeps the runs in
 * flight, so status and cancel find a run before its record exists, and
 * the last SCHED_RECENT that failed, so a run whose sandbox failed
 * (nothing recorded) still has an answer (and one whose failure was
 * recorded, its error as it happened).  A run that ended recorded is
 * forgotten once nobody waits for it: its record answers from then on. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "airlock/replay.h"
#include "airlock/store.h"
#include "airlock/util.h"
#include "ops.h"
#include "scheduler.h"
#include "stores.h"

int sched_init(struct sched *s, const char *home, const char *init_path, unsigned max_runs,
	       unsigned grace_s)
{
	memset(s, 0, sizeof(*s));
	s->home = home;
	s->init_path = init_path;
	s->max_runs = max_runs;
	s->grace_s = grace_s;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->runs_done, NULL);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	sem_init(&s->heavy, 0, (unsigned)(cpus > 0 ? cpus : 1));
	return 0;
}

void sched_lock(struct sched *s)
{
	pthread_mutex_lock(&s->lock);
}

void sched_unlock(struct sched *s)
{
	pthread_mutex_unlock(&s->lock);
}

/* Materialising and collecting are CPU- and memory-bound: more of them at
 * once than there are cores only adds memory (each holds a few MiB of
 * compression and tree state).  Sandboxes, which mostly wait, are not
 * bounded by this. */
static void throttle(void *ctx, bool enter)
{
	struct sched *s = ctx;
	if (!enter) {
		sem_post(&s->heavy);
		return;
	}
	while (sem_wait(&s->heavy) < 0 && errno == EINTR)
		;
}

static void live_free(struct sched_run *r)
{
	for (int i = 0; i < 2; i++) {
		free(r->live[i]);
		r->live[i] = NULL;
		r->live_len[i] = r->live_cap[i] = 0;
	}
}

/* The runs' structs come from slabs of their own, not the heap: up to
 * SCHED_RECENT failed runs outlive everything a run allocated around
 * them, and from the heap each would pin a page of it after the load
 * (about 0.7 MiB of a daemon's RSS after 16 clients' runs).  Slabs are
 * never unmapped: they hold at most the peak of runs known at once. */
#define SLAB_RUNS 64
union slot {
	struct sched_run run;
	union slot *next_free;
};
/* clang says so with __has_feature, gcc with __SANITIZE_ADDRESS__ */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_HEAP 1
#endif
#endif
#ifndef SLAB_HEAP
static pthread_mutex_t slab_lock = PTHREAD_MUTEX_INITIALIZER;
static union slot *slab_free;
#endif

#ifdef SLAB_HEAP
/* under ASan the heap's, so that a use after free is still caught */
static struct sched_run *slot_get(void)
{
	return calloc(1, sizeof(struct sched_run));
}
static void slot_put(struct sched_run *r)
{
	free(r);
}
#else
static struct sched_run *slot_get(void)
{
	pthread_mutex_lock(&slab_lock);
	if (!slab_free) {
		union slot *slab = mmap(NULL, SLAB_RUNS * sizeof(*slab), PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (int i = 0; slab != MAP_FAILED && i < SLAB_RUNS; i++) {
			slab[i].next_free = slab_free;
			slab_free = &slab[i];
		}
	}
	union slot *u = slab_free;
	if (u)
		slab_free = u->next_free;
	pthread_mutex_unlock(&slab_lock);
	if (u)
		memset(u, 0, sizeof(*u));
	return u ? &u->run : NULL;
}

static void slot_put(struct sched_run *r)
{
	union slot *u = (union slot *)r;
	pthread_mutex_lock(&slab_lock);
	u->next_free = slab_free;
	slab_free = u;
	pthread_mutex_unlock(&slab_lock);
}
#endif

static void run_free(struct sched_run *r)
{
	if (r->cancel_fd >= 0)
		close(r->cancel_fd);
	live_free(r);
	slot_put(r);
}

/* The sandbox's output as it arrives (run.h output callback): kept for
 * GET /runs/ID/output while the run lasts; the record has it after. */
static void on_output(void *ctx, int stream, const void *p, size_t n)
{
	struct sched_run *r = ctx;
	int i = stream == 2;
	pthread_mutex_lock(&r->sched->lock);
	size_t room = SCHED_LIVE_MAX - r->live_len[i];
	n = n < room ? n : room;
	if (n && r->live_len[i] + n > r->live_cap[i]) {
		size_t nc = r->live_cap[i] ? r->live_cap[i] * 2 : 4096;
		while (nc < r->live_len[i] + n)
			nc *= 2;
		char *b = realloc(r->live[i], nc < SCHED_LIVE_MAX ? nc : SCHED_LIVE_MAX);
		if (b) {
			r->live[i] = b;
			r->live_cap[i] = nc < SCHED_LIVE_MAX ? nc : SCHED_LIVE_MAX;
		} else {
			n = 0; /* the live view stops; the record keeps everything */
		}
	}
	if (n) {
		memcpy(r->live[i] + r->live_len[i], p, n);
		r->live_len[i] += n;
	}
	pthread_mutex_unlock(&r->sched->lock);
}

void sched_release(struct sched *s)
{
	while (s->runs) {
		struct sched_run *r = s->runs;
		s->runs = r->next;
		run_free(r);
	}
	pthread_cond_destroy(&s->runs_done);
	pthread_mutex_destroy(&s->lock);
	sem_destroy(&s->heavy);
}

/* Forget the ended runs nobody waits for that were recorded, and keep at
 * most SCHED_RECENT that failed (under the lock). */
static void trim(struct sched *s)
{
	unsigned failed = 0;
	for (struct sched_run **pp = &s->runs; *pp;) {
		struct sched_run *r = *pp;
		if (r->done && !r->waiter.end && (r->rc == 0 || ++failed > SCHED_RECENT)) {
			*pp = r->next;
			run_free(r);
			continue;
		}
		pp = &r->next;
	}
}

static void wipe_secrets(json_t *body)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(body, "secrets"), i, v) {
		json_t *val = json_object_get(v, "value");
		if (json_is_string(val))
			explicit_bzero((char *)json_string_value(val), json_string_length(val));
	}
}

/* The request's copies of the secrets wiped, its buffers freed. */
static void request_release(struct sched_run *r)
{
	wipe_secrets(r->body);
	run_request_release(&r->req);
	json_decref(r->body);
	r->body = NULL;
	free(r->policy);
	r->policy = NULL;
	r->req.o.policy = NULL;
}

struct sched_run *sched_run_new(void)
{
	struct sched_run *r = slot_get();
	if (r)
		r->cancel_fd = -1;
	return r;
}

void sched_run_free(struct sched_run *r)
{
	if (!r)
		return;
	request_release(r);
	run_free(r);
}

void sched_cancel(struct sched_run *r)
{
	uint64_t one = 1;
	r->cancel_requested = true;
	if (write(r->cancel_fd, &one, sizeof(one)) < 0) { /* EAGAIN: already signalled */
	}
}

void sched_unwait(struct sched_run *r)
{
	r->waiter = (struct sched_waiter){ 0 };
}

static void *run_thread(void *arg)
{
	struct sched_run *r = arg;
	struct sched *s = r->sched;
	struct al_store *st = NULL;
	int rc = srv_stores_take(s->home, r->tenant, &st, &r->err);
	if (rc == 0) {
		struct al_run_info info;
		struct al_replay_opts ro = { .of = r->replay_of,
					     .on_head = r->req.on_head,
					     .secrets = r->req.secrets };
		if ((rc = r->replay_of[0] ? al_replay(st, &ro, &r->req.o, &info, &r->err)
					  : al_run(st, &r->req.o, &info, &r->err)) == 0)
			al_run_info_release(&info);
	}
	srv_stores_give(st);
	request_release(r);
	malloc_trim(0);     /* what the run's thread freed goes back: the daemon returns to idle */
	al_stack_release(); /* and what its stack touched, kept with it by glibc's cache */
	pthread_mutex_lock(&s->lock);
	r->rc = rc;
	r->done = true;
	live_free(r);
	s->active--;
	if (r->waiter.end)
		r->waiter.end(r->waiter.ctx);
	trim(s);
	pthread_cond_broadcast(&s->runs_done);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct sched_run *sched_find(struct sched *s, const char *tenant, const char *id)
{
	for (struct sched_run *r = s->runs; r; r = r->next)
		if (!strcmp(r->id, id) && !strcmp(r->tenant, tenant))
			return r;
	return NULL;
}

int sched_start(struct sched *s, struct sched_run *r, unsigned runs_per_tenant,
		unsigned runs_per_principal, const struct sched_waiter *w, struct al_error *err)
{
	uint8_t rnd[7];
	char hex[15];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "run id");
	if ((r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return al_fail(err, AL_EIO, errno, "run: eventfd");
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(r->id, sizeof(r->id), "r%.13s", hex);
	r->started = al_wall_s();
	r->sched = s;
	struct al_run_opts *o = &r->req.o;
	o->id = r->id;
	o->cancel_fd = r->cancel_fd;
	o->init_path = s->init_path;
	o->guest_dir = ops_guest_dir();
	o->throttle = throttle;
	o->throttle_ctx = s;
	o->output = on_output;
	o->output_ctx = r;
	/* counted again in the database across nodes (metadata on PostgreSQL) */
	o->runs_per_tenant = runs_per_tenant;
	o->runs_per_principal = runs_per_principal;

	pthread_mutex_lock(&s->lock);
	unsigned tenant_runs = 0, principal_runs = 0;
	for (struct sched_run *q = s->runs; q; q = q->next)
		if (!q->done && !strcmp(q->tenant, r->tenant)) {
			tenant_runs++;
			principal_runs += !strcmp(q->principal, r->principal);
		}
	if (s->stopping || s->active >= s->max_runs || tenant_runs >= runs_per_tenant ||
	    principal_runs >= runs_per_principal) {
		bool stopping = s->stopping;
		pthread_mutex_unlock(&s->lock);
		if (stopping)
			return al_fail(err, AL_EUNAVAIL, 0, "the server is shutting down");
		if (principal_runs >= runs_per_principal)
			return al_fail(
				err, AL_EUNAVAIL, 0,
				"%u runs of yours in flight (the policy's runs_per_principal): "
				"try again later",
				principal_runs);
		if (tenant_runs >= runs_per_tenant)
			return al_fail(
				err, AL_EUNAVAIL, 0,
				"%u runs of the tenant in flight (the policy's runs_per_tenant): "
				"try again later",
				tenant_runs);
		return al_fail(err, AL_EUNAVAIL, 0, "%u runs in flight: try again later",
			       s->max_runs);
	}
	if (w)
		r->waiter = *w;
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the library's deepest frames are 64 KiB buffers; 2 MiB leaves room
	 * and keeps the stacks glibc caches after the threads end small */
	pthread_attr_setstacksize(&attr, 2u << 20);
	if (pthread_create(&t, &attr, run_thread, r) != 0) {
		pthread_attr_destroy(&attr);
		r->waiter = (struct sched_waiter){ 0 };
		pthread_mutex_unlock(&s->lock);
		return al_fail(err, AL_EUNAVAIL, 0, "cannot start a run thread");
	}
	pthread_attr_destroy(&attr);
	r->next = s->runs;
	s->runs = r;
	s->active++;
	/* the waiter begins now, under the lock, so the run's end (which takes
	 * the lock) ends its wait exactly once, after it began */
	if (w && w->begin)
		w->begin(w->ctx);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void sched_drain(struct sched *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += s->grace_s;
	while (s->active && pthread_cond_timedwait(&s->runs_done, &s->lock, &deadline) != ETIMEDOUT)
		;
	if (s->active) {
		fprintf(stderr, "airlock serve: cancelling %u run%s still in flight\n", s->active,
			s->active == 1 ? "" : "s");
		for (struct sched_run *r = s->runs; r; r = r->next)
			if (!r->done)
				sched_cancel(r);
	}
	while (s->active)
		pthread_cond_wait(&s->runs_done, &s->lock);
	pthread_mutex_unlock(&s->lock);
}
