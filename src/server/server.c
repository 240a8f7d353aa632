/* server: airlockd's HTTP front (server.h): libmicrohttpd with a thread
 * pool, bearer-token authentication, the route table with each route's
 * roles, body caps, one log line per request, and a graceful stop on
 * SIGTERM.  The answers handlers give are http.c's. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/fsck.h"
#include "airlock/policy.h"
#include "airlock/store.h"
#include "decode.h"
#include "ops.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

/* The OpenAPI document, built into the binary from docs/openapi.json. */
extern const char openapi_json[], openapi_json_end[];
__asm__(".section .rodata\n"
	".global openapi_json\nopenapi_json:\n"
	".incbin \"docs/openapi.json\"\n"
	".global openapi_json_end\nopenapi_json_end:\n"
	".byte 0\n"
	".previous\n");

#define PUBLIC 0x100u /* no token needed */
#define ANY 0x0fu     /* every role */
#define READ (AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER)
#define AUTHORS (AL_ROLE_ADMIN | AL_ROLE_AUTHOR)

static int h_health(struct req *rq)
{
	return srv_json(rq, 200, json_pack("{s:s,s:s}", "status", "ok", "version", "0.1.0"));
}

static int h_openapi(struct req *rq)
{
	return srv_bytes(rq, 200, "application/json", openapi_json,
			 (size_t)(openapi_json_end - openapi_json));
}

struct route {
	const char *method, *pattern;
	unsigned roles;
	int (*fn)(struct req *rq);
	bool upload;
};

/* Literal segments before {wildcards}: /audit/checkpoint before /audit/{seq}. */
static const struct route routes[] = {
	{ "GET", "health", PUBLIC, h_health, false },
	{ "GET", "openapi.json", PUBLIC, h_openapi, false },
	{ "GET", "whoami", ANY, h_whoami, false },
	{ "GET", "policy", ANY, h_policy, false },
	{ "PUT", "policy", AL_ROLE_ADMIN, h_policy_set, false },
	{ "GET", "projects", ANY, h_projects, false },
	{ "POST", "projects", AL_ROLE_AUTHOR, h_project_create, false },
	{ "GET", "projects/{name}", ANY, h_project, false },
	{ "POST", "projects/{name}", AL_ROLE_AUTHOR, h_project_create_tree, true },
	{ "GET", "projects/{name}/contract", ANY, h_project_contract, false },
	{ "PUT", "projects/{name}/contract", AUTHORS, h_project_contract_set, false },
	{ "DELETE", "projects/{name}/contract", AUTHORS, h_project_contract_set, false },
	{ "GET", "projects/{name}/log", READ, h_project_log, false },
	{ "GET", "projects/{name}/drafts", READ, h_project_drafts, false },
	{ "GET", "projects/{name}/runs", ANY, h_runs, false },
	{ "POST", "projects/{name}/runs", AL_ROLE_AUTHOR | AL_ROLE_AGENT, h_run_start, false },
	{ "POST", "projects/{name}/commits", AL_ROLE_AUTHOR, h_project_commit, true },
	{ "GET", "drafts/{id}", READ, h_draft, false },
	{ "GET", "drafts/{id}/review", READ, h_draft_review, false },
	{ "POST", "drafts/{id}/apply", AL_ROLE_REVIEWER, h_draft_apply, false },
	{ "GET", "snapshots/{id}", READ, h_snapshot, false },
	{ "GET", "blobs/{id}", READ, h_blob, false },
	{ "GET", "blobs/{id}/image", READ, h_blob_image, false },
	{ "GET", "images", ANY, h_images, false },
	{ "POST", "images", AL_ROLE_ADMIN | AL_ROLE_AUTHOR, h_image_import, true },
	{ "GET", "runs/{id}", ANY, h_run, false },
	{ "GET", "runs/{id}/output", ANY, h_run_output, false },
	{ "POST", "runs/{id}/cancel", ANY, h_run_cancel, false },
	{ "POST", "runs/{id}/replay", AL_ROLE_AUTHOR | AL_ROLE_AGENT, h_run_replay, false },
	{ "GET", "audit", AL_ROLE_ADMIN | AL_ROLE_REVIEWER, h_audit, false },
	{ "GET", "audit/checkpoint", AL_ROLE_ADMIN | AL_ROLE_REVIEWER, h_audit_checkpoint, false },
	{ "GET", "audit/export", AL_ROLE_ADMIN | AL_ROLE_REVIEWER, h_audit_export, false },
	{ "GET", "audit/{seq}", AL_ROLE_ADMIN | AL_ROLE_REVIEWER, h_audit_entry, false },
	{ "GET", "principals", AL_ROLE_ADMIN, h_principals, false },
	{ "POST", "principals", AL_ROLE_ADMIN, h_principal_create, false },
	{ "POST", "principals/{name}/grants", AL_ROLE_ADMIN, h_principal_grant, false },
	{ "POST", "principals/{name}/tokens", AL_ROLE_ADMIN, h_token_create, false },
	{ "GET", "tokens", AL_ROLE_ADMIN, h_tokens, false },
	{ "DELETE", "tokens/{id}", AL_ROLE_ADMIN, h_token_revoke, false },
	{ "GET", "integrations", AL_ROLE_ADMIN, h_integrations, false },
	{ "POST", "integrations", AL_ROLE_ADMIN, h_integration_create, false },
	{ "GET", "integrations/{name}", AL_ROLE_ADMIN, h_integration, false },
	{ "DELETE", "integrations/{name}", AL_ROLE_ADMIN, h_integration_delete, false },
	{ "POST", "integrations/{name}/grants", AL_ROLE_ADMIN, h_integration_grant, false },
	{ "POST", "integrations/{name}/secret", AL_ROLE_ADMIN, h_integration_secret, false },
	{ "POST", "session", ANY, h_session_create, false },
	{ "GET", "session", ANY, h_session, false },
	{ "DELETE", "session", ANY, h_session_end, false },
};

