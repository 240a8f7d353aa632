/* auth: principals, roles, grants and bearer tokens in the home's global
 * database (auth.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>

#include "airlock/auth.h"
#include "airlock/store.h"
#include "ledger_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

/* The directory's connections kept open on PostgreSQL, one per tenant */
#define AUTH_CONNS 16

struct al_auth {
	struct al_db *db; /* airlock.db; on PostgreSQL the connection of no tenant */
	bool pg;
	struct {
		char tenant[64];
		struct al_db *db;
		uint64_t used;
	} conns[AUTH_CONNS];
	uint64_t uses;
	pthread_mutex_t lock;
	char home[4096];
	unsigned refusal_window; /* seconds */
	/* refusals recorded per tenant in the current minute (bounded table) */
	struct refusals {
		char tenant[64];
		int64_t minute;
		unsigned recorded, suppressed;
	} refused[64];
};

static const char *const role_names[] = { "admin", "author", "reviewer", "agent" };

int al_roles_parse(const char *csv, unsigned *out, struct al_error *err)
{
	unsigned roles = 0;
	const char *p = csv;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		unsigned bit = 0;
		for (size_t i = 0; i < ARRAY_SIZE(role_names); i++)
			if (strlen(role_names[i]) == n && strncmp(p, role_names[i], n) == 0)
				bit = 1u << i;
		if (!bit) {
			char q[80];
			al_quote(p, n < 64 ? n : 64, q, sizeof(q));
			return al_fail(
				err, AL_EINVAL, 0,
				"unknown role '%s' (expected admin, author, reviewer, agent)", q);
		}
		roles |= bit;
		p += n + (p[n] == ',');
	}
	if (!roles)
		return al_fail(err, AL_EINVAL, 0,
			       "no role given (expected admin, author, reviewer, agent)");
	*out = roles;
	return 0;
}

void al_roles_format(unsigned roles, char *out, size_t n)
{
	size_t used = 0;
	out[0] = 0;
	for (size_t i = 0; i < ARRAY_SIZE(role_names); i++)
		if (roles & (1u << i) && used < n)
			used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "," : "",
						 role_names[i]);
}

int al_principal_name_check(const char *name, struct al_error *err)
{
	size_t n = strlen(name);
	bool ok = n >= 1 && n <= AL_PRINCIPAL_MAX;
	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		ok = alnum || (i > 0 && strchr("._@-", c));
	}
	if (!ok) {
		char q[80];
		al_quote(name, strnlen(name, 64), q, sizeof(q));
		return al_fail(
			err, AL_EINVAL, 0,
			"invalid principal name '%s' (expected [A-Za-z0-9][A-Za-z0-9._@-]{0,63})",
			q);
	}
	return 0;
}

int al_auth_open(const char *home, struct al_auth **out, struct al_error *err)
{
	*out = NULL;
	struct al_auth *a = calloc(1, sizeof(*a));
	if (!a)
		return al_fail(err, AL_ENOMEM, ENOMEM, "auth");
	int r = al_store__dir_db(home, NULL, &a->db, err);
	if (r < 0) {
		free(a);
		return r;
	}
	a->pg = al_db_engine(a->db) == AL_DB_POSTGRES;
	snprintf(a->home, sizeof(a->home), "%s", home);
	a->refusal_window = 60;
	/* recursive: a foreach callback may query the directory again */
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&a->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	*out = a;
	return 0;
}

