/* The threaded connection server of the run's host-side services
 * (serve_private.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve_private.h"

struct al_serve_conn {
	struct al_serve *s;
	void *ctx;
	int fd;
	struct al_serve_conn *next, *prev;
};

void al_serve__init(struct al_serve *s, pthread_mutex_t *mu, const struct al_serve_ops *ops,
		    void *owner, size_t stack)
{
	*s = (struct al_serve){ .ops = ops, .owner = owner, .mu = mu, .stack = stack };
	s->listen_fd = -1;
	pthread_cond_init(&s->idle, NULL);
}

/* Under the lock: fd closed, the owner told, the thread counted out. */
static void conn_done(struct al_serve_conn *c, bool ran)
{
	struct al_serve *s = c->s;
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->live = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->ops->done(c->ctx, ran);
	if (!--s->active)
		pthread_cond_broadcast(&s->idle);
	free(c);
}

static void *conn_main(void *arg)
{
	struct al_serve_conn *c = arg;
	pthread_mutex_t *mu = c->s->mu;
	/* a peer gone mid-write is EPIPE for this connection, never the
	 * process's death (splice has no MSG_NOSIGNAL); threads it starts
	 * inherit the mask */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	c->s->ops->serve(c->ctx);
	pthread_mutex_lock(mu);
	conn_done(c, true); /* frees c */
	pthread_mutex_unlock(mu);
	return NULL;
}

int al_serve__admit(struct al_serve *s, int fd)
{
	pthread_mutex_lock(s->mu);
	struct al_serve_conn *c = NULL;
	if (s->stopping || !(c = calloc(1, sizeof(*c))) ||
	    !(c->ctx = s->ops->admit(s->owner, fd))) {
		pthread_mutex_unlock(s->mu);
		free(c);
		close(fd);
		return -1;
	}
	c->s = s;
	c->fd = fd;
	c->next = s->live;
	if (s->live)
		s->live->prev = c;
	s->live = c;
	s->active++;
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, s->stack);
	int rc = pthread_create(&t, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		conn_done(c, false);
	pthread_mutex_unlock(s->mu);
	return rc ? -1 : 0;
}

static void *accept_main(void *arg)
{
	struct al_serve *s = arg;
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			       errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			continue;
		}
		if (fd < 0)
			break; /* shut down: the run is over */
		pthread_mutex_lock(s->mu);
		bool stopping = s->stopping;
		pthread_mutex_unlock(s->mu);
		if (stopping) {
			close(fd);
			break;
		}
		al_serve__admit(s, fd);
	}
	return NULL;
}

int al_serve__start(struct al_serve *s, int listen_fd)
{
	s->listen_fd = listen_fd;
	if (listen_fd < 0)
		return 0;
	int rc = pthread_create(&s->acceptor, NULL, accept_main, s);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	s->started = true;
	return 0;
}

void al_serve__stop(struct al_serve *s)
{
	pthread_mutex_lock(s->mu);
	s->stopping = true;
	pthread_mutex_unlock(s->mu);
	if (s->listen_fd >= 0)
		shutdown(s->listen_fd, SHUT_RDWR); /* accept returns EINVAL */
	if (s->started) {
		pthread_join(s->acceptor, NULL);
		s->started = false;
	}
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	pthread_mutex_lock(s->mu);
	/* the sandbox is gone: what a connection still waits on ends now */
	for (struct al_serve_conn *c = s->live; c; c = c->next) {
		shutdown(c->fd, SHUT_RDWR);
		if (s->ops->end)
			s->ops->end(c->ctx);
	}
	while (s->active)
		pthread_cond_wait(&s->idle, s->mu);
	pthread_mutex_unlock(s->mu);
}

void al_serve__release(struct al_serve *s)
{
	pthread_cond_destroy(&s->idle);
}
