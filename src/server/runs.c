/* runs: the daemon's run scheduler and its routes.  Each run gets a thread
 * of its own (with its own store handle), so a run never blocks another
 * request; a request may wait for its run (suspended, not holding a
 * thread).  A run is cancelled through an eventfd the sandbox polls.  The
 * list keeps the runs in flight and the last RECENT_MAX that ended, so
 * status and cancel find a run before its record exists, and a run whose
 * sandbox failed (nothing recorded) still has an answer. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/image.h"
#include "airlock/policy.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "decode.h"
#include "ops.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

#define RECENT_MAX 256

struct srv_run {
	struct srv_run *next;
	struct srv *srv;
	char id[AL_RUN_ID_LEN + 1];
	char tenant[64], principal[AL_PRINCIPAL_MAX + 1], project[AL_NAME_MAX + 1];
	char image[AL_ID_STRLEN + 1]; /* as resolved for the principal: the run uses this id */
	int64_t started;
	int cancel_fd;
	bool done, cancel_requested;
	struct al_error err;       /* when rc < 0 */
	int rc;
	json_t *body;              /* the request (its secrets wiped at the end) */
	struct run_request req;
	struct req *waiter;
	char *live[2];             /* the output so far (the first LIVE_MAX bytes), while it runs */
	size_t live_len[2], live_cap[2];
};

#define LIVE_MAX (1u << 20)

int srv_runs_init(struct srv *s)
{
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->runs_done, NULL);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	sem_init(&s->heavy, 0, (unsigned)(cpus > 0 ? cpus : 1));
	return 0;
}

/* Materialising and collecting are CPU- and memory-bound: more of them at
 * once than there are cores only adds memory (each holds a few MiB of
 * compression and tree state).  Sandboxes, which mostly wait, are not
 * bounded by this. */
static void throttle(void *ctx, bool enter)
{
	struct srv *s = ctx;
	if (!enter) {
		sem_post(&s->heavy);
		return;
	}
	while (sem_wait(&s->heavy) < 0 && errno == EINTR)
		;
}

static void live_free(struct srv_run *r)
{
	for (int i = 0; i < 2; i++) {
		free(r->live[i]);
		r->live[i] = NULL;
		r->live_len[i] = r->live_cap[i] = 0;
	}
}

static void run_free(struct srv_run *r)
{
	if (r->cancel_fd >= 0)
		close(r->cancel_fd);
	live_free(r);
	free(r);
}

/* The sandbox's output as it arrives (run.h output callback): kept for
 * GET /runs/ID/output while the run lasts; the record has it after. */
static void on_output(void *ctx, int stream, const void *p, size_t n)
{
	struct srv_run *r = ctx;
	int i = stream == 2;
	pthread_mutex_lock(&r->srv->lock);
	size_t room = LIVE_MAX - r->live_len[i];
	n = n < room ? n : room;
	if (n && r->live_len[i] + n > r->live_cap[i]) {
		size_t nc = r->live_cap[i] ? r->live_cap[i] * 2 : 4096;
		while (nc < r->live_len[i] + n)
			nc *= 2;
		char *b = realloc(r->live[i], nc < LIVE_MAX ? nc : LIVE_MAX);
		if (b) {
			r->live[i] = b;
			r->live_cap[i] = nc < LIVE_MAX ? nc : LIVE_MAX;
		} else {
			n = 0; /* the live view stops; the record keeps everything */
		}
	}
	if (n) {
		memcpy(r->live[i] + r->live_len[i], p, n);
		r->live_len[i] += n;
	}
	pthread_mutex_unlock(&r->srv->lock);
}

void srv_runs_free(struct srv *s)
{
	while (s->runs) {
		struct srv_run *r = s->runs;
		s->runs = r->next;
		run_free(r);
	}
	pthread_cond_destroy(&s->runs_done);
	pthread_mutex_destroy(&s->lock);
	sem_destroy(&s->heavy);
}

