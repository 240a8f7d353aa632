/* policy: run limits' defaults and ceilings, per deployment and tenant
 * (policy.h).  Each level is one JSON document in a one-row table: the
 * deployment's in airlock.db, a tenant's in its meta.db, where its change
 * and the ledger entry recording it share a transaction. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "airlock/contract.h"
#include "airlock/policy.h"
#include "airlock/store.h"
#include "ledger_private.h"
#include "db.h"
#include "store_private.h"
#include "util.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

/* The limits as fields of al_limits, with their JSON names and scale
 * (timeout in seconds, cpus in CPUs: stored in milli-units). */
static const struct {
	const char *name;
	size_t off;
	double scale;
	double max; /* what a document may say at all, before any ceiling */
} fields[] = {
	{ "memory", offsetof(struct al_limits, memory), 1, 1ull << 50 },
	{ "pids", offsetof(struct al_limits, pids), 1, 1 << 30 },
	{ "cpus", offsetof(struct al_limits, cpus_milli), 1000, 4096 },
	{ "timeout", offsetof(struct al_limits, timeout_ms), 1000, 1e7 },
	{ "output_limit", offsetof(struct al_limits, output), 1, 1ull << 50 },
	{ "disk_limit", offsetof(struct al_limits, disk), 1, 1ull << 50 },
	{ "files", offsetof(struct al_limits, files), 1, 1ull << 40 },
	{ "egress_connections", offsetof(struct al_limits, connections), 1, 1 << 20 },
	{ "egress_bytes", offsetof(struct al_limits, egress_bytes), 1, 1ull << 50 },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static uint64_t *field(struct al_limits *l, size_t i)
{
	return (uint64_t *)((char *)l + fields[i].off);
}

static uint64_t cfield(const struct al_limits *l, size_t i)
{
	return *(const uint64_t *)((const char *)l + fields[i].off);
}

void al_policy_builtin(struct al_policy *p)
{
	memset(p, 0, sizeof(*p));
	al_limits_default(&p->dflt);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	p->max = (struct al_limits){
		.memory = 16ull << 30,
		.pids = 16384,
		.cpus_milli = (uint64_t)(cpus > 0 ? cpus : 1) * 1000,
		.timeout_ms = 24ull * 3600 * 1000,
		.output = 1ull << 30,
		.disk = 64ull << 30,
		.files = 4000000,
		.connections = 16384,
		.egress_bytes = 1ull << 40,
	};
	if (p->dflt.cpus_milli > p->max.cpus_milli)
		p->dflt.cpus_milli = p->max.cpus_milli;
	p->runs_per_tenant = 16;
	p->runs_per_principal = 8;
	p->best_effort = false;
	p->backend = AL_BACKEND_NS;
	p->backends = AL_BACKEND_NS | AL_BACKEND_VM;
	p->egress_set = true; /* and empty: no destination until the operator names one */
}

int al_policy_egress(const struct al_policy *p, const char *const *allow, struct al_error *err)
{
	const char *ceil[AL_NET_ALLOW_MAX];
	size_t n = 0;
	while (allow && allow[n])
		n++;
	if (n > AL_NET_ALLOW_MAX)
		return al_fail(err, AL_ELIMIT, 0, "run: more than %d egress allow entries",
			       AL_NET_ALLOW_MAX);
	for (size_t i = 0; i < p->negress; i++)
		ceil[i] = p->egress[i];
	return al_net_allow_within(allow, n, ceil, p->negress, err);
}

/* Entries of list not covered by ceiling's are dropped. */
static void egress_within(struct al_policy *list, const struct al_policy *ceiling)
{
	uint8_t k = 0;
	for (uint8_t i = 0; i < list->negress; i++) {
		bool ok = false;
		for (uint8_t j = 0; j < ceiling->negress && !ok; j++)
			ok = al_net_allow_covers(ceiling->egress[j], list->egress[i]);
		if (ok && k != i)
			memcpy(list->egress[k], list->egress[i], sizeof(list->egress[k]));
		k += ok;
	}
	list->negress = k;
}

unsigned al_policy_backend_bit(const char *name)
{
	return !strcmp(name, "ns") ? AL_BACKEND_NS : !strcmp(name, "vm") ? AL_BACKEND_VM : 0;
}

const char *al_policy_backend_name(unsigned bit)
{
	return bit == AL_BACKEND_NS ? "ns" : bit == AL_BACKEND_VM ? "vm" : "?";
}

static void backends_text(unsigned mask, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", mask & AL_BACKEND_NS ? "ns" : "",
		 (mask & AL_BACKEND_NS) && (mask & AL_BACKEND_VM) ? ", " : "",
		 mask & AL_BACKEND_VM ? "vm" : "");
}