void al_auth_close(struct al_auth *a)
{
	if (!a)
		return;
	al_db_close(a->db);
	for (size_t i = 0; i < AUTH_CONNS; i++)
		al_db_close(a->conns[i].db);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

/* The connection with tenant's rows (under the lock): airlock.db holds
 * every tenant's, the SQL naming the tenant; on PostgreSQL row-level
 * security shows a connection its tenant's only, so each tenant has its
 * own, kept (the least recently used closed beyond AUTH_CONNS; one still
 * being read closes with its last statement).  NULL: the connection of no
 * tenant. */
/* On PostgreSQL, the write transaction of the admin act this thread is
 * recording (recorded()): the directory and the ledger are one database
 * there, so the act's rows go in the ledger entry's transaction. */
static __thread struct al_db *act_db;
static __thread const char *act_tenant;

static int conn(struct al_auth *a, const char *tenant, struct al_db **out, struct al_error *err)
{
	*out = a->db;
	if (!a->pg || !tenant)
		return 0;
	if (act_db && !strcmp(tenant, act_tenant)) {
		*out = act_db;
		return 0;
	}
	size_t lru = 0;
	for (size_t i = 0; i < AUTH_CONNS; i++) {
		if (a->conns[i].db && !strcmp(a->conns[i].tenant, tenant)) {
			a->conns[i].used = ++a->uses;
			*out = a->conns[i].db;
			return 0;
		}
		if (a->conns[i].used < a->conns[lru].used)
			lru = i;
	}
	int r = al_tenant_name_check(tenant, err);
	struct al_db *db = NULL;
	if (r < 0 || (r = al_store__dir_db(a->home, tenant, &db, err)) < 0)
		return r;
	al_db_close(a->conns[lru].db);
	snprintf(a->conns[lru].tenant, sizeof(a->conns[lru].tenant), "%s", tenant);
	a->conns[lru].db = db;
	a->conns[lru].used = ++a->uses;
	*out = db;
	return 0;
}

/* One statement on tenant's rows (conn) with text parameters, under the
 * lock; row (may be NULL) is called for each result row. */
typedef int (*row_fn)(void *ctx, struct al_db_stmt *q, struct al_error *err);
static int query(struct al_auth *a, const char *tenant, const char *sql, const char *const *params,
		 size_t np, row_fn row, void *ctx, struct al_error *err)
{
	pthread_mutex_lock(&a->lock);
	struct al_db_stmt *q = NULL;
	struct al_db *db;
	int r = conn(a, tenant, &db, err);
	if (r == 0)
		r = al_db_prepare(db, sql, &q, err);
	for (size_t i = 0; r == 0 && i < np; i++)
		al_db_bind_text(q, (int)i + 1, params[i], -1);
	int rc = AL_DB_DONE;
	while (r == 0 && (rc = al_db_step(q, err)) == AL_DB_ROW)
		if (row)
			r = row(ctx, q, err);
	if (r == 0 && rc < 0)
		r = rc == AL_EEXIST ? al_fail(err, AL_EEXIST, 0, "already exists")
				    : al_error_prefix(err, "directory: ");
	al_db_finalize(q);
	pthread_mutex_unlock(&a->lock);
	return r;
}

static int count_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	(void)err;
	*(int64_t *)ctx = al_db_column_int64(q, 0);
	return 0;
}

static int tenant_exists(struct al_auth *a, const char *tenant, struct al_error *err)
{
	int64_t n = 0;
	const char *p[] = { tenant };
	/* PostgreSQL's tenants key on `tenant`, as every table there */
	int r = query(a, tenant,
		      a->pg ? "SELECT count(*) FROM tenants WHERE tenant = ?1"
			    : "SELECT count(*) FROM tenants WHERE name = ?1",
		      p, 1, count_row, &n, err);
	if (r == 0 && !n)
		r = al_fail(err, AL_ENOTFOUND, 0, "no tenant %s", tenant);
	return r;
}

/* An admin act and its ledger entry: the entry is appended in a
 * transaction of the tenant's meta.db, the act (in airlock.db) runs inside
 * it, and the transaction commits only if the act succeeded.  (Two
 * databases: a crash between the act's commit and the entry's leaves the
 * act without its entry; the act is never recorded without happening.)
 * On PostgreSQL the act runs in the entry's own transaction: both or
 * neither.  data is stolen. */
