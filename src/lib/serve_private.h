/* The threaded connection server the run's host-side services share: the
 * egress proxy (net.c) and the integrations' relay (integ.c).  It accepts
 * from a listening socket (or is handed connections: the microVM relay,
 * sandbox/vm_relay.c), admits each under its owner's lock (the owner keeps
 * its caps and records there), serves each in a thread of its own, and at
 * stop ends every connection and waits for them all. */
#ifndef AL_SERVE_PRIVATE_H
#define AL_SERVE_PRIVATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct al_serve_ops {
	/* Under the lock: the owner's state for connection fd, or NULL to
	 * refuse it (the server closes fd). */
	void *(*admit)(void *owner, int fd);
	/* In the connection's thread, without the lock. */
	void (*serve)(void *conn);
	/* Under the lock, once fd is closed: ran is false when no thread
	 * could serve it.  Frees conn. */
	void (*done)(void *conn, bool ran);
	/* Under the lock, at stop (optional): end what conn waits on besides
	 * its fd, which the server shuts down itself. */
	void (*end)(void *conn);
};

struct al_serve_conn;

struct al_serve {
	const struct al_serve_ops *ops;
	void *owner;
	pthread_mutex_t *mu; /* the owner's */
	size_t stack;
	int listen_fd;
	pthread_t acceptor;
	bool started, stopping;
	pthread_cond_t idle;
	unsigned active; /* connection threads alive */
	struct al_serve_conn *live;
};

/* mu is the owner's lock (admit, done and end run under it). */
void al_serve__init(struct al_serve *s, pthread_mutex_t *mu, const struct al_serve_ops *ops,
		    void *owner, size_t stack);
/* Accept from listen_fd (owned from here, even on failure) in a thread of
 * the server's; listen_fd < 0: only what al_serve__admit hands over.
 * -1 with errno when no thread could be made. */
int al_serve__start(struct al_serve *s, int listen_fd);
/* Admit and serve a connected socket (owned from here): 0, or -1 when it
 * was refused (by the owner, at stop, or for want of memory) and closed. */
int al_serve__admit(struct al_serve *s, int fd);
/* Stop accepting, shut every connection down, wait for them.  Idempotent. */
void al_serve__stop(struct al_serve *s);
/* After al_serve__stop. */
void al_serve__release(struct al_serve *s);

#endif