int al_policy_backend(const struct al_policy *p, const char *want, const char **out,
		      struct al_error *err)
{
	unsigned mask = p->backends ? p->backends : AL_BACKEND_NS | AL_BACKEND_VM;
	unsigned bit = want ? al_policy_backend_bit(want) : p->backend ? p->backend : AL_BACKEND_NS;
	if (!bit)
		return al_fail(err, AL_EUSAGE, 0, "run: unknown sandbox backend '%.16s' (ns, vm)",
			       want);
	if (!(mask & bit)) {
		char allowed[16];
		backends_text(mask, allowed, sizeof(allowed));
		return al_fail(err, AL_EDENIED, 0,
			       "run: the policy does not allow the %s backend (allowed: %s; "
			       "airlock admin policy show)",
			       al_policy_backend_name(bit), allowed);
	}
	*out = al_policy_backend_name(bit);
	return 0;
}

/* ---- JSON ---------------------------------------------------------------------- */

static json_t *limits_json(const struct al_limits *l)
{
	json_t *o = json_object();
	for (size_t i = 0; i < NFIELDS; i++) {
		uint64_t v = cfield(l, i);
		if (!v)
			continue;
		json_object_set_new(o, fields[i].name,
				    fields[i].scale == 1 ? json_integer((json_int_t)v)
							 : json_real((double)v / fields[i].scale));
	}
	return o;
}

char *al_policy_format(const struct al_policy *p)
{
	json_t *o = json_pack("{s:o,s:o,s:b}", "defaults", limits_json(&p->dflt), "ceilings",
			      limits_json(&p->max), "best_effort_limits", p->best_effort);
	if (!o)
		return NULL;
	if (p->runs_per_tenant)
		json_object_set_new(o, "runs_per_tenant", json_integer(p->runs_per_tenant));
	if (p->runs_per_principal)
		json_object_set_new(o, "runs_per_principal", json_integer(p->runs_per_principal));
	if (p->contract_floor)
		json_object_set_new(o, "contract_on_violation",
				    json_string(al_contract_action_name(p->contract_floor - 1)));
	if (p->backend)
		json_object_set_new(o, "backend", json_string(al_policy_backend_name(p->backend)));
	if (p->backends) {
		json_t *a = json_array();
		for (unsigned b = AL_BACKEND_NS; b <= AL_BACKEND_VM; b <<= 1)
			if (p->backends & b)
				json_array_append_new(a, json_string(al_policy_backend_name(b)));
		json_object_set_new(o, "backends", a);
	}
	if (p->egress_set) {
		json_t *a = json_array();
		for (size_t i = 0; i < p->negress; i++)
			json_array_append_new(a, json_string(p->egress[i]));
		json_object_set_new(o, "egress_allow", a);
	}
	char *s = json_dumps(o, JSON_FLAGS);
	json_decref(o);
	return s;
}

static int number(json_t *v, const char *what, double max, double scale, uint64_t *out,
		  struct al_error *err)
{
	if (!json_is_number(v))
		return al_fail(err, AL_EINVAL, 0, "policy: '%s' is not a number", what);
	double d = json_number_value(v);
	if (!isfinite(d) || d <= 0 || d > max || (scale == 1 && d != floor(d)))
		return al_fail(err, AL_EINVAL, 0, "policy: '%s' must be a positive %s up to %.0f",
			       what, scale == 1 ? "whole number" : "number", max);
	*out = (uint64_t)llround(d * scale);
	return *out ? 0 : al_fail(err, AL_EINVAL, 0, "policy: '%s' is too small", what);
}