static int recorded(struct al_auth *a, const char *tenant, const char *kind, const char *actor,
		    json_t *data, int (*act)(void *ctx, struct al_error *err), void *ctx,
		    struct al_error *err)
{
	struct al_store *st = NULL;
	struct al_db *db;
	struct al_db_txn txn;
	int r = data ? al_store_open(a->home, tenant, &st, err)
		     : al_fail(err, AL_ENOMEM, ENOMEM, "ledger");
	if (r == 0 && (r = al_store__meta_db(st, &db, err)) == 0 &&
	    (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) == 0) {
		char group[17];
		al_ledger__new_group(group);
		struct al_ledger_rec lr = {
			.kind = kind, .group = group, .actor = actor ? actor : "", .data = data
		};
		r = al_ledger__append_txn(st, &txn, &lr, NULL, err);
		if (a->pg && al_db_engine(db) == AL_DB_POSTGRES) {
			act_db = db;
			act_tenant = tenant;
		}
		if (r == 0)
			r = act(ctx, err);
		act_db = NULL;
		act_tenant = NULL;
		r = al_ledger__commit(st, &txn, r, err);
	}
	al_store_close(st);
	json_decref(data);
	return r;
}

struct principal_act {
	struct al_auth *a;
	const char *tenant, *name;
	unsigned roles;
};

static int principal_insert(void *ctx, struct al_error *err)
{
	struct principal_act *c = ctx;
	char rs[16], now[24];
	snprintf(rs, sizeof(rs), "%u", c->roles);
	snprintf(now, sizeof(now), "%lld", (long long)al_wall_s());
	const char *p[] = { c->tenant, c->name, rs, now };
	int r = query(
		c->a, c->tenant,
		"INSERT INTO principals(tenant, name, roles, created) VALUES (?1, ?2, ?3, ?4)", p,
		4, NULL, NULL, err);
	if (r == AL_EEXIST)
		r = al_fail(err, AL_EEXIST, 0, "principal %s already exists", c->name);
	return r;
}

int al_auth_principal_create(struct al_auth *a, const char *tenant, const char *name,
			     unsigned roles, const char *actor, struct al_error *err)
{
	int r;
	if ((r = al_principal_name_check(name, err)) < 0 || (r = tenant_exists(a, tenant, err)) < 0)
		return r;
	if (!roles || roles > 15)
		return al_fail(err, AL_EINVAL, 0, "principal %s: no valid role", name);
	char rs[64];
	al_roles_format(roles, rs, sizeof(rs));
	struct principal_act c = { a, tenant, name, roles };
	return recorded(a, tenant, "principal_create", actor,
			json_pack("{s:s,s:s}", "principal", name, "roles", rs), principal_insert,
			&c, err);
}

struct principal_ctx {
	const char *tenant;
	struct al_principal *one;
	al_principal_fn fn;
	void *ctx;
};

static int principal_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	struct principal_ctx *c = ctx;
	struct al_principal p = { 0 };
	snprintf(p.tenant, sizeof(p.tenant), "%s", c->tenant);
	snprintf(p.name, sizeof(p.name), "%s", al_db_column_text(q, 0));
	p.roles = (unsigned)al_db_column_int64(q, 1);
	p.created = al_db_column_int64(q, 2);
	if (c->one) {
		*c->one = p;
		return 0;
	}
	return c->fn(c->ctx, &p, err);
}

int al_auth_principal_get(struct al_auth *a, const char *tenant, const char *name,
			  struct al_principal *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	struct principal_ctx c = { .tenant = tenant, .one = out };
	const char *p[] = { tenant, name };
	int r = query(a, tenant,
		      "SELECT name, roles, created FROM principals WHERE tenant = ?1 AND name = ?2",
		      p, 2, principal_row, &c, err);
	if (r == 0 && !out->name[0])
		r = al_fail(err, AL_ENOTFOUND, 0, "no principal %s", name);
	return r;
}