/* Does the path (segments) match pattern?  method_ok tells whether the method matched too. */
static bool match(const struct route *rt, struct req *rq)
{
	char pat[128];
	snprintf(pat, sizeof(pat), "%s", rt->pattern);
	size_t n = 0;
	char *save = NULL;
	for (char *p = strtok_r(pat, "/", &save); p; p = strtok_r(NULL, "/", &save), n++) {
		if (n >= rq->nseg)
			return false;
		if (p[0] != '{' && strcmp(p, rq->seg[n]) != 0)
			return false;
	}
	return n == rq->nseg;
}

static const struct route *route_find(struct req *rq, bool *path_known)
{
	*path_known = false;
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		if (!match(&routes[i], rq))
			continue;
		/* a literal route wins over a wildcard one of another method */
		*path_known = true;
		if (strcmp(routes[i].method, rq->method) == 0)
			return &routes[i];
	}
	return NULL;
}

/* "GET, POST": the methods of the routes that match rq's path */
static void route_methods(struct req *rq, char *out, size_t n)
{
	size_t len = 0;
	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		if (!match(&routes[i], rq) || strstr(out, routes[i].method))
			continue;
		int w = snprintf(out + len, n - len, "%s%s", len ? ", " : "", routes[i].method);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
}

/* ---- the request's life --------------------------------------------------------- */

/* The request's method as it may be logged or echoed: a method of RFC 9110
 * (or PATCH), else "OTHER" -- a client's bytes never reach the log. */
static const char *method_name(const char *m)
{
	static const char *const known[] = { "HEAD",    "GET",     "POST",  "PUT",  "DELETE",
					     "CONNECT", "OPTIONS", "TRACE", "PATCH" };
	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		if (m && strcmp(m, known[i]) == 0)
			return known[i];
	return "OTHER";
}

static void split_path(struct req *rq, const char *url)
{
	snprintf(rq->path, sizeof(rq->path), "%s", url);
	if ((strncmp(rq->path, "/api/", 5) != 0 && strcmp(rq->path, "/api") != 0) ||
	    !(rq->segbuf = strdup(rq->path + 4))) {
		rq->nseg = (size_t)-1; /* not ours */
		return;
	}
	char *save = NULL;
	for (char *s = strtok_r(rq->segbuf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (rq->nseg >= ARRAY_SIZE(rq->seg)) {
			rq->nseg = (size_t)-1;
			return;
		}
		rq->seg[rq->nseg++] = s;
	}
}

/* A bearer token, else the web UI's session cookie (session.c).  Either
 * way one answer for every failure. */
static int bearer(struct req *rq)
{
	const char *h = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
						       MHD_HTTP_HEADER_AUTHORIZATION);
	const char *tok = NULL;
	if (h && strncasecmp(h, "Bearer ", 7) == 0)
		tok = h + 7 + strspn(h + 7, " ");
	const char *cookie = h ? NULL
			       : dl_mhd.lookup_connection_value(rq->conn, MHD_COOKIE_KIND,
								srv_session_cookie(rq->srv));
	struct al_error err = { 0 };
	int r;
	if (cookie) {
		r = al_auth_session_check(rq->srv->auth, cookie, &rq->who, NULL, &err);
		if (r == 0) {
			rq->by_session = true;
			snprintf(rq->session, sizeof(rq->session), "%s", cookie);
		}
	} else {
		r = al_auth_check(rq->srv->auth, tok, &rq->who, &err);
	}
	rq->authed = r == 0;
	return r;
}

/* A request the session cookie authenticated that may change something
 * must carry the session's anti-CSRF value in a header: a page of another
 * origin can make the browser send the cookie (were SameSite ignored) but
 * can neither read the value nor set the header without CORS, which the
 * daemon never grants. */
static bool csrf_ok(struct req *rq)
{
	if (!rq->by_session || strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0)
		return true;
	const char *v = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND, SRV_CSRF_HEADER);
	return al_auth_session_csrf_ok(rq->session, v);
}

/* Failed authentication, per source address (IPv4): a bucket of
 * AUTH_BURST failures refilled at one a second.  An empty bucket answers
 * 429 with Retry-After before any token is looked at (OpenSSH's
 * PerSourcePenalties refuses a penalised source the same way), so guessing
 * is bounded to about one token a second per address.  Valid tokens pay
 * one table lookup: no sleep, no extra hashing.  A fixed table: a
 * colliding address takes the slot over (memory stays bounded). */
#define AUTH_SLOTS 4096
#define AUTH_BURST 10.0
static struct auth_slot {
	uint32_t addr;
	double tokens;
	uint64_t t_ns;
} auth_slots[AUTH_SLOTS];
static pthread_mutex_t auth_lock = PTHREAD_MUTEX_INITIALIZER;