/* Keep at most RECENT_MAX ended runs (under the lock). */
static void trim(struct srv *s)
{
	unsigned ended = 0;
	for (struct srv_run **pp = &s->runs; *pp;) {
		struct srv_run *r = *pp;
		if (r->done && !r->waiter && ++ended > RECENT_MAX) {
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
	json_array_foreach(json_object_get(body, "secrets"), i, v)
	{
		json_t *val = json_object_get(v, "value");
		if (json_is_string(val))
			explicit_bzero((char *)json_string_value(val), json_string_length(val));
	}
}

/* The request's copies of the secrets wiped, its buffers freed. */
static void request_release(struct srv_run *r)
{
	wipe_secrets(r->body);
	run_request_release(&r->req);
	json_decref(r->body);
	r->body = NULL;
}

/* Signal the sandbox to stop (under the lock; a second signal is a no-op). */
static void cancel(struct srv_run *r)
{
	uint64_t one = 1;
	r->cancel_requested = true;
	if (write(r->cancel_fd, &one, sizeof(one)) < 0) { /* EAGAIN: already signalled */
	}
}

static void *run_thread(void *arg)
{
	struct srv_run *r = arg;
	struct srv *s = r->srv;
	struct al_store *st = NULL;
	int rc = al_store_open(s->cfg.home, r->tenant, &st, &r->err);
	if (rc == 0) {
		struct al_run_info info;
		if ((rc = al_run(st, &r->req.o, &info, &r->err)) == 0)
			al_run_info_release(&info);
	}
	al_store_close(st);
	request_release(r);
	malloc_trim(0); /* what the run's thread freed goes back: the daemon returns to idle */
	pthread_mutex_lock(&s->lock);
	r->rc = rc;
	r->done = true;
	live_free(r);
	s->active--;
	if (r->waiter && r->waiter->suspended) {
		r->waiter->suspended = false;
		dl_mhd.resume_connection(r->waiter->conn);
	}
	trim(s);
	pthread_cond_broadcast(&s->runs_done);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* The run with this id in the principal's tenant (under the lock). */
static struct srv_run *find(struct srv *s, const struct al_principal *who, const char *id)
{
	for (struct srv_run *r = s->runs; r; r = r->next)
		if (!strcmp(r->id, id) && !strcmp(r->tenant, who->tenant))
			return r;
	return NULL;
}

/* Agents see only the runs they started. */
static bool run_visible(struct req *rq, const char *principal)
{
	if (srv_role(rq, AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER))
		return true;
	return principal && !strcmp(principal, rq->who.name);
}

static bool may_read(void *ctx, const char *project)
{
	return srv_project_visible(ctx, project);
}

static int no_run(struct req *rq, const char *id)
{
	return srv_fail(rq, AL_ENOTFOUND, "no run %s", id);
}

int h_run_start(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *project = rq->seg[1];
	struct al_error err = { 0 };
	if (!srv_project_visible(rq, project) || al_project_name_check(project, &err) < 0)
		return srv_no_project(rq, project);
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct srv_run *r = calloc(1, sizeof(*r));
	if (!r) {
		json_decref(body);
		return srv_fail(rq, AL_ENOMEM, "out of memory");
	}
	r->cancel_fd = -1;
	r->body = body;
	struct al_store *st = NULL;
	struct al_project_info p;
	int rc = decode_run(body, &r->req, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_project_get(st, project, &p, &err);
	if (rc == 0)
		rc = al_sandbox_check(NULL, r->req.o.network, &err);
	/* the tenant's policy: limits above its ceilings are refused now, not
	 * in the run's thread; its runs in flight are counted below */
	struct al_policy pol;
	struct al_limits lim;
	if (rc == 0 && (rc = al_policy_effective(st, &pol, &err)) == 0)
		rc = al_policy_limits(&pol, &r->req.o.limits, &lim, &err);
	/* everything refusable is refused before the first use imports the image */
	uint8_t img[32];
	if (rc == 0)
		rc = r->req.o.image ? al_image_resolve_as(st, r->req.o.image, may_read, rq, img, &err)
				    : ops_default_image(st, &err);
	srv_store_done(st);
	uint8_t rnd[7];
	char hex[15];
	if (rc == 0 && getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		rc = al_fail(&err, AL_EIO, errno, "run id");
	if (rc == 0 && (r->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		rc = al_fail(&err, AL_EIO, errno, "run: eventfd");
	if (rc < 0) {
		request_release(r);
		run_free(r);
		return srv_error(rq, &err);
	}
	al_hex(rnd, sizeof(rnd), hex);
	snprintf(r->id, sizeof(r->id), "r%.13s", hex);
	snprintf(r->tenant, sizeof(r->tenant), "%s", rq->who.tenant);
	snprintf(r->principal, sizeof(r->principal), "%s", rq->who.name);
	snprintf(r->project, sizeof(r->project), "%s", project);
	r->started = al_wall_s();
	r->srv = s;
	struct al_run_opts *o = &r->req.o;
	o->project = r->project;
	if (o->image) {
		al_id_fmt(img, r->image);
		o->image = r->image;
	} else {
		o->image = OPS_DEFAULT_IMAGE;
	}
	o->author = r->principal;
	o->principal = r->principal;
	o->id = r->id;
	o->cancel_fd = r->cancel_fd;
	o->init_path = s->init_path;
	o->throttle = throttle;
	o->throttle_ctx = s;
	o->output = on_output;
	o->output_ctx = r;

	pthread_mutex_lock(&s->lock);
	unsigned tenant_runs = 0, principal_runs = 0;
	for (struct srv_run *q = s->runs; q; q = q->next)
		if (!q->done && !strcmp(q->tenant, r->tenant)) {
			tenant_runs++;
			principal_runs += !strcmp(q->principal, r->principal);
		}
	if (s->stopping || s->active >= s->cfg.max_runs || tenant_runs >= pol.runs_per_tenant ||
	    principal_runs >= pol.runs_per_principal) {
		bool stopping = s->stopping;
		pthread_mutex_unlock(&s->lock);
		request_release(r);
		run_free(r);
		if (stopping)
			return srv_fail(rq, AL_EUNAVAIL, "the server is shutting down");
		if (principal_runs >= pol.runs_per_principal)
			return srv_fail(rq, AL_EUNAVAIL, "%u runs of yours in flight (the policy's runs_per_principal): "
							 "try again later", principal_runs);
		if (tenant_runs >= pol.runs_per_tenant)
			return srv_fail(rq, AL_EUNAVAIL, "%u runs of the tenant in flight (the policy's runs_per_tenant): "
							 "try again later", tenant_runs);
		return srv_fail(rq, AL_EUNAVAIL, "%u runs in flight: try again later", s->cfg.max_runs);
	}
	bool wait = r->req.wait;
	if (wait) {
		r->waiter = rq;
		rq->waiting = r;
	}
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* the library's deepest frames are 64 KiB buffers; 2 MiB leaves room
	 * and keeps the stacks glibc caches after the threads end small */
	pthread_attr_setstacksize(&attr, 2u << 20);
	if (pthread_create(&t, &attr, run_thread, r) != 0) {
		pthread_attr_destroy(&attr);
		rq->waiting = NULL;
		pthread_mutex_unlock(&s->lock);
		request_release(r);
		run_free(r);
		return srv_fail(rq, AL_EUNAVAIL, "cannot start a run thread");
	}
	pthread_attr_destroy(&attr);
	r->next = s->runs;
	s->runs = r;
	s->active++;
	/* a waiting request is suspended now, under the lock, so the run's end
	 * (which takes the lock) resumes it exactly once */
	if (wait) {
		rq->suspended = true;
		dl_mhd.suspend_connection(rq->conn);
	}
	pthread_mutex_unlock(&s->lock);
	if (!wait) {
		json_t *o2 = json_pack("{s:s,s:s,s:s}", "id", r->id, "state", "running", "project", r->project);
		char url[64];
		snprintf(url, sizeof(url), "/api/runs/%s", r->id);
		json_object_set_new(o2, "url", json_string(url));
		srv_json(rq, 202, o2);
	}
	return 0;
}

/* The record of an ended run (with its output), or its failure. */
/* An ended run's record, if this principal may see it (the record says
 * who started it); another's is the missing run's 404. */
static int recorded(struct req *rq, const char *id, bool with_output, json_t **rec, struct al_error *err)
{
	struct al_store *st = NULL;
	int rc = srv_store(rq, &st, err);
	if (rc == 0)
		rc = view_run(st, id, with_output, VIEW_TEXT_MAX, rec, err); /* bounded: the rest streams from /output */
	srv_store_done(st);
	if (rc == 0 && !run_visible(rq, json_string_value(json_object_get(*rec, "principal")))) {
		json_decref(*rec);
		*rec = NULL;
		rc = al_fail(err, AL_ENOTFOUND, 0, "no run %s", id);
	}
	return rc;
}

static int answer_record(struct req *rq, const char *id, bool with_output)
{
	struct al_error err = { 0 };
	json_t *rec = NULL;
	if (recorded(rq, id, with_output, &rec, &err) < 0)
		return srv_error(rq, &err);
	json_object_set_new(rec, "state", json_string("ended"));
	return srv_json(rq, 200, rec);
}

int srv_run_answer(struct req *rq)
{
	struct srv *s = rq->srv;
	pthread_mutex_lock(&s->lock);
	struct srv_run *r = rq->waiting;
	char id[AL_RUN_ID_LEN + 1];
	snprintf(id, sizeof(id), "%s", r->id);
	int rc = r->rc;
	struct al_error err = r->err;
	r->waiter = NULL;
	rq->waiting = NULL;
	pthread_mutex_unlock(&s->lock);
	return rc < 0 ? srv_error(rq, &err) : answer_record(rq, id, true);
}

void srv_run_unwait(struct req *rq)
{
	pthread_mutex_lock(&rq->srv->lock);
	if (rq->waiting)
		rq->waiting->waiter = NULL;
	rq->waiting = NULL;
	pthread_mutex_unlock(&rq->srv->lock);
}

int h_run(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	pthread_mutex_lock(&s->lock);
	struct srv_run *r = find(s, &rq->who, id);
	bool running = r && !r->done, visible = r && run_visible(rq, r->principal);
	int rc = r ? r->rc : 0;
	struct al_error err = r ? r->err : (struct al_error){ 0 };
	json_t *o = running ? json_pack("{s:s,s:s,s:s,s:s,s:I,s:b}", "id", r->id, "state", "running", "project",
					r->project, "principal", r->principal, "started", (json_int_t)r->started,
					"cancel_requested", r->cancel_requested)
			    : NULL;
	pthread_mutex_unlock(&s->lock);
	if (r && !visible) {
		json_decref(o);
		return no_run(rq, id);
	}
	if (running)
		return srv_json(rq, 200, o);
	if (r && rc < 0) {
		json_t *f = json_pack("{s:s,s:s}", "id", id, "state", "failed");
		json_t *e = view_error(&err, NULL);
		json_object_set(f, "error", json_object_get(e, "error"));
		json_decref(e);
		return srv_json(rq, 200, f);
	}
	return answer_record(rq, id, srv_query(rq, "output") != NULL);
}

/* GET /runs/{id}/output?stream=stdout|stderr[&offset=N]: the stream's bytes
 * from offset; while the run lasts, what it has written so far (the first
 * LIVE_MAX bytes), after its end the stored output.  X-Airlock-Run-State
 * says which, so a client can follow a run by polling. */
int h_run_output(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	const char *stream = srv_query(rq, "stream"), *off = srv_query(rq, "offset");
	stream = stream ? stream : "stdout";
	if (strcmp(stream, "stdout") && strcmp(stream, "stderr"))
		return srv_fail(rq, AL_EINVAL, "stream is stdout or stderr");
	char *end = NULL;
	unsigned long long offset = off ? strtoull(off, &end, 10) : 0;
	if (off && (!*off || *end || off[0] == '-'))
		return srv_fail(rq, AL_EINVAL, "offset is a byte count");
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	int i = strcmp(stream, "stderr") == 0;
	pthread_mutex_lock(&s->lock);
	struct srv_run *r = find(s, &rq->who, id);
	if (r && !r->done && run_visible(rq, r->principal)) {
		srv_bytes_ranged(rq, "text/plain; charset=utf-8", r->live[i] ? r->live[i] : "", r->live_len[i], offset);
		pthread_mutex_unlock(&s->lock);
		dl_mhd.add_response_header(rq->resp, "X-Airlock-Run-State", "running");
		return 0;
	}
	pthread_mutex_unlock(&s->lock);
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *rec = NULL;
	uint8_t blob[32];
	int rc = recorded(rq, id, false, &rec, &err);
	if (rc == 0)
		rc = al_id_parse(json_string_value(json_object_get(json_object_get(rec, stream), "blob")), blob, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	json_decref(rec);
	if (rc < 0) {
		srv_store_done(st);
		return srv_error(rq, &err);
	}
	/* streamed from the store: the reader outlives the store handle */
	srv_object(rq, al_store_cas(st), blob, offset, "text/plain; charset=utf-8");
	srv_store_done(st);
	if (rq->status < 400)
		dl_mhd.add_response_header(rq->resp, "X-Airlock-Run-State", "ended");
	return 0;
}

int h_run_cancel(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	pthread_mutex_lock(&s->lock);
	struct srv_run *r = find(s, &rq->who, id);
	bool mine = r && (!strcmp(r->principal, rq->who.name) || srv_role(rq, AL_ROLE_ADMIN));
	bool visible = r && run_visible(rq, r->principal);
	bool running = r && !r->done, failed = r && r->done && r->rc < 0;
	if (running && mine)
		cancel(r);
	pthread_mutex_unlock(&s->lock);
	if (r && !visible)
		return no_run(rq, id);
	if (running && mine)
		return srv_json(rq, 202, json_pack("{s:s,s:s}", "id", id, "state", "cancelling"));
	if (running) {
		struct al_error rerr = { 0 };
		if (al_auth_record_refusal(rq->srv->auth, &rq->who, "POST", "runs/{id}/cancel", "not the run's principal",
					   &rerr) < 0)
			fprintf(stderr, "airlock serve: recording a refusal: %s\n", rerr.msg);
		return srv_fail(rq, AL_EDENIED, "only the principal that started run %s (or an admin) may cancel it", id);
	}
	/* not in flight: ended (or never existed for this tenant); a run whose
	 * sandbox failed has no record but has ended too */
	struct al_error err = { 0 };
	json_t *rec = NULL;
	int rc = failed ? 0 : recorded(rq, id, false, &rec, &err);
	json_decref(rec);
	if (rc < 0)
		return srv_error(rq, &err);
	return srv_fail(rq, AL_ESTATE, "run %s has already ended", id);
}

int h_runs(struct req *rq)
{
	const char *project = rq->seg[1];
	if (!srv_project_visible(rq, project))
		return srv_no_project(rq, project);
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *arr = json_array();
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = view_runs(st, project, arr, &err);
	srv_store_done(st);
	if (rc < 0) {
		json_decref(arr);
		return srv_error(rq, &err);
	}
	if (!srv_role(rq, AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER)) {
		json_t *mine = json_array(), *v;
		size_t i;
		json_array_foreach(arr, i, v) if (run_visible(rq, json_string_value(json_object_get(v, "principal"))))
			json_array_append(mine, v);
		json_decref(arr);
		arr = mine;
	}
	return srv_json(rq, 200, arr);
}

void srv_runs_drain(struct srv *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += s->cfg.grace_s;
	while (s->active && pthread_cond_timedwait(&s->runs_done, &s->lock, &deadline) != ETIMEDOUT)
		;
	if (s->active) {
		fprintf(stderr, "airlock serve: cancelling %u run%s still in flight\n", s->active, s->active == 1 ? "" : "s");
		for (struct srv_run *r = s->runs; r; r = r->next)
			if (!r->done)
				cancel(r);
	}
	while (s->active)
		pthread_cond_wait(&s->runs_done, &s->lock);
	pthread_mutex_unlock(&s->lock);
}
