/* airlockd: the HTTP API (docs/api.md).  server.c owns the daemon
 * (libmicrohttpd), authentication, routing and logs; one file per resource
 * answers its routes (projects.c, runs.c, audit.c, admin.c) with http.c's
 * answers; runs are scheduler.c's.  Files depend downward only:
 * server.c -> resources -> http.c -> scheduler.c (scripts/layers.sh). */
#ifndef AL_SERVER_H
#define AL_SERVER_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "airlockd.h"
#include "dl_mhd.h"
#include "scheduler.h"
#include "stores.h"

#include "airlock/auth.h"
#include "airlock/error.h"

struct al_store;
struct route;

/* A connection's absolute deadline (server.c's watchdog; slowloris). */
struct conn_watch {
	struct conn_watch *prev, *next;
	int fd;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none (a handler or the answer is running) */
	bool body;            /* the deadline is the body's (else the headers') */
};

struct srv {
	struct srv_config cfg;
	struct al_auth *auth;
	struct MHD_Daemon *mhd;      /* the request pool (changed under pool_lock) */
	struct MHD_Daemon *draining; /* the pool it replaced, while connections remain */
	unsigned drained_ticks;      /* renewal ticks in a row that found it with none */
	pthread_mutex_t pool_lock;   /* mhd, against the acceptor's hand-over */
	int listen_fd;               /* airlock's own: the acceptor hands connections over */
	pthread_t acceptor;
	bool accept_stop;       /* (atomic) */
	unsigned conns;         /* (atomic) handed to a pool and not yet closed */
	uint64_t handed_ns;     /* (atomic) when the acceptor last handed one over */
	const char *cert, *key; /* TLS: PEM, for every pool */
	uint64_t answered;      /* requests answered (atomic) */
	uint64_t answered_ns;   /* when the last was (atomic) */
	uint64_t pool_answered; /* answered when this pool started */
	char init_path[4200];
	uint16_t port;
	struct sched sched; /* the runs (scheduler.h) */
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cond;
	struct conn_watch *watched;
	pthread_t watchdog;
	bool watch_stop;
};

/* The collector's thread (gc.c): started if cfg.gc_interval_s, stopped on
 * SIGTERM after the runs. */
int srv_gc_start(struct srv *s);
void srv_gc_stop(struct srv *s);

/* One request: what the router and the handlers share. */
struct req {
	struct srv *srv;
	struct MHD_Connection *conn;
	const char *method;
	char path[1024];
	char *seg[8]; /* path segments after /api */
	char *segbuf; /* their storage */
	size_t nseg;
	const char *route;      /* the matched pattern, for the log */
	const struct route *rt; /* the matched route (server.c) */
	bool authed;
	struct al_principal who;
	/* authenticated by a session cookie (session.c), not a bearer token */
	bool by_session;
	char session[AL_SESSION_LEN + 1];
	int auth_rc; /* the first call's authentication */
	/* the body: JSON in memory, or an upload in an unnamed temp file */
	bool upload;
	char *body;
	size_t len, cap;
	int upload_fd;
	bool too_big;
	/* the answer */
	int status;
	struct MHD_Response *resp;
	/* a request waiting for a run (POST run with wait) */
	struct sched_run *waiting;
	bool suspended; /* under the scheduler's lock */
	uint64_t t0;
};

/* Every API answer's Content-Security-Policy: nothing it returns is a
 * document to render (a blob opened in a tab runs nothing, loads nothing). */
#define SRV_API_CSP "default-src 'none'; frame-ancestors 'none'; sandbox"