static bool client_addr(struct req *rq, uint32_t *addr)
{
	const union MHD_ConnectionInfo *ci =
		dl_mhd.get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr || ci->client_addr->sa_family != AF_INET)
		return false;
	*addr = ((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr.s_addr;
	return true;
}

static struct auth_slot *auth_slot_of(uint32_t addr)
{
	uint32_t h = addr * 2654435761u;
	return &auth_slots[(h >> 20) % AUTH_SLOTS];
}

/* 0, or the seconds until this address may try again */
static unsigned auth_penalty(struct req *rq, bool failed)
{
	uint32_t addr;
	if (!client_addr(rq, &addr))
		return 0;
	uint64_t now = al_now_ns();
	unsigned wait = 0;
	pthread_mutex_lock(&auth_lock);
	struct auth_slot *s = auth_slot_of(addr);
	if (s->addr != addr || !s->t_ns) {
		if (!failed)
			goto out;
		*s = (struct auth_slot){ .addr = addr, .tokens = AUTH_BURST, .t_ns = now };
	}
	s->tokens += (double)(now - s->t_ns) / 1e9;
	if (s->tokens > AUTH_BURST)
		s->tokens = AUTH_BURST;
	s->t_ns = now;
	if (failed && s->tokens >= 1)
		s->tokens -= 1;
	else if (!failed && s->tokens < 1)
		wait = (unsigned)(1.0 - s->tokens) + 1;
out:
	pthread_mutex_unlock(&auth_lock);
	return wait;
}

static int open_upload(struct req *rq, struct al_error *err)
{
	char dir[4300];
	snprintf(dir, sizeof(dir), "%s/tenants/%s/tmp", rq->srv->cfg.home, rq->who.tenant);
	rq->upload_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (rq->upload_fd < 0)
		return al_fail(err, AL_EIO, errno, "upload: temporary file");
	return 0;
}

static enum MHD_Result queue(struct req *rq)
{
	if (!rq->resp)
		srv_fail(rq, AL_EIO, "no answer");
	return dl_mhd.queue_response(rq->conn, (unsigned)rq->status, rq->resp);
}

static const struct route *first_call(struct req *rq, const char *url)
{
	if (rq->nseg == (size_t)-1) {
		if (strncmp(url, "/api/", 5) != 0 && strcmp(url, "/api") != 0) {
			rq->route = "/(page)";
			srv_web(rq, url); /* the UI (web.c): public, like its login page */
			return NULL;
		}
		srv_fail(rq, AL_ENOTFOUND, "no such route");
		return NULL;
	}
	bool known;
	const struct route *rt = route_find(rq, &known);
	rq->route = rt ? rt->pattern : "?";
	if (!rt || !(rt->roles & PUBLIC)) {
		unsigned wait = auth_penalty(rq, false);
		if (wait) {
			srv_fail(rq, AL_EAUTH,
				 "too many failed authentications from this address: retry after "
				 "%u s",
				 wait);
			rq->status = 429;
			char ra[16];
			snprintf(ra, sizeof(ra), "%u", wait);
			dl_mhd.add_response_header(rq->resp, "Retry-After", ra);
			return NULL;
		}
		if (bearer(rq) < 0) {
			auth_penalty(rq, true);
			/* one answer for every failure: unknown, expired, revoked, malformed */
			srv_fail(rq, AL_EAUTH, "invalid, expired or revoked token");
			return NULL;
		}
	}
	if (!rt && known) {
		char allow[64];
		route_methods(rq, allow, sizeof(allow));
		srv_method_not_allowed(rq, allow);
		return NULL;
	}
	if (!rt) {
		srv_fail(rq, AL_ENOTFOUND, "no route %s %s", rq->method, rq->path);
		return NULL;
	}
	if (!(rt->roles & PUBLIC) && !csrf_ok(rq)) {
		srv_fail(rq, AL_EDENIED,
			 "%s %s with a session cookie needs the session's " SRV_CSRF_HEADER
			 " header",
			 rq->method, rt->pattern);
		return NULL;
	}
	if (!(rt->roles & PUBLIC) && !srv_role(rq, rt->roles)) {
		char have[64];
		al_roles_format(rq->who.roles, have, sizeof(have));
		srv_fail(rq, AL_EDENIED, "%s %s is not allowed for roles %s", rq->method,
			 rt->pattern, have);
		struct al_error rerr = { 0 };
		if (al_auth_record_refusal(rq->srv->auth, &rq->who, rq->method, rt->pattern, "role",
					   &rerr) < 0)
			fprintf(stderr, "airlock serve: recording a refusal: %s\n", rerr.msg);
		return NULL;
	}
	const char *cl = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_LENGTH);
	size_t cap = rt->upload ? rq->srv->cfg.upload_max : rq->srv->cfg.body_max;
	if (cl && strtoull(cl, NULL, 10) > cap) {
		srv_fail(rq, AL_ELIMIT, "request body over %zu bytes", cap);
		return NULL;
	}
	struct al_error err = { 0 };
	if (rt->upload && open_upload(rq, &err) < 0) {
		srv_error(rq, &err);
		return NULL;
	}
	rq->upload = rt->upload;
	return rt;
}