int al_auth_principal_foreach(struct al_auth *a, const char *tenant, al_principal_fn fn, void *ctx,
			      struct al_error *err)
{
	struct principal_ctx c = { .tenant = tenant, .fn = fn, .ctx = ctx };
	const char *p[] = { tenant };
	return query(a, tenant,
		     "SELECT name, roles, created FROM principals WHERE tenant = ?1 ORDER BY name",
		     p, 1, principal_row, &c, err);
}

struct grant_act {
	struct al_auth *a;
	const char *const *p;
};

static int grant_insert(void *ctx, struct al_error *err)
{
	struct grant_act *c = ctx;
	return query(c->a, c->p[0],
		     "INSERT INTO grants(tenant, principal, project) VALUES (?1, ?2, ?3)", c->p, 3,
		     NULL, NULL, err);
}

int al_auth_grant(struct al_auth *a, const char *tenant, const char *principal, const char *project,
		  const char *actor, struct al_error *err)
{
	struct al_principal pr;
	int r = al_auth_principal_get(a, tenant, principal, &pr, err);
	if (r < 0)
		return r;
	if (al_auth_granted(a, &pr, project))
		return 0; /* idempotent: nothing happens, nothing is recorded */
	const char *p[] = { tenant, principal, project };
	struct grant_act c = { a, p };
	return recorded(a, tenant, "grant", actor,
			json_pack("{s:s,s:s}", "principal", principal, "project", project),
			grant_insert, &c, err);
}

bool al_auth_granted(struct al_auth *a, const struct al_principal *pr, const char *project)
{
	int64_t n = 0;
	const char *p[] = { pr->tenant, pr->name, project };
	struct al_error err;
	return query(a, pr->tenant,
		     "SELECT count(*) FROM grants WHERE tenant = ?1 AND principal = ?2 AND project "
		     "= "
		     "?3",
		     p, 3, count_row, &n, &err) == 0 &&
	       n > 0;
}

struct grant_ctx {
	al_grant_fn fn;
	void *ctx;
};

static int grant_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	struct grant_ctx *c = ctx;
	return c->fn(c->ctx, al_db_column_text(q, 0), err);
}

int al_auth_grant_foreach(struct al_auth *a, const char *tenant, const char *principal,
			  al_grant_fn fn, void *ctx, struct al_error *err)
{
	struct grant_ctx c = { fn, ctx };
	const char *p[] = { tenant, principal };
	return query(
		a, tenant,
		"SELECT project FROM grants WHERE tenant = ?1 AND principal = ?2 ORDER BY project",
		p, 2, grant_row, &c, err);
}

/* a token is TOKEN_SECRET_LEN random bytes; its public id TOKEN_ID_LEN more */
#define TOKEN_SECRET_LEN 32
#define TOKEN_ID_LEN 7

static void token_hash(const char *token, char hex[65])
{
	uint8_t d[AL_DIGEST_LEN];
	al_sha256(token, strlen(token), d);
	al_hex(d, sizeof(d), hex);
}

struct token_act {
	struct al_auth *a;
	const char *const *p;
};

static int token_insert(void *ctx, struct al_error *err)
{
	struct token_act *c = ctx;
	return query(
		c->a, c->p[2],
		"INSERT INTO tokens(id, hash, tenant, principal, created, expires) VALUES (?1, "
		"?2, ?3, ?4, ?5, ?6)",
		c->p, 6, NULL, NULL, err);
}

static int token_revoke(void *ctx, struct al_error *err)
{
	struct token_act *c = ctx;
	return query(c->a, c->p[0], "UPDATE tokens SET revoked = 1 WHERE tenant = ?1 AND id = ?2",
		     c->p, 2, NULL, NULL, err);
}

