/* airlock — principals, roles, grants and bearer tokens.
 *
 * The directory lives in the home's global database (airlock.db), beside
 * the tenants.  A principal is a user or an agent of one tenant with a set
 * of roles; an agent may start runs only on the projects granted to it.  A
 * token is 32 random bytes shown once ("alk_" + 64 hex); only its sha256
 * is stored, with its expiry and revocation.  al_auth_check answers
 * AL_EAUTH with one message for every failure (unknown, expired, revoked,
 * malformed), so a caller cannot learn whether a principal or a token
 * exists.  docs/api.md has the permission matrix. */
#ifndef AIRLOCK_AUTH_H
#define AIRLOCK_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "airlock/error.h"

struct al_auth;

enum al_role {
	AL_ROLE_ADMIN = 1,    /* principals and tokens of its tenant */
	AL_ROLE_AUTHOR = 2,   /* create projects, commit */
	AL_ROLE_REVIEWER = 4, /* review, apply and reject drafts; audit */
	AL_ROLE_AGENT = 8,    /* runs on granted projects; its own runs */
};
/* "admin,author" -> bits; AL_EINVAL naming an unknown role. */
int al_roles_parse(const char *csv, unsigned *out, struct al_error *err);
/* bits -> "admin,author" */
void al_roles_format(unsigned roles, char *out, size_t n);

#define AL_PRINCIPAL_MAX 64
#define AL_TOKEN_ID_LEN 14 /* "t" + 13 hex */
#define AL_TOKEN_LEN 68    /* "alk_" + 64 hex */

struct al_principal {
	char tenant[64];
	char name[AL_PRINCIPAL_MAX + 1];
	unsigned roles;
	int64_t created;
	char token_id[AL_TOKEN_ID_LEN + 1]; /* the token that authenticated it, if any */
	int64_t token_expires;              /* that token's expiry, unix seconds; 0: never */
};

struct al_token_info {
	char id[AL_TOKEN_ID_LEN + 1];
	char principal[AL_PRINCIPAL_MAX + 1];
	int64_t created;
	int64_t expires; /* unix seconds; 0: never */
	bool revoked;
};

/* The directory of the home (thread-safe: one connection, serialised). */
int al_auth_open(const char *home, struct al_auth **out, struct al_error *err);
void al_auth_close(struct al_auth *a);

/* Principal names: [A-Za-z0-9][A-Za-z0-9._@-]{0,63} */
int al_principal_name_check(const char *name, struct al_error *err);
/* Admin acts (create a principal, grant, create or revoke a token) are each
 * a ledger entry of the tenant, written in a transaction of its meta.db that
 * commits only if the act succeeded; actor is who did it (NULL: "").  The
 * entry names a token by its id, never its text. */

/* AL_ENOTFOUND if the tenant does not exist, AL_EEXIST if the name is taken. */
int al_auth_principal_create(struct al_auth *a, const char *tenant, const char *name,
			     unsigned roles, const char *actor, struct al_error *err);
int al_auth_principal_get(struct al_auth *a, const char *tenant, const char *name,
			  struct al_principal *out, struct al_error *err);
typedef int (*al_principal_fn)(void *ctx, const struct al_principal *p, struct al_error *err);
int al_auth_principal_foreach(struct al_auth *a, const char *tenant, al_principal_fn fn, void *ctx,
			      struct al_error *err);

/* Grant (idempotent) a project to a principal; is it granted? */
int al_auth_grant(struct al_auth *a, const char *tenant, const char *principal, const char *project,
		  const char *actor, struct al_error *err);
bool al_auth_granted(struct al_auth *a, const struct al_principal *p, const char *project);
typedef int (*al_grant_fn)(void *ctx, const char *project, struct al_error *err);
int al_auth_grant_foreach(struct al_auth *a, const char *tenant, const char *principal,
			  al_grant_fn fn, void *ctx, struct al_error *err);

/* A new token for a principal, valid for ttl_s seconds (0: no expiry).
 * token gets its text, the only time it exists outside the caller. */
int al_auth_token_create(struct al_auth *a, const char *tenant, const char *principal,
			 int64_t ttl_s, char token[AL_TOKEN_LEN + 1], struct al_token_info *info,
			 const char *actor, struct al_error *err);
/* Revoke a token of the tenant by id (AL_ENOTFOUND for another tenant's). */
int al_auth_token_revoke(struct al_auth *a, const char *tenant, const char *id, const char *actor,
			 struct al_error *err);
/* The deployment's tenants, by name. */
typedef int (*al_tenant_fn)(void *ctx, const char *tenant, struct al_error *err);
int al_auth_tenant_foreach(struct al_auth *a, al_tenant_fn fn, void *ctx, struct al_error *err);

/* A refused request (403) of a principal, as a `refused` ledger entry of its
 * tenant; at most AL_REFUSALS_PER_MIN entries a minute per tenant, the rest
 * counted and recorded as one summary entry when the next minute's first
 * refusal comes. */
#define AL_REFUSALS_PER_MIN 20
/* The bound's window in seconds (default 60; the daemon's --refusal-window). */
void al_auth_refusal_window(struct al_auth *a, unsigned seconds);
int al_auth_record_refusal(struct al_auth *a, const struct al_principal *who, const char *method,
			   const char *route, const char *why, struct al_error *err);
typedef int (*al_token_fn)(void *ctx, const struct al_token_info *t, struct al_error *err);
/* Tokens of a tenant (principal NULL: all of them), oldest first. */
int al_auth_token_foreach(struct al_auth *a, const char *tenant, const char *principal,
			  al_token_fn fn, void *ctx, struct al_error *err);

/* The principal a bearer token stands for, now; AL_EAUTH otherwise. */
int al_auth_check(struct al_auth *a, const char *token, struct al_principal *out,
		  struct al_error *err);

/* Sessions (the web UI): a bearer token exchanged for a session, whose text
 * travels in an HttpOnly cookie.  Like a token, only the sha256 of its text
 * is stored.  A session stands for the principal of the token it was made
 * from, and ends when it is ended, when it expires (ttl_s after it was made,
 * never later than its token) or when that token is revoked or expires. */
#define AL_SESSION_LEN 68 /* "als_" + 64 hex */
#define AL_CSRF_LEN 64    /* hex */
/* p: a principal al_auth_check authenticated (p->token_id names the token). */
int al_auth_session_create(struct al_auth *a, const struct al_principal *p, int64_t ttl_s,
			   char session[AL_SESSION_LEN + 1], int64_t *expires,
			   struct al_error *err);
/* The principal a session stands for, now, and when the session ends;
 * AL_EAUTH (one message for every failure) otherwise. */
int al_auth_session_check(struct al_auth *a, const char *session, struct al_principal *out,
			  int64_t *expires, struct al_error *err);
/* End a session (AL_EAUTH if it is not a live one). */
int al_auth_session_end(struct al_auth *a, const char *session, struct al_error *err);
/* The anti-CSRF value of a session: a hash of its text under a label of its
 * own (so it reveals neither the session nor the stored hash), which the
 * page sends in a header with every state-changing request. */
void al_auth_session_csrf(const char *session, char out[AL_CSRF_LEN + 1]);
/* Does value equal the session's anti-CSRF value? (constant time) */
bool al_auth_session_csrf_ok(const char *session, const char *value);

#endif