static void take_data(struct req *rq, const char *data, size_t n)
{
	size_t cap = rq->upload ? rq->srv->cfg.upload_max : rq->srv->cfg.body_max;
	if (rq->too_big || rq->len + n > cap) {
		rq->too_big = true;
		return;
	}
	if (rq->upload) {
		while (n) {
			ssize_t w = write(rq->upload_fd, data, n);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rq->too_big =
					true; /* disk full: refused below like an oversized body */
				return;
			}
			data += w;
			n -= (size_t)w;
			rq->len += (size_t)w;
		}
		return;
	}
	if (rq->len + n > rq->cap) {
		size_t nc = rq->cap ? rq->cap : 4096;
		while (nc < rq->len + n)
			nc *= 2;
		/* grown by copy, the old buffer wiped: a body may hold secrets */
		char *b = malloc(nc);
		if (!b) {
			rq->too_big = true;
			return;
		}
		if (rq->body) {
			memcpy(b, rq->body, rq->len);
			explicit_bzero(rq->body, rq->cap);
			free(rq->body);
		}
		rq->body = b;
		rq->cap = nc;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
}

/* ---- deadlines (slowloris) -------------------------------------------------------
 * libmicrohttpd's connection timeout is an idle timeout: a client sending
 * a header line every few seconds keeps a connection forever.  Each
 * connection has an absolute deadline instead (Go's ReadHeaderTimeout,
 * Apache's mod_reqtimeout): its headers must be complete header_timeout_s
 * after it opened (or after its previous answer), its body within
 * header_timeout_s + size / body_rate.  The watchdog shuts a late socket
 * down; libmicrohttpd then sees EOF and closes it.  An entry leaves the
 * list (under the lock) before libmicrohttpd closes its fd, so the
 * watchdog never touches a reused descriptor. */

static struct conn_watch *watch_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		dl_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void watch_set(struct srv *s, struct MHD_Connection *conn, uint64_t deadline_ns, bool body)
{
	struct conn_watch *w = watch_of(conn);
	if (!w)
		return;
	pthread_mutex_lock(&s->watch_lock);
	w->deadline_ns = deadline_ns;
	w->body = body;
	if (deadline_ns)
		pthread_cond_signal(&s->watch_cond);
	pthread_mutex_unlock(&s->watch_lock);
}

static uint64_t header_deadline(const struct srv *s)
{
	return al_now_ns() + (uint64_t)s->cfg.header_timeout_s * 1000000000ull;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct srv *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) { /* the acceptor's count (acceptor) */
		unsigned n = __atomic_load_n(&s->conns, __ATOMIC_RELAXED);
		while (n && !__atomic_compare_exchange_n(&s->conns, &n, n - 1, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
	}
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			dl_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		struct conn_watch *w = ci ? calloc(1, sizeof(*w)) : NULL;
		if (!w)
			return; /* no deadline: libmicrohttpd's idle timeout still applies */
		w->fd = ci->connect_fd;
		w->deadline_ns = header_deadline(s);
		pthread_mutex_lock(&s->watch_lock);
		w->next = s->watched;
		if (w->next)
			w->next->prev = w;
		s->watched = w;
		pthread_cond_signal(&s->watch_cond);
		pthread_mutex_unlock(&s->watch_lock);
		*socket_context = w;
		return;
	}
	struct conn_watch *w = *socket_context;
	if (!w)
		return;
	pthread_mutex_lock(&s->watch_lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		s->watched = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&s->watch_lock);
	free(w);
	*socket_context = NULL;
}

/* A cancel asked through another node of a run in flight here (liveness.c,
 * under its lock: never after al_node_serve_stop). */
static void node_cancel(void *ctx, const char *tenant, const char *id)
{
	struct srv *s = ctx;
	sched_lock(&s->sched);
	struct sched_run *r = sched_find(&s->sched, tenant, id);
	if (r && !r->done && !r->cancel_requested)
		sched_cancel(r);
	sched_unlock(&s->sched);
}

static void *watchdog(void *arg)
{
	struct srv *s = arg;
	pthread_mutex_lock(&s->watch_lock);
	while (!s->watch_stop) {
		pthread_mutex_unlock(&s->watch_lock);
		/* the request threads' idle stores, and the heap they leave */
		if (srv_stores_expire(al_now_ns()))
			malloc_trim(0);
		pthread_mutex_lock(&s->watch_lock);
		if (s->watch_stop) /* asked while the lock was let go */
			break;
		uint64_t now = al_now_ns(), next = now + 1000000000ull;
		for (struct conn_watch *w = s->watched; w; w = w->next) {
			if (!w->deadline_ns)
				continue;
			if (w->deadline_ns <= now) {
				shutdown(w->fd, SHUT_RDWR);
				w->deadline_ns = 0;
				fprintf(stderr,
					"airlock serve: closed a connection whose %s took too "
					"long\n",
					w->body ? "request body" : "request headers");
			} else if (w->deadline_ns < next) {
				next = w->deadline_ns;
			}
		}
		struct timespec ts = { (time_t)(next / 1000000000ull),
				       (long)(next % 1000000000ull) };
		pthread_cond_timedwait(&s->watch_cond, &s->watch_lock, &ts);
	}
	pthread_mutex_unlock(&s->watch_lock);
	return NULL;
}

static int watchdog_start(struct srv *s)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* al_now_ns's clock */
	pthread_cond_init(&s->watch_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&s->watch_lock, NULL);
	return pthread_create(&s->watchdog, NULL, watchdog, s) == 0 ? 0 : -1;
}

static void watchdog_stop(struct srv *s)
{
	pthread_mutex_lock(&s->watch_lock);
	s->watch_stop = true;
	pthread_cond_signal(&s->watch_cond);
	pthread_mutex_unlock(&s->watch_lock);
	pthread_join(s->watchdog, NULL);
	pthread_cond_destroy(&s->watch_cond);
	pthread_mutex_destroy(&s->watch_lock);
}