int al_auth_token_create(struct al_auth *a, const char *tenant, const char *principal,
			 int64_t ttl_s, char token[AL_TOKEN_LEN + 1], struct al_token_info *info,
			 const char *actor, struct al_error *err)
{
	memset(info, 0, sizeof(*info));
	struct al_principal pr;
	int r = al_auth_principal_get(a, tenant, principal, &pr, err);
	if (r < 0)
		return r;
	if (ttl_s < 0 || ttl_s > 100LL * 365 * 86400)
		return al_fail(err, AL_EINVAL, 0, "token lifetime out of range");
	uint8_t rnd[TOKEN_SECRET_LEN + TOKEN_ID_LEN];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "token: getrandom");
	char hex[65], idhex[15], hash[65];
	al_hex(rnd, TOKEN_SECRET_LEN, hex);
	al_hex(rnd + TOKEN_SECRET_LEN, TOKEN_ID_LEN, idhex);
	snprintf(token, AL_TOKEN_LEN + 1, "alk_%s", hex);
	OPENSSL_cleanse(rnd, sizeof(rnd));
	OPENSSL_cleanse(hex, sizeof(hex));
	snprintf(info->id, sizeof(info->id), "t%.13s", idhex);
	snprintf(info->principal, sizeof(info->principal), "%s", principal);
	info->created = al_wall_s();
	info->expires = ttl_s ? info->created + ttl_s : 0;
	token_hash(token, hash);
	char created[24], expires[24];
	snprintf(created, sizeof(created), "%lld", (long long)info->created);
	snprintf(expires, sizeof(expires), "%lld", (long long)info->expires);
	const char *p[] = { info->id, hash, tenant, principal, created, expires };
	struct token_act c = { a, p };
	r = recorded(a, tenant, "token_create", actor,
		     json_pack("{s:s,s:s,s:I}", "token", info->id, "principal", principal,
			       "expires", (json_int_t)info->expires),
		     token_insert, &c, err);
	if (r < 0)
		OPENSSL_cleanse(token, AL_TOKEN_LEN + 1);
	return r;
}

int al_auth_token_revoke(struct al_auth *a, const char *tenant, const char *id, const char *actor,
			 struct al_error *err)
{
	int64_t n = 0;
	const char *p[] = { tenant, id };
	int r = query(a, tenant, "SELECT count(*) FROM tokens WHERE tenant = ?1 AND id = ?2", p, 2,
		      count_row, &n, err);
	if (r == 0 && !n)
		return al_fail(err, AL_ENOTFOUND, 0, "no token %s", id);
	struct token_act c = { a, p };
	if (r == 0)
		r = recorded(a, tenant, "token_revoke", actor, json_pack("{s:s}", "token", id),
			     token_revoke, &c, err);
	return r;
}

struct tenant_ctx {
	al_tenant_fn fn;
	void *ctx;
};

static int tenant_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	struct tenant_ctx *c = ctx;
	return c->fn(c->ctx, al_db_column_text(q, 0), err);
}

int al_auth_tenant_foreach(struct al_auth *a, al_tenant_fn fn, void *ctx, struct al_error *err)
{
	struct tenant_ctx c = { fn, ctx };
	/* on PostgreSQL the names come from the owner's function (pg.c) */
	return query(a, NULL,
		     a->pg ? "SELECT t FROM airlock_tenants() AS t"
			   : "SELECT name FROM tenants ORDER BY name",
		     NULL, 0, tenant_row, &c, err);
}

static int no_act(void *ctx, struct al_error *err)
{
	(void)ctx;
	(void)err;
	return 0;
}

void al_auth_refusal_window(struct al_auth *a, unsigned seconds)
{
	a->refusal_window = seconds ? seconds : 1;
}

