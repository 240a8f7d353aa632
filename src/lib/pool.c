/* pool: workers take indexes from a shared counter; the caller joins in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "airlock/util.h"
#include "pool.h"

struct al_pool {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	pthread_t *threads;
	unsigned extra, running;
	unsigned long gen;
	bool quit;
	al_pool_fn fn;
	void *ctx;
	size_t n;
	atomic_size_t next;
};

struct worker_arg {
	struct al_pool *p;
	unsigned id;
};

static void drain(struct al_pool *p, unsigned id)
{
	size_t i;
	while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
		p->fn(p->ctx, i, id);
}

static void *worker(void *arg)
{
	struct worker_arg a = *(struct worker_arg *)arg;
	free(arg);
	struct al_pool *p = a.p;
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->gen == seen)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		drain(p, a.id);
		pthread_mutex_lock(&p->mu);
		if (--p->running == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	al_stack_release(); /* glibc keeps the stack for a later thread */
	return NULL;
}

int al_pool_new(unsigned extra, struct al_pool **out)
{
	struct al_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->threads = calloc(extra ? extra : 1, sizeof(pthread_t));
	if (!p->threads) {
		free(p);
		return -1;
	}
	for (unsigned i = 0; i < extra; i++) {
		struct worker_arg *a = malloc(sizeof(*a));
		if (!a)
			break;
		a->p = p;
		a->id = i + 1;
		if (pthread_create(&p->threads[i], NULL, worker, a) != 0) {
			free(a);
			break;
		}
		p->extra++;
	}
	*out = p;
	return 0;
}

void al_pool_free(struct al_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->extra; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	free(p->threads);
	free(p);
}

unsigned al_pool_size(const struct al_pool *p)
{
	return p->extra + 1;
}

void al_pool_run(struct al_pool *p, size_t n, al_pool_fn fn, void *ctx)
{
	if (n == 0)
		return;
	if (p->extra == 0 || n == 1) {
		for (size_t i = 0; i < n; i++)
			fn(ctx, i, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	atomic_store(&p->next, 0);
	p->running = p->extra;
	p->gen++;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	drain(p, 0);
	pthread_mutex_lock(&p->mu);
	while (p->running)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