/* The headers are in: no deadline while the handler runs, or the body's. */
static void headers_done(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *cl = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = dl_mhd.lookup_connection_value(rq->conn, MHD_HEADER_KIND,
							MHD_HTTP_HEADER_TRANSFER_ENCODING);
	uint64_t size = cl ? strtoull(cl, NULL, 10) : 0;
	if (te && !cl) /* chunked: as long as the largest body it may be */
		size = rq->rt && rq->rt->upload ? s->cfg.upload_max : s->cfg.body_max;
	if (!size) {
		watch_set(s, rq->conn, 0, false);
		return;
	}
	uint64_t rate = s->cfg.body_rate ? s->cfg.body_rate : 1;
	uint64_t secs = s->cfg.header_timeout_s + size / rate + 1;
	watch_set(s, rq->conn,
		  al_now_ns() + (secs > 86400 * 365 ? 86400 * 365 : secs) * 1000000000ull, true);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	(void)version;
	struct srv *s = cls;
	struct req *rq = *con_cls;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		rq->srv = s;
		rq->conn = conn;
		rq->method = method_name(method);
		rq->upload_fd = -1;
		rq->t0 = al_now_ns();
		rq->route = "-";
		split_path(rq, url);
		rq->rt = first_call(rq, url);
		if (!rq->rt) {
			watch_set(s, conn, 0, false);
			return queue(rq);
		}
		headers_done(rq);
		return MHD_YES;
	}
	if (rq->waiting) {
		sched_lock(&s->sched);
		bool suspended = rq->suspended;
		sched_unlock(&s->sched);
		if (suspended)
			return MHD_YES;
		srv_run_answer(rq);
		return queue(rq);
	}
	if (*data_size) {
		take_data(rq, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	watch_set(s, conn, 0, false); /* the body is complete */
	if (rq->resp)
		return queue(rq);
	if (rq->too_big) {
		size_t cap = rq->upload ? s->cfg.upload_max : s->cfg.body_max;
		srv_fail(rq, AL_ELIMIT, "request body over %zu bytes", cap);
		return queue(rq);
	}
	if (rq->upload && lseek(rq->upload_fd, 0, SEEK_SET) != 0) {
		srv_fail(rq, AL_EIO, "upload");
		return queue(rq);
	}
	rq->rt->fn(rq);
	if (rq->waiting)
		return MHD_YES; /* suspended until its run ends (srv_resume) */
	return queue(rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct srv *s = cls;
	watch_set(s, conn, header_deadline(s), false); /* a kept-alive connection's next headers */
	struct req *rq = *con_cls;
	if (!rq)
		return;
	uint64_t now = al_now_ns();
	__atomic_add_fetch(&s->answered, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->answered_ns, now, __ATOMIC_RELAXED);
	if (rq->waiting)
		srv_run_unwait(rq);
	double ms = (double)(now - rq->t0) / 1e6;
	char when[32];
	time_t t = time(NULL);
	struct tm tm; /* gmtime_r: the log is written by every thread of the pool */
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	/* never the token, the body or the query (it may carry names only,
	 * but a client could put anything there) */
	/* a page's pattern (web.c) is a whole path; an API route's is under /api/ */
	fprintf(stderr, "%s %s/%s %s %s%s %d %.1fms%s\n", when,
		rq->who.tenant[0] ? rq->who.tenant : "-", rq->who.name[0] ? rq->who.name : "-",
		rq->method, rq->route[0] == '/' ? "" : "/api/", rq->route, rq->status, ms,
		toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
	if (rq->resp)
		dl_mhd.destroy_response(rq->resp);
	if (rq->upload_fd >= 0)
		close(rq->upload_fd);
	/* what a deep request (a run's start, a schema check) touched of this
	 * request thread's stack goes back: after any request of 2 ms or more
	 * (where the syscall does not count), else once a second a thread */
	static __thread uint64_t stack_released;
	if (ms >= 2 || now - stack_released > 1000000000ull) {
		stack_released = now;
		al_stack_release();
	}
	free(rq->segbuf);
	explicit_bzero(rq->session, sizeof(rq->session));
	if (rq->body)
		explicit_bzero(rq->body, rq->cap); /* a run request's body holds its secrets */
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* ---- the daemon ------------------------------------------------------------------- */

static int parse_listen(const char *s, struct sockaddr_in *sa, struct al_error *err)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return al_fail(err, AL_EUSAGE, 0, "--listen takes HOST:PORT (IPv4), not '%s'", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return al_fail(err, AL_EUSAGE, 0, "--listen takes HOST:PORT (IPv4), not '%s'", s);
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

/* A PEM file for TLS, read whole (small).  The key must be its owner's
 * alone, as OpenSSH insists of private keys. */
static int read_pem(const char *path, bool secret, char **out, struct al_error *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return al_fail(err, AL_ENOTFOUND, e, "cannot read %s", path);
	}
	int r = 0;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (1 << 20))
		r = al_fail(err, AL_EINVAL, 0,
			    "%s: not a PEM file (a regular file of 1 MiB at most)", path);
	else if (secret && (st.st_mode & 077))
		r = al_fail(err, AL_EINVAL, 0,
			    "%s: the private key is readable by others (mode %03o): chmod 600 it",
			    path, (unsigned)(st.st_mode & 0777));
	char *b = r == 0 ? calloc(1, (size_t)st.st_size + 1) : NULL;
	if (r == 0 && !b)
		r = al_fail(err, AL_ENOMEM, ENOMEM, "tls");
	if (r == 0 && al_read_full(fd, b, (size_t)st.st_size) != st.st_size)
		r = al_fail(err, AL_EIO, errno, "cannot read %s", path);
	if (r == 0 && !strstr(b, "-----BEGIN "))
		r = al_fail(err, AL_EINVAL, 0, "%s: not a PEM file", path);
	close(fd);
	if (r < 0) {
		if (b)
			explicit_bzero(b, (size_t)st.st_size);
		free(b);
		return r;
	}
	*out = b;
	return 0;
}

static void wipe_free(char *p)
{
	if (p) {
		explicit_bzero(p, strlen(p));
		free(p);
	}
}

/* At start: each tenant's tables against its ledger (al_fsck_ledger); a
 * difference is logged, the daemon serves anyway (run `airlock fsck`). */
static void ledger_diff(void *ctx, const char *problem, const struct al_oid *id, const char *why)
{
	(void)problem;
	(void)id;
	char q[2048];
	al_quote(why, strlen(why), q, sizeof(q));
	fprintf(stderr, "airlock serve: tenant %s: differs from its ledger: %s\n",
		(const char *)ctx, q);
}

static int check_tenant(void *ctx, const char *tenant, struct al_error *err)
{
	const struct srv_config *cfg = ctx;
	struct al_store *st = NULL;
	struct al_error e = { 0 };
	(void)err;
	int n = al_store_open(cfg->home, tenant, &st, &e) == 0
			? al_fsck_ledger(st, ledger_diff, (void *)tenant, &e)
			: -1;
	al_store_close(st);
	if (n < 0)
		fprintf(stderr,
			"airlock serve: tenant %s: cannot check it against its ledger: %s\n",
			tenant, e.msg);
	else if (n > 0)
		fprintf(stderr,
			"airlock serve: tenant %s: %d difference%s from its ledger (airlock "
			"fsck)\n",
			tenant, n, n == 1 ? "" : "s");
	return 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char msg[512], q[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strcspn(msg, "\n"); /* its own line ends; a client's bytes inside are escaped */
	al_quote(msg, n, q, sizeof(q));
	fprintf(stderr, "airlock serve: %s\n", q);
}

/* Connections open at once: the acceptor's limit.  libmicrohttpd's own
 * (per worker: its limit over the pool's size; a pool of one is no pool)
 * is set so high that no worker can reach it, with room for a count the
 * acceptor lost: a connection handed over (MHD_add_connection) that a
 * worker finds past its limit when it takes it from its queue left that
 * worker deadlocked in 0.9.75 (its limit branch keeps a mutex locked),
 * and the pool's stop with it (s0030). */
#define POOL_CONNECTIONS 1024

/* The request pool: libmicrohttpd's daemon and its threads.  It has no
 * listening socket of its own: airlock's acceptor hands it each connection
 * (pool_renew says why). */
static struct MHD_Daemon *pool_start(struct srv *s)
{
	bool tls = s->cert != NULL;
	/* TLS 1.2 and 1.3 only (Mozilla's "intermediate" floor), GnuTLS's
	 * priority syntax (Debian's libmicrohttpd uses GnuTLS) */
	return dl_mhd.start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
			MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG |
			(tls ? MHD_USE_TLS : 0),
		0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg.threads, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)(POOL_CONNECTIONS + 64) * s->cfg.threads,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)s->cfg.conn_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)(64 << 10), MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, s->cert, MHD_OPTION_HTTPS_MEM_KEY,
		s->key, MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
		MHD_OPTION_END);
}