int al_auth_record_refusal(struct al_auth *a, const struct al_principal *who, const char *method,
			   const char *route, const char *why, struct al_error *err)
{
	int64_t minute = al_wall_s() / a->refusal_window; /* the window's number */
	unsigned suppressed = 0;
	bool record = false;
	pthread_mutex_lock(&a->lock);
	struct refusals *slot = NULL;
	for (size_t i = 0; i < sizeof(a->refused) / sizeof(a->refused[0]) && !slot; i++)
		if (!strcmp(a->refused[i].tenant, who->tenant) || !a->refused[i].tenant[0])
			slot = &a->refused[i];
	if (!slot) /* more tenants refused this minute than slots: share the oldest */
		slot = &a->refused[minute % (int64_t)(sizeof(a->refused) / sizeof(a->refused[0]))];
	if (strcmp(slot->tenant, who->tenant)) {
		memset(slot, 0, sizeof(*slot));
		snprintf(slot->tenant, sizeof(slot->tenant), "%s", who->tenant);
	}
	if (slot->minute != minute) {
		suppressed = slot->suppressed;
		slot->minute = minute;
		slot->recorded = slot->suppressed = 0;
	}
	if (slot->recorded < AL_REFUSALS_PER_MIN) {
		slot->recorded++;
		record = true;
	} else
		slot->suppressed++;
	pthread_mutex_unlock(&a->lock);
	int r = 0;
	if (suppressed)
		r = recorded(a, who->tenant, "refused", "",
			     json_pack("{s:i,s:s}", "suppressed", (int)suppressed, "note",
				       "refusals over the per-minute bound, counted"),
			     no_act, NULL, err);
	if (r == 0 && record)
		r = recorded(a, who->tenant, "refused", who->name,
			     json_pack("{s:s,s:s,s:i,s:s}", "method", method, "route", route,
				       "status", 403, "why", why),
			     no_act, NULL, err);
	return r;
}

struct token_ctx {
	al_token_fn fn;
	void *ctx;
};

static int token_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	struct token_ctx *c = ctx;
	struct al_token_info t = { 0 };
	snprintf(t.id, sizeof(t.id), "%s", al_db_column_text(q, 0));
	snprintf(t.principal, sizeof(t.principal), "%s", al_db_column_text(q, 1));
	t.created = al_db_column_int64(q, 2);
	t.expires = al_db_column_int64(q, 3);
	t.revoked = al_db_column_int64(q, 4) != 0;
	return c->fn(c->ctx, &t, err);
}

int al_auth_token_foreach(struct al_auth *a, const char *tenant, const char *principal,
			  al_token_fn fn, void *ctx, struct al_error *err)
{
	struct token_ctx c = { fn, ctx };
	const char *p[] = { tenant, principal };
	return query(a, tenant,
		     principal ? "SELECT id, principal, created, expires, revoked FROM tokens "
				 "WHERE tenant = ?1 AND principal = ?2 ORDER BY created, id"
			       : "SELECT id, principal, created, expires, revoked FROM tokens "
				 "WHERE tenant = ?1 ORDER BY created, id",
		     p, principal ? 2 : 1, token_row, &c, err);
}

/* A token's principal from a row's first columns: token id, tenant,
 * name, roles, created (the token check's and the session check's). */
static void token_principal(struct al_principal *p, struct al_db_stmt *q)
{
	snprintf(p->token_id, sizeof(p->token_id), "%s", al_db_column_text(q, 0));
	snprintf(p->tenant, sizeof(p->tenant), "%s", al_db_column_text(q, 1));
	snprintf(p->name, sizeof(p->name), "%s", al_db_column_text(q, 2));
	p->roles = (unsigned)al_db_column_int64(q, 3);
	p->created = al_db_column_int64(q, 4);
}

struct check_ctx {
	struct al_principal *p;
	int64_t expires;
	int revoked;
	bool found;
};

static int check_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	(void)err;
	struct check_ctx *c = ctx;
	c->found = true;
	token_principal(c->p, q);
	c->expires = al_db_column_int64(q, 5);
	c->p->token_expires = c->expires;
	c->revoked = al_db_column_int64(q, 6);
	return 0;
}

static int text_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	(void)err;
	const char *t = al_db_column_text(q, 0);
	snprintf(ctx, 64, "%s", t ? t : "");
	return 0;
}

/* On PostgreSQL, the tenant of a live token or session by its hash, before
 * the tenant is known: the owner's function (pg.c) answers that and
 * nothing else.  "" for none.  On airlock.db the lookup's own query sees
 * every tenant: nothing to do. */
