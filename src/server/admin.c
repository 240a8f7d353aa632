/* admin: the principal itself, and an admin's principals, grants and
 * tokens, all within its own tenant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "airlock/auth.h"
#include "airlock/policy.h"
#include "decode.h"
#include "server.h"
#include "airlock/util.h"
#include "view.h"

int h_whoami(struct req *rq)
{
	json_t *o = view_principal(rq->srv->auth, &rq->who);
	json_object_set_new(o, "token", json_string(rq->who.token_id));
	json_object_set_new(o, "token_expires",
			    rq->who.token_expires ? json_integer(rq->who.token_expires)
						  : json_null());
	return srv_json(rq, 200, o);
}

static json_t *policy_doc(const struct al_policy *p)
{
	_cleanup_free_ char *s = al_policy_format(p);
	json_error_t je;
	return s ? json_loads(s, 0, &je) : NULL;
}

/* GET: the run policy that applies to the caller's tenant, and what the
 * tenant set itself; PUT (admin): change the tenant's, within the
 * deployment's ceilings, recorded in the tenant's ledger. */
static int policy_answer(struct req *rq, struct al_store *st, int status)
{
	struct al_policy eff, t;
	struct al_error err = { 0 };
	int rc = al_policy_effective(st, &eff, &err);
	if (rc == 0)
		rc = al_policy_get(NULL, st, &t, &err);
	if (rc < 0)
		return srv_error(rq, &err);
	return srv_json(
		rq, status,
		json_pack("{s:o,s:o}", "effective", policy_doc(&eff), "tenant", policy_doc(&t)));
}

int h_policy(struct req *rq)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	if (srv_store(rq, &st, &err) < 0)
		return srv_error(rq, &err);
	int r = policy_answer(rq, st, 200);
	srv_stores_give(st);
	return r;
}

int h_policy_set(struct req *rq)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	struct al_policy p;
	bool has_be = false;
	int rc = al_policy_parse(rq->len ? rq->body : "{}", rq->len ? rq->len : 2, &p, &has_be,
				 &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_policy_set(NULL, st, &p, has_be, p.best_effort, rq->who.name, &err);
	int r = rc == 0 ? policy_answer(rq, st, 200) : srv_error(rq, &err);
	srv_stores_give(st);
	return r;
}

struct list_ctx {
	struct al_auth *auth;
	json_t *arr;
};

static int principal_one(void *ctx, const struct al_principal *p, struct al_error *err)
{
	(void)err;
	struct list_ctx *l = ctx;
	json_array_append_new(l->arr, view_principal(l->auth, p));
	return 0;
}

int h_principals(struct req *rq)
{
	struct list_ctx l = { rq->srv->auth, json_array() };
	struct al_error err = { 0 };
	if (al_auth_principal_foreach(rq->srv->auth, rq->who.tenant, principal_one, &l, &err) < 0) {
		json_decref(l.arr);
		return srv_error(rq, &err);
	}
	return srv_json(rq, 200, l.arr);
}

int h_principal_create(struct req *rq)
{
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct principal_request p;
	struct al_error err = { 0 };
	int rc = decode_principal(body, &p, &err);
	if (rc == 0)
		rc = al_auth_principal_create(rq->srv->auth, rq->who.tenant, p.name, p.roles,
					      rq->who.name, &err);
	for (size_t i = 0; rc == 0 && i < p.nprojects; i++)
		rc = al_auth_grant(rq->srv->auth, rq->who.tenant, p.name, p.projects[i],
				   rq->who.name, &err);
	struct al_principal out;
	if (rc == 0)
		rc = al_auth_principal_get(rq->srv->auth, rq->who.tenant, p.name, &out, &err);
	if (rc == 0)
		srv_json(rq, 201, view_principal(rq->srv->auth, &out));
	else
		srv_error(rq, &err);
	if (rc == 0 || p.name)
		principal_request_release(&p);
	json_decref(body);
	return 0;
}

int h_principal_grant(struct req *rq)
{
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct al_error err = { 0 };
	const char *project;
	struct al_principal out;
	int rc = decode_project(body, &project, &err);
	if (rc == 0)
		rc = al_auth_grant(rq->srv->auth, rq->who.tenant, rq->seg[1], project, rq->who.name,
				   &err);
	if (rc == 0)
		rc = al_auth_principal_get(rq->srv->auth, rq->who.tenant, rq->seg[1], &out, &err);
	json_decref(body);
	return rc < 0 ? srv_error(rq, &err)
		      : srv_json(rq, 200, view_principal(rq->srv->auth, &out));
}

int h_token_create(struct req *rq)
{
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct al_error err = { 0 };
	int64_t ttl = 0;
	char token[AL_TOKEN_LEN + 1];
	struct al_token_info t;
	int rc = decode_token(body, &ttl, &err);
	json_decref(body);
	if (rc == 0)
		rc = al_auth_token_create(rq->srv->auth, rq->who.tenant, rq->seg[1], ttl, token, &t,
					  rq->who.name, &err);
	if (rc < 0)
		return srv_error(rq, &err);
	json_t *o = view_token(&t);
	json_object_set_new(o, "token", json_string(token));
	OPENSSL_cleanse(token, sizeof(token));
	return srv_json(rq, 201, o);
}

static int token_one(void *ctx, const struct al_token_info *t, struct al_error *err)
{
	(void)err;
	json_array_append_new(ctx, view_token(t));
	return 0;
}

int h_tokens(struct req *rq)
{
	json_t *arr = json_array();
	struct al_error err = { 0 };
	if (al_auth_token_foreach(rq->srv->auth, rq->who.tenant, srv_query(rq, "principal"),
				  token_one, arr, &err) < 0) {
		json_decref(arr);
		return srv_error(rq, &err);
	}
	return srv_json(rq, 200, arr);
}

int h_token_revoke(struct req *rq)
{
	struct al_error err = { 0 };
	if (al_auth_token_revoke(rq->srv->auth, rq->who.tenant, rq->seg[1], rq->who.name, &err) < 0)
		return srv_error(rq, &err);
	return srv_json(rq, 200, json_pack("{s:s,s:b}", "id", rq->seg[1], "revoked", 1));
}
