/* integrations: an admin's integrations of its own tenant (integ.h).  The
 * secret comes once, in the create request's body, and no answer carries
 * it in any form: the documents are al_integ_list's (the header's name
 * only).  The request's copies of it are wiped once it is sealed. */
#include <string.h>

#include <openssl/crypto.h>

#include "airlock/auth.h"
#include "airlock/integ.h"
#include "decode.h"
#include "server.h"

/* The tenant's integration called name, or AL_ENOTFOUND. */
static int one(struct al_store *st, const char *name, json_t **out, struct al_error *err)
{
	json_t *arr = NULL;
	int rc = al_integ_name_check(name, err);
	if (rc == 0)
		rc = al_integ_list(st, &arr, err);
	size_t i;
	json_t *o;
	*out = NULL;
	json_array_foreach(arr, i, o)
		if (!*out && !strcmp(json_string_value(json_object_get(o, "name")), name))
			*out = json_incref(o);
	json_decref(arr);
	if (rc == 0 && !*out)
		rc = al_fail(err, AL_ENOTFOUND, 0, "no integration %s", name);
	return rc;
}

int h_integrations(struct req *rq)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *arr = NULL;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_integ_list(st, &arr, &err);
	srv_stores_give(st);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 200, arr);
}

int h_integration(struct req *rq)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	json_t *o = NULL;
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = one(st, rq->seg[1], &o, &err);
	srv_stores_give(st);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 200, o);
}

/* Wipe a JSON string's bytes in place (jansson frees without wiping). */
static void wipe_string(json_t *v)
{
	if (json_is_string(v))
		OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
}

/* A body that holds a secret: not srv_body_json, whose parser's message
 * quotes the text near the error, which may be the secret; the raw body is
 * wiped once parsed. */
static int secret_body(struct req *rq, json_t **body, struct al_error *err)
{
	int rc = 0;
	*body = NULL;
	if (rq->len && decode_body(rq->body, rq->len, body, err) < 0)
		rc = al_fail(err, AL_EINVAL, 0,
			     "request body: not a JSON object (or a duplicate key)");
	else if (!rq->len)
		*body = json_object();
	if (rq->body)
		OPENSSL_cleanse(rq->body, rq->len);
	return rc;
}

int h_integration_create(struct req *rq)
{
	struct al_error err = { 0 };
	json_t *body = NULL;
	int rc = secret_body(rq, &body, &err);
	struct al_integ_spec spec;
	struct al_store *st = NULL;
	json_t *o = NULL;
	if (rc == 0)
		rc = decode_integration(body, &spec, &err);
	spec.actor = rq->who.name;
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_integ_create(st, &spec, &err);
	if (rc == 0)
		rc = one(st, spec.name, &o, &err);
	srv_stores_give(st);
	wipe_string(json_object_get(body, "secret"));
	json_decref(body);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 201, o);
}

int h_integration_secret(struct req *rq)
{
	struct al_error err = { 0 };
	json_t *body = NULL, *o = NULL;
	const char *header = NULL, *secret = NULL;
	struct al_store *st = NULL;
	int rc = secret_body(rq, &body, &err);
	if (rc == 0)
		rc = al_integ_name_check(rq->seg[1], &err);
	if (rc == 0)
		rc = decode_integration_secret(body, &header, &secret, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_integ_rotate(st, rq->seg[1], header, secret, rq->who.name, &err);
	if (rc == 0)
		rc = one(st, rq->seg[1], &o, &err);
	srv_stores_give(st);
	wipe_string(json_object_get(body, "secret"));
	json_decref(body);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 200, o);
}

int h_integration_grant(struct req *rq)
{
	json_t *body;
	if (srv_body_json(rq, &body) < 0)
		return 0;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	const char *project = NULL, *principal = NULL;
	json_t *o = NULL;
	int rc = al_integ_name_check(rq->seg[1], &err);
	if (rc == 0)
		rc = decode_integration_grant(body, &project, &principal, &err);
	/* a principal of this tenant (a project is looked up by al_integ_grant) */
	struct al_principal p;
	if (rc == 0 && principal)
		rc = al_auth_principal_get(rq->srv->auth, rq->who.tenant, principal, &p, &err);
	if (rc == 0)
		rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_integ_grant(st, rq->seg[1], project, principal, rq->who.name, &err);
	if (rc == 0)
		rc = one(st, rq->seg[1], &o, &err);
	srv_stores_give(st);
	json_decref(body);
	return rc < 0 ? srv_error(rq, &err) : srv_json(rq, 200, o);
}

int h_integration_delete(struct req *rq)
{
	struct al_store *st = NULL;
	struct al_error err = { 0 };
	int rc = srv_store(rq, &st, &err);
	if (rc == 0)
		rc = al_integ_delete(st, rq->seg[1], rq->who.name, &err);
	srv_stores_give(st);
	return rc < 0 ? srv_error(rq, &err)
		      : srv_json(rq, 200, json_pack("{s:s}", "deleted", rq->seg[1]));
}