static int limits_parse(json_t *o, const char *what, struct al_limits *l, struct al_error *err)
{
	memset(l, 0, sizeof(*l));
	if (!o)
		return 0;
	if (!json_is_object(o))
		return al_fail(err, AL_EINVAL, 0, "policy: '%s' is not an object", what);
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (i < NFIELDS && strcmp(k, fields[i].name))
			i++;
		if (i == NFIELDS)
			return al_fail(err, AL_EINVAL, 0, "policy: unknown limit '%s.%.64s'", what,
				       k);
		int r = number(v, k, fields[i].max, fields[i].scale, field(l, i), err);
		if (r < 0)
			return r;
	}
	return 0;
}

int al_policy_parse(const char *text, size_t n, struct al_policy *out, bool *has_best_effort,
		    struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	*has_best_effort = false;
	json_error_t je;
	json_t *o = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return al_fail(err, AL_EINVAL, 0, "policy: not a JSON object%s%s", o ? "" : ": ",
			       o ? "" : je.text);
	}
	int r = 0;
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		uint64_t u = 0;
		if (r < 0)
			break;
		if (!strcmp(k, "defaults"))
			r = limits_parse(v, k, &out->dflt, err);
		else if (!strcmp(k, "ceilings"))
			r = limits_parse(v, k, &out->max, err);
		else if (!strcmp(k, "runs_per_tenant") || !strcmp(k, "runs_per_principal")) {
			if ((r = number(v, k, 1 << 20, 1, &u, err)) == 0)
				*(!strcmp(k, "runs_per_tenant") ? &out->runs_per_tenant
								: &out->runs_per_principal) =
					(uint32_t)u;
		} else if (!strcmp(k, "contract_on_violation")) {
			enum al_contract_action a;
			if (!json_is_string(v) ||
			    al_contract_action_parse(json_string_value(v), &a))
				r = al_fail(err, AL_EINVAL, 0,
					    "policy: 'contract_on_violation' is record, drop or "
					    "block_apply");
			else
				out->contract_floor = (uint8_t)(a + 1);
		} else if (!strcmp(k, "backend")) {
			unsigned b =
				json_is_string(v) ? al_policy_backend_bit(json_string_value(v)) : 0;
			if (!b)
				r = al_fail(err, AL_EINVAL, 0, "policy: 'backend' is ns or vm");
			out->backend = (uint8_t)b;
		} else if (!strcmp(k, "backends")) {
			size_t i;
			json_t *b;
			if (!json_is_array(v) || !json_array_size(v))
				r = al_fail(err, AL_EINVAL, 0,
					    "policy: 'backends' is a non-empty list of ns, vm");
			json_array_foreach(v, i, b) {
				unsigned bit = json_is_string(b)
						       ? al_policy_backend_bit(json_string_value(b))
						       : 0;
				if (r == 0 && (!bit || (out->backends & bit)))
					r = al_fail(err, AL_EINVAL, 0,
						    "policy: 'backends' is a list of ns, vm, each "
						    "once");
				out->backends |= (uint8_t)bit;
			}
		} else if (!strcmp(k, "egress_allow")) {
			size_t i;
			json_t *e;
			if (!json_is_array(v) || json_array_size(v) > AL_NET_ALLOW_MAX)
				r = al_fail(
					err, AL_EINVAL, 0,
					"policy: 'egress_allow' is a list of up to %d HOST[:PORT] "
					"entries",
					AL_NET_ALLOW_MAX);
			out->egress_set = true;
			json_array_foreach(v, i, e) {
				if (r == 0 && !json_is_string(e))
					r = al_fail(err, AL_EINVAL, 0,
						    "policy: 'egress_allow' is a list of strings");
				if (r == 0 &&
				    (r = al_net_allow_check(json_string_value(e), err)) < 0)
					al_error_prefix(err, "policy: ");
				if (r == 0) {
					snprintf(out->egress[out->negress],
						 sizeof(out->egress[out->negress]), "%s",
						 json_string_value(e));
					out->negress++;
				}
			}
		} else if (!strcmp(k, "best_effort_limits")) {
			if (!json_is_boolean(v))
				r = al_fail(err, AL_EINVAL, 0,
					    "policy: 'best_effort_limits' is true or false");
			out->best_effort = json_is_true(v);
			*has_best_effort = true;
		} else
			r = al_fail(err, AL_EINVAL, 0, "policy: unknown field '%.64s'", k);
	}
	json_decref(o);
	return r;
}

