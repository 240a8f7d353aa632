/* runs: the routes of runs.  The runs themselves are the scheduler's
 * (scheduler.h); a request may wait for its run (suspended, not holding a
 * thread: srv_suspend and srv_resume are its waiter). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/image.h"
#include "airlock/integ.h"
#include "airlock/policy.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "decode.h"
#include "ops.h"
#include "scheduler.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

/* The run with this id in the principal's tenant (under the lock). */
static struct sched_run *find(struct srv *s, const struct al_principal *who, const char *id)
{
	return sched_find(&s->sched, who->tenant, id);
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

/* Start a validated run (or replay: replay_of) through the scheduler.
 * Without wait: 202 {id, state: running, project, url[, replay_of]} at
 * once.  With wait the request is suspended when the run starts and
 * resumed by its end (the HTTP layer's waiter), which answers it.  A
 * refusal (runs in flight) frees the run and answers the error. */
static int schedule(struct req *rq, struct srv *s, struct sched_run *r, const struct al_policy *pol,
		    const char *replay_of)
{
	struct al_error err = { 0 };
	bool wait = r->req.wait;
	const struct sched_waiter w = { srv_suspend, srv_resume, rq };
	/* the run is held to the policy it was accepted under (one lookup;
	 * freed as the run ends: 8 KiB a run, not kept with the ended ones) */
	if ((r->policy = malloc(sizeof(*r->policy)))) {
		*r->policy = *pol;
		r->req.o.policy = r->policy;
	}
	if (wait)
		rq->waiting = r;
	if (sched_start(&s->sched, r, pol->runs_per_tenant, pol->runs_per_principal,
			wait ? &w : NULL, &err) < 0) {
		rq->waiting = NULL;
		sched_run_free(r);
		return srv_error(rq, &err);
	}
	if (!wait) {
		char url[64];
		snprintf(url, sizeof(url), "/api/runs/%s", r->id);
		json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "id", r->id, "state", "running",
				      "project", r->project, "url", url);
		if (o && replay_of)
			json_object_set_new(o, "replay_of", json_string(replay_of));
		srv_json(rq, 202, o);
	}
	return 0;
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
	struct sched_run *r = sched_run_new();
	if (!r) {
		json_decref(body);
		return srv_fail(rq, AL_ENOMEM, "out of memory");
	}
	r->body = body;
	struct al_store *st = NULL;
	struct al_project_info p;
	int rc = decode_run(body, &r->req, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_project_get(st, project, &p, &err);
	/* the tenant's policy: limits above its ceilings and a backend it
	 * does not allow are refused now, not in the run's thread; its runs in
	 * flight are counted by sched_start */
	struct al_policy pol;
	struct al_limits lim;
	const char *backend = NULL;
	if (rc == 0 && (rc = al_policy_effective(st, &pol, &err)) == 0 &&
	    (rc = al_policy_backend(&pol, r->req.o.backend, &backend, &err)) == 0 &&
	    (rc = al_sandbox_check(backend, r->req.o.network, &err)) == 0 &&
	    (rc = r->req.o.network == AL_NET_EGRESS
			  ? al_policy_egress(&pol, r->req.o.egress_allow, &err)
			  : 0) == 0)
		rc = al_policy_limits(&pol, &r->req.o.limits, &lim, &err);
	/* integrations: each granted to the project or the principal */
	if (rc == 0 && r->req.o.integrations && r->req.o.integrations[0])
		rc = al_integ_usable(st, r->req.o.integrations, project, rq->who.name, &err);
	/* everything refusable is refused before the first use imports the image */
	struct al_oid img;
	if (rc == 0)
		rc = r->req.o.image
			     ? al_image_resolve_as(st, r->req.o.image, may_read, rq, &img, &err)
			     : ops_default_image(st, &img, &err);
	srv_stores_give(st);
	if (rc < 0) {
		sched_run_free(r);
		return srv_error(rq, &err);
	}
	snprintf(r->tenant, sizeof(r->tenant), "%s", rq->who.tenant);
	snprintf(r->principal, sizeof(r->principal), "%s", rq->who.name);
	snprintf(r->project, sizeof(r->project), "%s", project);
	struct al_run_opts *o = &r->req.o;
	o->project = r->project;
	if (o->image) {
		al_oid_fmt(&img, r->image);
		o->image = r->image;
	} else {
		o->image = OPS_DEFAULT_IMAGE;
	}
	/* resolved once, here, for the principal: the run uses this id */
	r->image_id = img;
	o->image_id = &r->image_id;
	o->author = r->principal;
	o->principal = r->principal;

	return schedule(rq, s, r, &pol, NULL);
}

/* The record of an ended run (with its output), or its failure. */
/* An ended run's record, if this principal may see it (the record says
 * who started it); another's is the missing run's 404. */
static int recorded(struct req *rq, const char *id, bool with_output, json_t **rec,
		    struct al_error *err)
{
	struct al_store *st = NULL;
	int rc = srv_store(rq, &st, err);
	if (rc == 0)
		rc = view_run(st, id, with_output, VIEW_TEXT_MAX, rec,
			      err); /* bounded: the rest streams from /output */
	srv_stores_give(st);
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
	const char *outcome = json_string_value(json_object_get(rec, "outcome"));
	if (outcome && !strcmp(outcome, "running")) {
		/* in flight on another node (metadata on PostgreSQL; this one's
		 * own are in the scheduler): what its provisional record says */
		json_t *o = json_pack("{s:s,s:s,s:b}", "id", id, "state", "running",
				      "cancel_requested", false);
		static const char *const keep[] = { "project", "principal", "started", "node" };
		for (size_t i = 0; o && i < ARRAY_SIZE(keep); i++) {
			json_t *v = json_object_get(rec, keep[i]);
			if (v || !strcmp(keep[i], "principal"))
				json_object_set(o, keep[i], v ? v : json_null());
		}
		json_decref(rec);
		return o ? srv_json(rq, 200, o) : srv_fail(rq, AL_ENOMEM, "out of memory");
	}
	json_object_set_new(rec, "state", json_string("ended"));
	return srv_json(rq, 200, rec);
}

int srv_run_answer(struct req *rq)
{
	struct srv *s = rq->srv;
	sched_lock(&s->sched);
	struct sched_run *r = rq->waiting;
	char id[AL_RUN_ID_LEN + 1];
	snprintf(id, sizeof(id), "%s", r->id);
	int rc = r->rc;
	struct al_error err = r->err;
	sched_unwait(r);
	rq->waiting = NULL;
	sched_unlock(&s->sched);
	return rc < 0 ? srv_error(rq, &err) : answer_record(rq, id, true);
}

void srv_run_unwait(struct req *rq)
{
	sched_lock(&rq->srv->sched);
	if (rq->waiting)
		sched_unwait(rq->waiting);
	rq->waiting = NULL;
	sched_unlock(&rq->srv->sched);
}

int h_run(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	sched_lock(&s->sched);
	struct sched_run *r = find(s, &rq->who, id);
	bool running = r && !r->done, visible = r && run_visible(rq, r->principal);
	int rc = r ? r->rc : 0;
	struct al_error err = r ? r->err : (struct al_error){ 0 };
	json_t *o =
		running ? json_pack("{s:s,s:s,s:s,s:s,s:I,s:b}", "id", r->id, "state", "running",
				    "project", r->project, "principal", r->principal, "started",
				    (json_int_t)r->started, "cancel_requested", r->cancel_requested)
			: NULL;
	sched_unlock(&s->sched);
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
	sched_lock(&s->sched);
	struct sched_run *r = find(s, &rq->who, id);
	if (r && !r->done && run_visible(rq, r->principal)) {
		srv_bytes_ranged(rq, "text/plain; charset=utf-8", r->live[i] ? r->live[i] : "",
				 r->live_len[i], offset);
		sched_unlock(&s->sched);
		dl_mhd.add_response_header(rq->resp, "X-Airlock-Run-State", "running");
		return 0;
	}
	sched_unlock(&s->sched);
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *rec = NULL;
	struct al_oid blob;
	int rc = recorded(rq, id, false, &rec, &err);
	if (rc == 0)
		rc = al_oid_parse(
			json_string_value(json_object_get(json_object_get(rec, stream), "blob")),
			&blob, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	json_decref(rec);
	if (rc < 0) {
		srv_stores_give(st);
		return srv_error(rq, &err);
	}
	/* streamed from the store: the reader outlives the store handle */
	srv_object(rq, al_store_cas(st), &blob, offset, "text/plain; charset=utf-8");
	srv_stores_give(st);
	if (rq->status < 400)
		dl_mhd.add_response_header(rq->resp, "X-Airlock-Run-State", "ended");
	return 0;
}

/* 403 to a cancel by someone other than the run's principal or an admin,
 * recorded as a refusal */
static int cancel_refused(struct req *rq, const char *id)
{
	struct al_error rerr = { 0 };
	if (al_auth_record_refusal(rq->srv->auth, &rq->who, "POST", "runs/{id}/cancel",
				   "not the run's principal", &rerr) < 0)
		fprintf(stderr, "airlock serve: recording a refusal: %s\n", rerr.msg);
	return srv_fail(rq, AL_EDENIED,
			"only the principal that started run %s (or an admin) may cancel it", id);
}

int h_run_cancel(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	sched_lock(&s->sched);
	struct sched_run *r = find(s, &rq->who, id);
	bool mine = r && (!strcmp(r->principal, rq->who.name) || srv_role(rq, AL_ROLE_ADMIN));
	bool visible = r && run_visible(rq, r->principal);
	bool running = r && !r->done, failed = r && r->done && r->rc < 0;
	if (running && mine)
		sched_cancel(r);
	sched_unlock(&s->sched);
	if (r && !visible)
		return no_run(rq, id);
	if (running && mine)
		return srv_json(rq, 202, json_pack("{s:s,s:s}", "id", id, "state", "cancelling"));
	if (running) {
		return cancel_refused(rq, id);
	}
	/* not in flight: ended (or never existed for this tenant); a run whose
	 * sandbox failed has no record but has ended too */
	struct al_error err = { 0 };
	json_t *rec = NULL;
	int rc = failed ? 0 : recorded(rq, id, false, &rec, &err);
	const char *outcome = json_string_value(json_object_get(rec, "outcome"));
	const char *owner = json_string_value(json_object_get(rec, "principal"));
	bool elsewhere = outcome && !strcmp(outcome, "running");
	bool owned = owner && !strcmp(owner, rq->who.name);
	json_decref(rec);
	if (rc < 0)
		return srv_error(rq, &err);
	if (!elsewhere)
		return srv_fail(rq, AL_ESTATE, "run %s has already ended", id);
	/* in flight on another node (or process): that node cancels it */
	if (!owned && !srv_role(rq, AL_ROLE_ADMIN)) {
		return cancel_refused(rq, id);
	}
	struct al_store *st = NULL;
	if ((rc = srv_store(rq, &st, &err)) == 0)
		rc = al_run_cancel_request(st, id, &err);
	srv_stores_give(st);
	if (rc < 0)
		return srv_error(rq, &err);
	return srv_json(rq, 202, json_pack("{s:s,s:s}", "id", id, "state", "cancelling"));
}

/* POST /runs/{id}/replay: the run again from its record, as a run of this
 * principal's (scheduler.c calls al_replay).  The original must be one
 * this principal may see, on a project it may run on: else the missing
 * run's 404. */
int h_run_replay(struct req *rq)
{
	struct srv *s = rq->srv;
	const char *id = rq->seg[1];
	if (!al_run_id_valid(id))
		return no_run(rq, id);
	struct al_error err = { 0 };
	json_t *rec = NULL;
	if (recorded(rq, id, false, &rec, &err) < 0)
		return srv_error(rq, &err);
	const char *project = json_string_value(json_object_get(rec, "project"));
	const char *outcome = json_string_value(json_object_get(rec, "outcome"));
	bool visible = project && srv_project_visible(rq, project);
	bool running = outcome && !strcmp(outcome, "running");
	struct sched_run *r = visible && !running ? sched_run_new() : NULL;
	if (r)
		snprintf(r->project, sizeof(r->project), "%s", project);
	json_decref(rec);
	if (!visible)
		return no_run(rq, id);
	if (running)
		return srv_fail(rq, AL_ESTATE, "run %s has not ended", id);
	if (!r)
		return srv_fail(rq, AL_ENOMEM, "out of memory");
	json_t *body;
	if (srv_body_json(rq, &body) < 0) {
		sched_run_free(r);
		return 0;
	}
	r->body = body;
	struct al_store *st = NULL;
	struct al_policy pol;
	int rc = decode_replay(body, &r->req, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_policy_effective(st, &pol, &err);
	srv_stores_give(st);
	if (rc < 0) {
		sched_run_free(r);
		return srv_error(rq, &err);
	}
	snprintf(r->tenant, sizeof(r->tenant), "%s", rq->who.tenant);
	snprintf(r->principal, sizeof(r->principal), "%s", rq->who.name);
	snprintf(r->replay_of, sizeof(r->replay_of), "%s", id);
	struct al_run_opts *o = &r->req.o;
	o->project = r->project;
	o->author = r->principal;
	o->principal = r->principal;
	return schedule(rq, s, r, &pol, id);
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
	srv_stores_give(st);
	if (rc < 0) {
		json_decref(arr);
		return srv_error(rq, &err);
	}
	if (!srv_role(rq, AL_ROLE_ADMIN | AL_ROLE_AUTHOR | AL_ROLE_REVIEWER)) {
		json_t *mine = json_array(), *v;
		size_t i;
		json_array_foreach(arr, i, v)
			if (run_visible(rq, json_string_value(json_object_get(v, "principal"))))
				json_array_append(mine, v);
		json_decref(arr);
		arr = mine;
	}
	return srv_json(rq, 200, arr);
}
