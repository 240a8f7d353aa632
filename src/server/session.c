/* session: the web UI's sessions.  POST /api/session exchanges the bearer
 * token of the request for a session whose text travels only in an
 * HttpOnly, SameSite=Strict cookie (Secure and __Host- under TLS), so the
 * page's script never holds a credential; GET tells the page who it is and
 * its anti-CSRF value; DELETE ends it.  server.c accepts the cookie in place
 * of a token, and refuses a state-changing request that has the cookie but
 * not the anti-CSRF header (docs/api.md, Sessions). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "airlock/auth.h"
#include "airlock/util.h"
#include "server.h"
#include "view.h"

const char *srv_session_cookie(const struct srv *s)
{
	return s->cfg.tls_cert ? "__Host-airlock_session" : "airlock_session";
}

/* Set-Cookie: the session (max_age > 0) or its removal (0). */
static void set_cookie(struct req *rq, const char *value, int64_t max_age)
{
	char c[256];
	snprintf(c, sizeof(c), "%s=%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Strict%s",
		 srv_session_cookie(rq->srv), value, (long long)max_age,
		 rq->srv->cfg.tls_cert ? "; Secure" : "");
	dl_mhd.add_response_header(rq->resp, "Set-Cookie", c);
	OPENSSL_cleanse(c, sizeof(c));
}

static json_t *session_view(struct req *rq, const char *session, int64_t expires)
{
	json_t *o = view_principal(rq->srv->auth, &rq->who);
	char csrf[AL_CSRF_LEN + 1];
	al_auth_session_csrf(session, csrf);
	json_object_set_new(o, "expires", json_integer(expires));
	json_object_set_new(o, "csrf", json_string(csrf));
	OPENSSL_cleanse(csrf, sizeof(csrf));
	return o;
}

/* The body may be empty or {}: a session's lifetime is the deployment's. */
static int no_fields(struct req *rq)
{
	json_t *body = NULL;
	if (srv_body_json(rq, &body) < 0)
		return -1;
	size_t n = json_object_size(body);
	json_decref(body);
	if (n) {
		srv_fail(rq, AL_EINVAL, "POST /api/session takes no fields");
		return -1;
	}
	return 0;
}

int h_session_create(struct req *rq)
{
	if (rq->by_session) /* a session is made from a token, never from another session */
		return srv_fail(rq, AL_EAUTH, "invalid, expired or revoked token");
	if (no_fields(rq) < 0)
		return 0;
	char session[AL_SESSION_LEN + 1];
	int64_t expires = 0;
	struct al_error err = { 0 };
	if (al_auth_session_create(rq->srv->auth, &rq->who, rq->srv->cfg.session_ttl_s, session,
				   &expires, &err) < 0)
		return srv_error(rq, &err);
	int r = srv_json(rq, 201, session_view(rq, session, expires));
	if (r == 0)
		set_cookie(rq, session, expires - al_wall_s());
	OPENSSL_cleanse(session, sizeof(session));
	return r;
}

int h_session(struct req *rq)
{
	if (!rq->by_session)
		return srv_fail(rq, AL_ENOTFOUND,
				"no session: this request was authenticated by a bearer token");
	int64_t expires = 0;
	struct al_principal who;
	struct al_error err = { 0 };
	if (al_auth_session_check(rq->srv->auth, rq->session, &who, &expires, &err) < 0)
		return srv_error(rq, &err);
	return srv_json(rq, 200, session_view(rq, rq->session, expires));
}

int h_session_end(struct req *rq)
{
	if (!rq->by_session)
		return srv_fail(rq, AL_ENOTFOUND,
				"no session: this request was authenticated by a bearer token");
	struct al_error err = { 0 };
	if (al_auth_session_end(rq->srv->auth, rq->session, &err) < 0)
		return srv_error(rq, &err);
	int r = srv_json(rq, 200, json_pack("{s:b}", "ended", 1));
	if (r == 0)
		set_cookie(rq, "", 0);
	return r;
}