/* ---- storage ------------------------------------------------------------------- */

static int level_db(const char *home, struct al_store *tenant, struct al_db **db, bool *global,
		    struct al_error *err)
{
	*global = tenant == NULL;
	*db = NULL;
	return tenant ? al_store__meta_db(tenant, db, err) : al_store__dir_db(home, NULL, db, err);
}

/* The deployment's level on PostgreSQL is deployment_policy, a table of no
 * tenant (pg.c, schema 5): policy's rows there are each tenant's. */
static bool deployment_table(struct al_db *db, bool global)
{
	return global && al_db_engine(db) == AL_DB_POSTGRES;
}

static int load(struct al_db *db, bool global, struct al_policy *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	int r = al_db_prepare(db,
			      deployment_table(db, global)
				      ? "SELECT doc FROM deployment_policy WHERE id = 1"
				      : "SELECT doc FROM policy WHERE id = 1",
			      &q, err);
	if (r < 0)
		return r;
	if ((r = al_db_step(q, err)) <= 0)
		return r == AL_DB_DONE ? 0 : al_error_prefix(err, "policy: ");
	bool be;
	const char *doc = al_db_column_text(q, 0);
	r = al_policy_parse(doc, strlen(doc), out, &be, err);
	return r < 0 ? al_error_prefix(err, "stored ") : 0;
}

/* The deployment's document as airlock.db holds it.  Every run reads it
 * (the daemon at each run request, which hands it to the run), and opening
 * airlock.db for it (the connection, its pragmas, its schema) cost
 * 0.14 ms a read; so a process keeps one connection and what it last
 * read there, and reads the document again only when airlock.db changed:
 * PRAGMA data_version moves at every commit of another connection, and
 * every change of the policy is one (al_policy_set writes through its
 * own).  The file must still be the one the connection has open: a home
 * removed and made again at the same path is another file, and a
 * connection kept to the removed one would read its old document.  On
 * PostgreSQL the document is read each time, as before. */
static struct {
	pthread_mutex_t lock;
	char path[4096];
	struct al_db *db;
	pid_t pid;               /* the process that opened db */
	struct al_db *inherited; /* a parent's, left as it is (below) */
	dev_t dev;
	ino_t ino;
	int64_t version; /* PRAGMA data_version when stored was read; -1: none */
	struct al_policy stored;
} kept = { .lock = PTHREAD_MUTEX_INITIALIZER, .version = -1 };

static int64_t data_version(struct al_db *db)
{
	_cleanup_db_stmt_ struct al_db_stmt *q = NULL;
	if (al_db_prepare(db, "PRAGMA data_version", &q, NULL) < 0 ||
	    al_db_step(q, NULL) != AL_DB_ROW)
		return -1;
	return al_db_column_int64(q, 0);
}

static void kept_drop(void)
{
	al_db_close(kept.db);
	kept.db = NULL;
	kept.version = -1;
}

/* Under kept.lock: the kept connection to home's airlock.db, opened again
 * if it is another home's or another file's. */