static int lookup_tenant(struct al_auth *a, const char *fn_sql, const char *hash, char tenant[64],
			 struct al_error *err)
{
	tenant[0] = 0;
	if (!a->pg)
		return 0;
	char now[24];
	snprintf(now, sizeof(now), "%lld", (long long)al_wall_s());
	const char *p[] = { hash, now };
	return query(a, NULL, fn_sql, p, 2, text_row, tenant, err);
}

int al_auth_check(struct al_auth *a, const char *token, struct al_principal *out,
		  struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	/* the lookup is by the hash of whatever was presented: the same work
	 * for a malformed, unknown, expired or revoked token */
	char hash[65];
	token_hash(token ? token : "", hash);
	struct check_ctx c = { .p = out };
	const char *p[] = { hash };
	struct al_error qerr;
	char tenant[64];
	int r = lookup_tenant(a, "SELECT airlock_token_tenant(?1, CAST(?2 AS BIGINT))", hash,
			      tenant, &qerr);
	if (r == 0 && (!a->pg || tenant[0]))
		r = query(a, a->pg ? tenant : NULL,
			  "SELECT t.id, t.tenant, p.name, p.roles, p.created, t.expires, t.revoked "
			  "FROM tokens t JOIN principals p ON p.tenant = t.tenant AND p.name = "
			  "t.principal "
			  "WHERE t.hash = ?1",
			  p, 1, check_row, &c, &qerr);
	if (r < 0) {
		memset(out, 0, sizeof(*out));
		if (err)
			*err = qerr;
		return r;
	}
	bool ok = c.found && !c.revoked && (c.expires == 0 || c.expires > al_wall_s()) && token &&
		  strlen(token) == AL_TOKEN_LEN && strncmp(token, "alk_", 4) == 0;
	if (!ok) {
		memset(out, 0, sizeof(*out));
		return al_fail(err, AL_EAUTH, 0, "invalid, expired or revoked token");
	}
	return 0;
}

/* ---- sessions ------------------------------------------------------------------- */

#define SESSION_SECRET_LEN 32

int al_auth_session_create(struct al_auth *a, const struct al_principal *p, int64_t ttl_s,
			   char session[AL_SESSION_LEN + 1], int64_t *expires, struct al_error *err)
{
	session[0] = 0;
	if (!p->token_id[0])
		return al_fail(err, AL_EAUTH, 0, "a session is made from a bearer token");
	if (ttl_s <= 0 || ttl_s > 366LL * 86400)
		return al_fail(err, AL_EINVAL, 0, "session lifetime out of range");
	/* the token's own expiry bounds the session's */
	int64_t token_expires = 0;
	const char *tp[] = { p->token_id };
	int r = query(a, p->tenant, "SELECT expires FROM tokens WHERE id = ?1", tp, 1, count_row,
		      &token_expires, err);
	if (r < 0)
		return r;
	int64_t now = al_wall_s();
	int64_t until = now + ttl_s;
	if (token_expires && token_expires < until)
		until = token_expires;
	uint8_t rnd[SESSION_SECRET_LEN];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return al_fail(err, AL_EIO, errno, "session: getrandom");
	char hex[65], hash[65];
	al_hex(rnd, sizeof(rnd), hex);
	OPENSSL_cleanse(rnd, sizeof(rnd));
	snprintf(session, AL_SESSION_LEN + 1, "als_%s", hex);
	OPENSSL_cleanse(hex, sizeof(hex));
	token_hash(session, hash);
	char created[24], exp[24], old[24];
	snprintf(created, sizeof(created), "%lld", (long long)now);
	snprintf(exp, sizeof(exp), "%lld", (long long)until);
	snprintf(old, sizeof(old), "%lld", (long long)now);
	/* ended sessions leave no row behind: expired ones go as new ones come */
	const char *gp[] = { old };
	r = query(a, p->tenant, "DELETE FROM sessions WHERE expires <= ?1", gp, 1, NULL, NULL, err);
	const char *ip[] = { hash, p->token_id, created, exp };
	if (r == 0)
		r = query(a, p->tenant,
			  "INSERT INTO sessions(hash, token, created, expires) VALUES (?1, ?2, ?3, "
			  "?4)",
			  ip, 4, NULL, NULL, err);
	if (r < 0) {
		OPENSSL_cleanse(session, AL_SESSION_LEN + 1);
		return r;
	}
	*expires = until;
	return 0;
}