/* Answers. */
int srv_json(struct req *rq, int status, json_t *body); /* steals body */
int srv_error(struct req *rq, const struct al_error *err);
/* 405 MethodNotAllowed with Allow: allow (RFC 9110 15.5.6) */
int srv_method_not_allowed(struct req *rq, const char *allow);
int srv_fail(struct req *rq, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int srv_bytes(struct req *rq, int status, const char *type, const void *p, size_t n);
int srv_fd(struct req *rq, int status, const char *type, int fd, uint64_t size); /* takes fd */
const char *srv_query(struct req *rq, const char *key);
/* The request's `Range: bytes=…` over a body of len bytes: 0 (none, or one
 * that must be ignored: malformed, several ranges), 1 (*from, *n set), or -1
 * after answering 416. */
int srv_range(struct req *rq, uint64_t len, uint64_t *from, uint64_t *n);
/* Answer len bytes of p from offset, honouring Range (200/206/416). */
int srv_bytes_ranged(struct req *rq, const char *type, const void *p, size_t len, uint64_t offset);
/* Answer a stored object's bytes from offset, honouring Range (200, 206
 * with Content-Range, 416), streamed from the store in 32 KiB pieces: no
 * handler holds a blob.  The object's digest is checked before its last
 * piece is sent; on a mismatch the connection is aborted short of its
 * Content-Length and the log says why. */
struct al_cas;
int srv_object(struct req *rq, struct al_cas *cas, const struct al_oid *id, uint64_t offset,
	       const char *type);
/* The request body as a JSON object (an empty body: {}); fails with an answer. */
int srv_body_json(struct req *rq, json_t **out);

/* The tenant's store for this request's principal: the only way a handler
 * reaches data, so every read and write is scoped to that tenant.  Give it
 * back with srv_stores_give (stores.h: kept open for the tenant's next
 * request or run). */
int srv_store(struct req *rq, struct al_store **out, struct al_error *err);

/* A handler's usual shape: the tenant's store, fn fills *out, the answer
 * (status, or the error). */
typedef int (*srv_view_fn)(struct req *rq, struct al_store *st, json_t **out, struct al_error *err);
int srv_serve(struct req *rq, int status, srv_view_fn fn);
/* The answer for a project this principal cannot see: a missing one's. */
int srv_no_project(struct req *rq, const char *name);

/* Roles: does the principal hold any of these? (else an answer: 403) */
bool srv_role(struct req *rq, unsigned roles);
/* May the principal see this project (agents: granted ones only)? */
bool srv_project_visible(struct req *rq, const char *project);

/* Handlers (return 0 once an answer is set). */
int h_projects(struct req *rq);
int h_project_create(struct req *rq);
int h_project_create_tree(struct req *rq);
int h_project_contract(struct req *rq);
int h_project_contract_set(struct req *rq);
int h_project(struct req *rq);
int h_project_log(struct req *rq);
int h_project_drafts(struct req *rq);
int h_project_commit(struct req *rq);
int h_draft(struct req *rq);
int h_draft_review(struct req *rq);
int h_draft_apply(struct req *rq);
int h_snapshot(struct req *rq);
int h_blob(struct req *rq);
int h_images(struct req *rq);
int h_image_import(struct req *rq);
int h_runs(struct req *rq);
int h_run_start(struct req *rq);
int h_run(struct req *rq);
int h_run_output(struct req *rq);
int h_run_cancel(struct req *rq);
int h_run_replay(struct req *rq);
int h_audit(struct req *rq);
int h_audit_entry(struct req *rq);
int h_audit_checkpoint(struct req *rq);
int h_audit_export(struct req *rq);
int h_whoami(struct req *rq);
int h_policy(struct req *rq);
int h_policy_set(struct req *rq);
int h_principals(struct req *rq);
int h_principal_create(struct req *rq);
int h_principal_grant(struct req *rq);
int h_token_create(struct req *rq);
int h_tokens(struct req *rq);
int h_token_revoke(struct req *rq);
int h_integrations(struct req *rq);
int h_integration(struct req *rq);
int h_integration_create(struct req *rq);
int h_integration_grant(struct req *rq);
int h_integration_secret(struct req *rq);
int h_integration_delete(struct req *rq);
int h_session_create(struct req *rq);
int h_session(struct req *rq);
int h_session_end(struct req *rq);
int h_blob_image(struct req *rq);

/* session.c: the session cookie's name (with __Host- under TLS), and the
 * header a cookie-authenticated state-changing request must carry. */
#define SRV_CSRF_HEADER "X-Airlock-CSRF"
const char *srv_session_cookie(const struct srv *s);

/* web.c: the UI's pages and assets (every path outside /api), built into
 * the binary; answers 404 for anything else. */
int srv_web(struct req *rq, const char *url);

/* A request that waits (for its run: a sched_waiter with rq as ctx): its
 * connection suspended, holding no thread, until srv_resume.  Both are
 * called under the scheduler's lock. */
void srv_suspend(void *rq);
void srv_resume(void *rq);

/* runs.c: a waiting request's run has ended: answer it (called on resume). */
int srv_run_answer(struct req *rq);
void srv_run_unwait(struct req *rq);

#endif