static int kept_open(const char *home, struct al_error *err)
{
	char path[4096];
	if ((size_t)snprintf(path, sizeof(path), "%s/airlock.db", home) >= sizeof(path))
		return al_fail(err, AL_EINVAL, 0, "home path too long");
	/* a forked child does not use its parent's connection, nor close it
	 * (SQLite's locks and shared memory are the parent's): it opens its
	 * own */
	if (kept.db && kept.pid != getpid()) {
		kept.inherited = kept.db;
		kept.db = NULL;
		kept.version = -1;
	}
	struct stat a, b;
	if (kept.db && !strcmp(kept.path, path) && stat(path, &a) == 0 && a.st_dev == kept.dev &&
	    a.st_ino == kept.ino)
		return 0;
	kept_drop();
	bool before = stat(path, &a) == 0;
	int r = al_store__global_db(home, &kept.db, err);
	if (r < 0)
		return r;
	kept.pid = getpid();
	/* made or replaced while it opened: not known to be the file it has,
	 * so no path matches it and the next read opens again */
	if (!before || stat(path, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		kept.path[0] = '\0';
		return 0;
	}
	snprintf(kept.path, sizeof(kept.path), "%s", path);
	kept.dev = b.st_dev;
	kept.ino = b.st_ino;
	return 0;
}

static int deployment_stored(const char *home, struct al_policy *out, struct al_error *err)
{
	if (al_store__on_postgres()) {
		struct al_db *db = NULL;
		int r = al_store__dir_db(home, NULL, &db, err);
		if (r == 0)
			r = load(db, true, out, err);
		al_db_close(db);
		return r;
	}
	pthread_mutex_lock(&kept.lock);
	int r = kept_open(home, err);
	/* read before the document: a commit in between reads it again next time */
	int64_t v = r == 0 ? data_version(kept.db) : -1;
	if (r == 0 && (v < 0 || v != kept.version)) {
		kept.version = -1;
		if ((r = load(kept.db, true, &kept.stored, err)) == 0)
			kept.version = v;
	}
	if (r == 0)
		*out = kept.stored;
	else
		kept_drop();
	pthread_mutex_unlock(&kept.lock);
	return r;
}

int al_policy_get(const char *home, struct al_store *tenant, struct al_policy *out,
		  struct al_error *err)
{
	if (!tenant && !home)
		return al_fail(err, AL_EINVAL, 0, "policy: no home");
	if (!tenant)
		return deployment_stored(home, out, err);
	struct al_db *db;
	bool global;
	int r = level_db(home, tenant, &db, &global, err);
	if (r == 0)
		r = load(db, global, out, err);
	if (r == 0)
		out->best_effort = false;
	return r;
}

/* Every set field of over replaces base's. */
static void overlay(struct al_policy *base, const struct al_policy *over)
{
	for (size_t i = 0; i < NFIELDS; i++) {
		if (cfield(&over->dflt, i))
			*field(&base->dflt, i) = cfield(&over->dflt, i);
		if (cfield(&over->max, i))
			*field(&base->max, i) = cfield(&over->max, i);
	}
	if (over->runs_per_tenant)
		base->runs_per_tenant = over->runs_per_tenant;
	if (over->runs_per_principal)
		base->runs_per_principal = over->runs_per_principal;
	if (over->contract_floor)
		base->contract_floor = over->contract_floor;
	if (over->backend)
		base->backend = over->backend;
	if (over->backends)
		base->backends = over->backends;
	if (over->egress_set) {
		base->egress_set = true;
		base->negress = over->negress;
		memcpy(base->egress, over->egress, sizeof(base->egress));
	}
}

static void human(uint64_t v, double scale, char *buf, size_t n)
{
	if (scale != 1)
		snprintf(buf, n, "%g", (double)v / scale);
	else {
		static const char units[] = "KMGTP";
		int u = -1;
		while (u < 4 && v && v % 1024 == 0) {
			v /= 1024;
			u++;
		}
		snprintf(buf, n, u < 0 ? "%llu" : "%llu%c", (unsigned long long)v,
			 u < 0 ? 0 : units[u]);
	}
}

/* Within a level (p: as it applies, unset fields from the level above):
 * each default the level sets (own) at most its ceiling; an inherited
 * default above a lowered ceiling follows it down (al_policy_effective).
 * above: the ceilings the level's may not exceed (NULL: none). */
static int check_level(const struct al_policy *p, const struct al_policy *own,
		       const struct al_policy *above, struct al_error *err)
{
	char a[32], b[32];
	for (size_t i = 0; i < NFIELDS; i++) {
		uint64_t d = cfield(&own->dflt, i), m = cfield(&p->max, i);
		if (above && m > cfield(&above->max, i)) {
			human(m, fields[i].scale, a, sizeof(a));
			human(cfield(&above->max, i), fields[i].scale, b, sizeof(b));
			return al_fail(err, AL_ELIMIT, 0,
				       "policy: the tenant's ceiling for %s (%s) is above the "
				       "deployment's (%s)",
				       fields[i].name, a, b);
		}
		if (d > m) {
			human(d, fields[i].scale, a, sizeof(a));
			human(m, fields[i].scale, b, sizeof(b));
			return al_fail(err, AL_ELIMIT, 0,
				       "policy: the default %s (%s) is above its ceiling (%s)",
				       fields[i].name, a, b);
		}
	}
	if (above && (p->runs_per_tenant > above->runs_per_tenant ||
		      p->runs_per_principal > above->runs_per_principal))
		return al_fail(
			err, AL_ELIMIT, 0,
			"policy: the tenant's runs in flight (%u, %u per principal) are above the "
			"deployment's (%u, %u)",
			p->runs_per_tenant, p->runs_per_principal, above->runs_per_tenant,
			above->runs_per_principal);
	if (above && p->contract_floor && p->contract_floor < above->contract_floor)
		return al_fail(err, AL_ELIMIT, 0,
			       "policy: the tenant's contract_on_violation (%s) is weaker than the "
			       "deployment's (%s)",
			       al_contract_action_name(p->contract_floor - 1),
			       al_contract_action_name(above->contract_floor - 1));
	if (above && (p->backends & ~above->backends)) {
		char mine[16], theirs[16];
		backends_text(p->backends, mine, sizeof(mine));
		backends_text(above->backends, theirs, sizeof(theirs));
		return al_fail(err, AL_ELIMIT, 0,
			       "policy: the tenant's backends (%s) are not among the deployment's "
			       "(%s)",
			       mine, theirs);
	}
	for (uint8_t i = 0; above && i < p->negress; i++) {
		bool ok = false;
		for (uint8_t j = 0; j < above->negress && !ok; j++)
			ok = al_net_allow_covers(above->egress[j], p->egress[i]);
		if (!ok)
			return al_fail(
				err, AL_ELIMIT, 0,
				"policy: the tenant's egress_allow entry '%.64s' is not within "
				"the deployment's",
				p->egress[i]);
	}
	if (!(p->backend & p->backends))
		return al_fail(err, AL_EINVAL, 0,
			       "policy: the default backend %s is not among the allowed ones",
			       al_policy_backend_name(p->backend));
	if (p->runs_per_principal > p->runs_per_tenant)
		return al_fail(err, AL_ELIMIT, 0,
			       "policy: runs per principal (%u) above runs per tenant (%u)",
			       p->runs_per_principal, p->runs_per_tenant);
	return 0;
}

static int deployment(const char *home, struct al_policy *out, struct al_error *err)
{
	struct al_policy stored;
	al_policy_builtin(out);
	int r = deployment_stored(home, &stored, err);
	if (r == 0) {
		overlay(out, &stored);
		out->best_effort = stored.best_effort;
		for (size_t i = 0; i < NFIELDS; i++)
			if (cfield(&out->dflt, i) > cfield(&out->max, i))
				*field(&out->dflt, i) = cfield(&out->max, i);
	}
	return r;
}

int al_policy_effective(struct al_store *tenant, struct al_policy *out, struct al_error *err)
{
	struct al_policy dep, t;
	int r = deployment(al_store__home(tenant), &dep, err);
	if (r == 0)
		r = al_policy_get(NULL, tenant, &t, err);
	if (r < 0)
		return r;
	*out = dep;
	overlay(out, &t);
	/* a tenant's value set before the operator lowered a ceiling: the
	 * ceiling wins, and a default follows it down */
	for (size_t i = 0; i < NFIELDS; i++) {
		if (cfield(&out->max, i) > cfield(&dep.max, i))
			*field(&out->max, i) = cfield(&dep.max, i);
		if (cfield(&out->dflt, i) > cfield(&out->max, i))
			*field(&out->dflt, i) = cfield(&out->max, i);
	}
	if (out->runs_per_tenant > dep.runs_per_tenant)
		out->runs_per_tenant = dep.runs_per_tenant;
	if (out->runs_per_principal > out->runs_per_tenant)
		out->runs_per_principal = out->runs_per_tenant;
	/* and a floor the operator raised since holds for the tenant too */
	if (out->contract_floor < dep.contract_floor)
		out->contract_floor = dep.contract_floor;
	/* backends the operator removed since are gone for the tenant too;
	 * a default no longer allowed gives way to an allowed one */
	out->backends &= dep.backends;
	if (!out->backends)
		out->backends = dep.backends;
	if (!(out->backend & out->backends))
		out->backend = out->backends & AL_BACKEND_NS ? AL_BACKEND_NS : AL_BACKEND_VM;
	/* entries the operator no longer allows are gone for the tenant too */
	egress_within(out, &dep);
	return 0;
}

static json_t *policy_json_doc(const struct al_policy *p)
{
	_cleanup_free_ char *t = al_policy_format(p);
	json_error_t je;
	return t ? json_loads(t, 0, &je) : NULL;
}

/* The deployment's policy applies to every tenant: its change is a
 * `policy` entry (scope deployment) in every tenant's ledger, after it
 * took effect (two databases; a failure here is reported, the change
 * stays). */
struct everywhere {
	const char *home, *actor;
	const struct al_policy *before, *after;
};

static int record_one(void *ctx, const char *name, struct al_error *err)
{
	struct everywhere *c = ctx;
	struct al_store *st = NULL;
	struct al_db *db;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r;
	if ((r = al_store_open(c->home, name, &st, err)) == 0 &&
	    (r = al_store__meta_db(st, &db, err)) == 0 &&
	    (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) == 0) {
		char group[17];
		al_ledger__new_group(group);
		json_t *data =
			json_pack("{s:s,s:o,s:o}", "scope", "deployment", "before",
				  policy_json_doc(c->before), "after", policy_json_doc(c->after));
		struct al_ledger_rec lr = {
			.kind = "policy", .group = group, .actor = c->actor, .data = data
		};
		r = data ? al_ledger__append_txn(st, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "policy");
		json_decref(data);
		r = al_ledger__commit(st, &txn, r, err);
	}
	al_store_close(st);
	return r < 0 ? r : 0;
}

static int record_everywhere(const char *home, const struct al_policy *before,
			     const struct al_policy *after, const char *actor, struct al_error *err)
{
	struct everywhere c = { home, actor ? actor : "", before, after };
	return al_store__tenants(home, record_one, &c, err);
}

/* Replace the level's document: DELETE and INSERT in the transaction, the
 * same on both engines (contract.c says why not an upsert). */
static int store_doc(struct al_db *db, bool global, const char *doc, struct al_error *err)
{
	_cleanup_db_stmt_ struct al_db_stmt *del = NULL, *ins = NULL;
	bool dt = deployment_table(db, global);
	int r = al_db_prepare(db,
			      dt ? "DELETE FROM deployment_policy WHERE id = 1"
				 : "DELETE FROM policy WHERE id = 1",
			      &del, err);
	if (r == 0 && (r = al_db_step(del, err)) == 0 &&
	    (r = al_db_prepare(db,
			       dt ? "INSERT INTO deployment_policy(id, doc) VALUES (1, ?1)"
				  : "INSERT INTO policy(id, doc) VALUES (1, ?1)",
			       &ins, err)) == 0) {
		al_db_bind_text(ins, 1, doc, -1);
		r = al_db_step(ins, err);
	}
	return r < 0 ? al_error_prefix(err, "policy: ") : 0;
}

int al_policy_set(const char *home, struct al_store *tenant, const struct al_policy *p,
		  bool set_best_effort, bool best_effort, const char *actor, struct al_error *err)
{
	if (tenant && set_best_effort)
		return al_fail(err, AL_EINVAL, 0,
			       "policy: best-effort limits are the operator's choice for the whole "
			       "deployment, not a tenant's");
	if (tenant)
		home = al_store__home(tenant);
	struct al_policy dep, before, after;
	struct al_db *db = NULL;
	bool global = tenant == NULL;
	_cleanup_free_ char *doc = NULL;
	_cleanup_db_txn_ struct al_db_txn txn = { 0 };
	int r = deployment(home, &dep, err);
	if (r == 0)
		r = level_db(home, tenant, &db, &global, err);
	if (r == 0 && (r = al_db_begin(db, AL_DB_WRITE, &txn, err)) < 0 && global)
		al_db_close(db);
	if (r < 0)
		return r;
	if ((r = load(db, global, &before, err)) < 0)
		goto out;
	after = before;
	overlay(&after, p);
	if (set_best_effort)
		after.best_effort = best_effort;
	/* check the level as it would apply: unset fields from the level above */
	struct al_policy eff;
	if (global) {
		al_policy_builtin(&eff);
		overlay(&eff, &after);
		r = check_level(&eff, &after, NULL, err);
	} else {
		eff = dep;
		overlay(&eff, &after);
		r = check_level(&eff, &after, &dep, err);
	}
	if (r == 0 && !(doc = al_policy_format(&after)))
		r = al_fail(err, AL_ENOMEM, ENOMEM, "policy");
	if (r == 0)
		r = store_doc(db, global, doc, err);
	if (!global && r == 0) {
		_cleanup_free_ char *was = al_policy_format(&before);
		json_error_t je;
		json_t *data = was ? json_pack("{s:o,s:o}", "before", json_loads(was, 0, &je),
					       "after", json_loads(doc, 0, &je))
				   : NULL;
		char group[17];
		al_ledger__new_group(group);
		struct al_ledger_rec lr = {
			.kind = "policy", .group = group, .actor = actor ? actor : "", .data = data
		};
		r = data ? al_ledger__append_txn(tenant, &txn, &lr, NULL, err)
			 : al_fail(err, AL_ENOMEM, ENOMEM, "policy");
		json_decref(data);
		return al_ledger__commit(tenant, &txn, r, err);
	}
out:
	if (r < 0)
		al_db_rollback(&txn);
	else
		r = al_db_commit(&txn, err);
	if (global && r == 0)
		r = record_everywhere(home, &before, &after, actor, err);
	if (global)
		al_db_close(db); /* the global database's connection is ours */
	return r;
}

int al_policy_limits(const struct al_policy *p, const struct al_limits *req, struct al_limits *out,
		     struct al_error *err)
{
	struct al_limits l = *req;
	char a[32], b[32];
	for (size_t i = 0; i < NFIELDS; i++) {
		uint64_t *v = field(&l, i), m = cfield(&p->max, i);
		if (!*v)
			*v = cfield(&p->dflt, i);
		if (*v > m) {
			human(*v, fields[i].scale, a, sizeof(a));
			human(m, fields[i].scale, b, sizeof(b));
			return al_fail(err, AL_ELIMIT, 0,
				       "%s %s is above the ceiling %s (the tenant's or "
				       "deployment's policy: "
				       "airlock admin policy show)",
				       fields[i].name, a, b);
		}
	}
	*out = l;
	return 0;
}