struct session_ctx {
	struct al_principal *p;
	int64_t expires, token_expires;
	int revoked;
	bool found;
};

static int session_row(void *ctx, struct al_db_stmt *q, struct al_error *err)
{
	(void)err;
	struct session_ctx *c = ctx;
	c->found = true;
	token_principal(c->p, q);
	c->expires = al_db_column_int64(q, 5);
	c->token_expires = al_db_column_int64(q, 6);
	c->p->token_expires = c->token_expires;
	c->revoked = al_db_column_int64(q, 7);
	return 0;
}

int al_auth_session_check(struct al_auth *a, const char *session, struct al_principal *out,
			  int64_t *expires, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	/* as al_auth_check: the same work for every text presented */
	char hash[65];
	token_hash(session ? session : "", hash);
	struct session_ctx c = { .p = out };
	const char *p[] = { hash };
	struct al_error qerr;
	char tenant[64];
	int r = lookup_tenant(a, "SELECT airlock_session_tenant(?1, CAST(?2 AS BIGINT))", hash,
			      tenant, &qerr);
	if (r == 0 && (!a->pg || tenant[0]))
		r = query(
			a, a->pg ? tenant : NULL,
			"SELECT t.id, t.tenant, p.name, p.roles, p.created, s.expires, t.expires, "
			"t.revoked FROM sessions s JOIN tokens t ON t.id = s.token "
			"JOIN principals p ON p.tenant = t.tenant AND p.name = t.principal "
			"WHERE s.hash = ?1",
			p, 1, session_row, &c, &qerr);
	if (r < 0) {
		memset(out, 0, sizeof(*out));
		if (err)
			*err = qerr;
		return r;
	}
	int64_t now = al_wall_s();
	bool ok = c.found && !c.revoked && c.expires > now &&
		  (c.token_expires == 0 || c.token_expires > now) && session &&
		  strlen(session) == AL_SESSION_LEN && strncmp(session, "als_", 4) == 0;
	if (!ok) {
		memset(out, 0, sizeof(*out));
		return al_fail(err, AL_EAUTH, 0, "invalid, expired or revoked token");
	}
	if (expires)
		*expires = c.expires;
	return 0;
}

int al_auth_session_end(struct al_auth *a, const char *session, struct al_error *err)
{
	struct al_principal who;
	int r = al_auth_session_check(a, session, &who, NULL, err);
	if (r < 0)
		return r;
	char hash[65];
	token_hash(session, hash);
	const char *p[] = { hash };
	return query(a, who.tenant, "DELETE FROM sessions WHERE hash = ?1", p, 1, NULL, NULL, err);
}

void al_auth_session_csrf(const char *session, char out[AL_CSRF_LEN + 1])
{
	static const char label[] = "airlock csrf v1:";
	char buf[sizeof(label) + AL_SESSION_LEN + 1];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s%s", label, session ? session : "");
	uint8_t d[AL_DIGEST_LEN];
	al_sha256(buf, n < sizeof(buf) ? n : sizeof(buf) - 1, d);
	OPENSSL_cleanse(buf, sizeof(buf));
	al_hex(d, sizeof(d), out);
}

bool al_auth_session_csrf_ok(const char *session, const char *value)
{
	char want[AL_CSRF_LEN + 1];
	al_auth_session_csrf(session, want);
	bool ok = value && strlen(value) == AL_CSRF_LEN &&
		  CRYPTO_memcmp(want, value, AL_CSRF_LEN) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}