static unsigned pool_connections(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *ci =
		dl_mhd.get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return ci ? ci->num_connections : 1;
}

/* The listening socket (SO_REUSEADDR, as libmicrohttpd made it). */
static int listen_open(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0 ||
	    bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 || listen(fd, 512) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* accept4's errors that are the network's, to try again at once (accept(2)) */
static bool accept_again(int e)
{
	return e == EINTR || e == EAGAIN || e == ECONNABORTED || e == ENETDOWN || e == EPROTO ||
	       e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH ||
	       e == EOPNOTSUPP || e == ENETUNREACH;
}

/* The acceptor: each connection goes to the current pool (which closes
 * it if it cannot take it: an address past its 256).  With POOL_CONNECTIONS
 * open (its own count: handed over, not yet closed), out of descriptors or
 * memory it waits 10 ms, the clients in the backlog, rather than spin or
 * refuse; pool_stop_accepting ends it. */
static void *acceptor(void *arg)
{
	struct srv *s = arg;
	while (!__atomic_load_n(&s->accept_stop, __ATOMIC_ACQUIRE)) {
		bool full = __atomic_load_n(&s->conns, __ATOMIC_RELAXED) >= POOL_CONNECTIONS;
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = full ? -1
			      : accept4(s->listen_fd, (struct sockaddr *)&ss, &len,
					SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (full || !accept_again(errno))
				nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
			continue;
		}
		__atomic_add_fetch(&s->conns, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->handed_ns, al_now_ns(), __ATOMIC_RELAXED);
		pthread_mutex_lock(&s->pool_lock);
		enum MHD_Result ok = dl_mhd.add_connection(s->mhd, fd, (struct sockaddr *)&ss, len);
		pthread_mutex_unlock(&s->pool_lock);
		if (ok != MHD_YES)
			__atomic_sub_fetch(&s->conns, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* No new connection from here on: the acceptor ends, the socket closes. */
static void pool_stop_accepting(struct srv *s)
{
	__atomic_store_n(&s->accept_stop, true, __ATOMIC_RELEASE);
	shutdown(s->listen_fd, SHUT_RDWR); /* a blocked accept4 returns */
	pthread_join(s->acceptor, NULL);
	close(s->listen_fd);
	s->listen_fd = -1;
}

/* The pool's renewal (the main thread, twice a second).  Each request
 * thread keeps chunks it freed for itself (glibc's tcache: up to 7 of each
 * size to 1 KiB), and they hold the heap's pages they sit in: malloc_trim
 * returns none of them, and after a load the daemon stayed 2.5-4 MiB over
 * idle.  A thread's end gives its chunks back.  So once a pool that
 * answered requests has had no connection for POOL_IDLE_NS, a new pool
 * takes its place: the acceptor hands the next connection to it (under
 * pool_lock), and the old one, given none from then on, is stopped once
 * two ticks in a row found it without a connection (none is cut): its
 * threads end and malloc_trim returns
 * the pages.
 * The listening socket is airlock's, not a pool's, so a renewal never
 * touches it (libmicrohttpd's quiesce of a live epoll pool can race its
 * workers into an abort), and a pool that cannot start changes nothing:
 * the old one serves on. */
#define POOL_IDLE_NS 1000000000ull

static void pool_renew(struct srv *s)
{
	/* stopped at the second tick in a row that finds it without a
	 * connection: one handed over just before the swap is counted once
	 * its worker takes it from its queue */
	if (s->draining) {
		s->drained_ticks = pool_connections(s->draining) ? 0 : s->drained_ticks + 1;
		if (s->drained_ticks >= 2) {
			dl_mhd.stop_daemon(s->draining);
			s->draining = NULL;
			s->drained_ticks = 0;
			malloc_trim(0);
		}
	}
	/* a connection a worker failed before it started (no close to tell of)
	 * would stay in the acceptor's count: with no connection in any pool
	 * and none handed over for a second, the count is 0 */
	unsigned counted = __atomic_load_n(&s->conns, __ATOMIC_RELAXED);
	if (counted && pool_connections(s->mhd) == 0 && !s->draining &&
	    al_now_ns() - __atomic_load_n(&s->handed_ns, __ATOMIC_RELAXED) >= POOL_IDLE_NS)
		/* not if the acceptor counted one since */
		__atomic_compare_exchange_n(&s->conns, &counted, 0, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	uint64_t answered = __atomic_load_n(&s->answered, __ATOMIC_RELAXED);
	if (s->draining || answered == s->pool_answered ||
	    al_now_ns() - __atomic_load_n(&s->answered_ns, __ATOMIC_RELAXED) < POOL_IDLE_NS ||
	    pool_connections(s->mhd) != 0)
		return;
	struct MHD_Daemon *next = pool_start(s);
	if (!next)
		return;
	pthread_mutex_lock(&s->pool_lock);
	s->draining = s->mhd;
	s->mhd = next;
	pthread_mutex_unlock(&s->pool_lock);
	s->pool_answered = answered;
}

int srv_main(const struct srv_config *cfg)
{
	static struct srv s; /* the daemon's one state; its threads see it until the end */
	memset(&s, 0, sizeof(s));
	s.cfg = *cfg;
	struct al_error err = { 0 };
	struct sockaddr_in sa;
	if (parse_listen(cfg->listen, &sa, &err) < 0) {
		fprintf(stderr, "airlock serve: %s\n", err.msg);
		return 2;
	}
	bool tls = cfg->tls_cert != NULL;
	if (!tls && !cfg->insecure && (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
		fprintf(stderr,
			"airlock serve: %s is not a loopback address: bearer tokens and secrets "
			"would cross the "
			"network in clear; give --tls-cert and --tls-key (or --insecure, behind a "
			"TLS proxy)\n",
			cfg->listen);
		return 2;
	}
	/* the home (airlock.db), or with --metadata the home's keys and a
	 * database at this build's schema */
	struct al_error herr = { 0 };
	if (al_home_check(cfg->home, &herr) < 0) {
		if (herr.code == AL_ENOTFOUND)
			fprintf(stderr,
				"airlock serve: no airlock home at %s (run 'airlock init')\n",
				cfg->home);
		else
			fprintf(stderr, "airlock serve: %s\n", herr.msg);
		return al_code_exit(herr.code);
	}
	/* 1024 connections, each run's pipes and stores: use the hard limit */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	/* the signals the main thread waits for are blocked in every thread */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (dl_load_mhd(&err) < 0) {
		fprintf(stderr, "airlock serve: %s\n", err.msg);
		return al_code_exit(err.code);
	}
	char *cert = NULL, *key = NULL;
	if (tls && dl_mhd.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		fprintf(stderr,
			"airlock serve: this libmicrohttpd was built without TLS support\n");
		return 1;
	}
	if (tls && (read_pem(cfg->tls_cert, false, &cert, &err) < 0 ||
		    read_pem(cfg->tls_key, true, &key, &err) < 0)) {
		fprintf(stderr, "airlock serve: %s\n", err.msg);
		free(cert);
		return al_code_exit(err.code);
	}
	if (al_auth_open(cfg->home, &s.auth, &err) < 0) {
		fprintf(stderr, "airlock serve: %s\n", err.msg);
		free(cert);
		wipe_free(key);
		return al_code_exit(err.code);
	}
	al_auth_refusal_window(s.auth, cfg->refusal_window_s);
	/* Few malloc arenas: each thread (a run, a request) would otherwise
	 * keep one of its own, and the daemon's memory would not shrink back.
	 * A fixed mmap threshold: glibc raises it (up to 32 MiB) each time a
	 * large block is freed, after which a run's large buffers come from
	 * the heap and stay there as fragments after the run.  And no mapped
	 * objects.db, whose pages would count in the daemon's RSS (store.h). */
	al_store_map_reads(false);
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	/* The provider every run's ledger entry is signed with, loaded once
	 * now: part of the daemon's idle memory (2 MiB), not of its first
	 * run's time.  Digests (the start-up check's) do not load it. */
	al_crypto_ready();
	/* and the connection every run request reads the deployment's policy
	 * through (policy.c keeps it): part of the idle daemon too, not a
	 * growth of its memory under the first load */
	struct al_policy dep;
	struct al_error perr = { 0 };
	(void)al_policy_get(cfg->home, NULL, &dep, &perr); /* best effort: a run reads it again */
	al_auth_tenant_foreach(s.auth, check_tenant, (void *)cfg, &err);
	malloc_trim(0); /* the start-up check read each tenant's whole ledger */
	char ibuf[sizeof(s.init_path)];
	snprintf(s.init_path, sizeof(s.init_path), "%s", ops_init_path(ibuf, sizeof(ibuf)));
	sched_init(&s.sched, cfg->home, s.init_path, cfg->max_runs, cfg->grace_s);
	/* on PostgreSQL this process is a node: it beats, takes the cancels
	 * asked through other nodes, and recovers the runs of nodes that
	 * stopped beating (architecture.md "Several nodes") */
	if (al_node_serve(cfg->home, node_cancel, &s, &herr) < 0) {
		fprintf(stderr, "airlock serve: %s\n", herr.msg);
		sched_release(&s.sched);
		al_auth_close(s.auth);
		free(cert);
		wipe_free(key);
		return al_code_exit(herr.code);
	}
	if (watchdog_start(&s) < 0) {
		fprintf(stderr, "airlock serve: cannot start the connection watchdog\n");
		al_node_serve_stop();
		sched_release(&s.sched);
		al_auth_close(s.auth);
		free(cert);
		wipe_free(key);
		return 1;
	}
	s.cert = cert;
	s.key = key;
	s.listen_fd = listen_open(&sa);
	pthread_mutex_init(&s.pool_lock, NULL);
	s.mhd = s.listen_fd < 0 ? NULL : pool_start(&s);
	if (!s.mhd || pthread_create(&s.acceptor, NULL, acceptor, &s) != 0) {
		if (s.listen_fd < 0)
			fprintf(stderr, "airlock serve: cannot listen on %s: %s\n", cfg->listen,
				strerror(errno));
		else if (!s.mhd && tls)
			fprintf(stderr,
				"airlock serve: cannot listen on %s with TLS: %s (is %s the "
				"certificate of the key %s, both PEM?)\n",
				cfg->listen, strerror(errno), cfg->tls_cert, cfg->tls_key);
		else
			fprintf(stderr, "airlock serve: cannot start the request threads: %s\n",
				strerror(errno));
		if (s.mhd)
			dl_mhd.stop_daemon(s.mhd);
		if (s.listen_fd >= 0)
			close(s.listen_fd);
		pthread_mutex_destroy(&s.pool_lock);
		watchdog_stop(&s);
		al_node_serve_stop();
		sched_release(&s.sched);
		al_auth_close(s.auth);
		free(cert);
		wipe_free(key);
		return 1;
	}
	struct sockaddr_in bound;
	socklen_t blen = sizeof(bound);
	s.port = getsockname(s.listen_fd, (struct sockaddr *)&bound, &blen) == 0
			 ? ntohs(bound.sin_port)
			 : ntohs(sa.sin_port);
	char host[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, host, sizeof(host));
	printf("airlock serve: listening on %s://%s:%u\n", tls ? "https" : "http", host,
	       (unsigned)s.port);
	fflush(stdout);
	if (srv_gc_start(&s) < 0)
		fprintf(stderr,
			"airlock serve: cannot start the collector thread; no scheduled gc\n");
	int sig;
	do { /* a signal, or half a second's tick */
		sig = sigtimedwait(&set, NULL, &(struct timespec){ 0, 500000000 });
		if (sig < 0)
			pool_renew(&s);
	} while (sig < 0);
	fprintf(stderr,
		"airlock serve: %s: no new connections; waiting up to %us for runs in flight\n",
		sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg->grace_s);
	pool_stop_accepting(&s);
	sched_drain(&s.sched);
	srv_gc_stop(&s);
	/* the answers of requests that waited for those runs are on their
	 * way: give open connections up to 2 s to finish before closing them */
	for (int i = 0; i < 200; i++) {
		if (pool_connections(s.mhd) == 0 &&
		    (!s.draining || pool_connections(s.draining) == 0))
			break;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	if (s.draining)
		dl_mhd.stop_daemon(s.draining);
	dl_mhd.stop_daemon(s.mhd);
	pthread_mutex_destroy(&s.pool_lock);
	watchdog_stop(&s);
	al_node_serve_stop();
	sched_release(&s.sched);
	srv_stores_expire(UINT64_MAX); /* no request or run is left to use one */
	al_auth_close(s.auth);
	free(cert);
	wipe_free(key);
	fprintf(stderr, "airlock serve: stopped\n");
	return 0;
}
