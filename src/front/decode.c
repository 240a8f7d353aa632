/* decode: request bodies into requests (decode.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/auth.h"
#include "airlock/volume.h"
#include "airlock/contract.h"
#include "airlock/integ.h"
#include "airlock/net.h"
#include "decode.h"
#include "airlock/util.h"

int decode_body(const char *p, size_t n, json_t **out, struct al_error *err)
{
	json_error_t je;
	*out = NULL;
	json_t *j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return al_fail(err, AL_EINVAL, 0, "request body: %s (line %d)", je.text, je.line);
	if (!json_is_object(j)) {
		json_decref(j);
		return al_fail(err, AL_EINVAL, 0, "request body: expected a JSON object");
	}
	*out = j;
	return 0;
}

/* Every key of o is one of keys. */
static int known_keys(json_t *o, const char *const *keys, const char *what, struct al_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool ok = false;
		for (size_t i = 0; keys[i] && !ok; i++)
			ok = strcmp(k, keys[i]) == 0;
		if (!ok)
			return al_fail(err, AL_EINVAL, 0, "%s: unknown field '%.64s'", what, k);
	}
	return 0;
}

static int get_string(json_t *o, const char *key, bool required, const char **out,
		      struct al_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v)) {
		*out = NULL;
		return required ? al_fail(err, AL_EINVAL, 0, "missing field '%s'", key) : 0;
	}
	if (!json_is_string(v))
		return al_fail(err, AL_EINVAL, 0, "field '%s': expected a string", key);
	*out = json_string_value(v);
	if (strlen(*out) != json_string_length(v))
		return al_fail(err, AL_EINVAL, 0, "field '%s': contains a NUL byte", key);
	return 0;
}

/* A non-negative number (fractions allowed when scale > 1: 0.5 CPUs). */
static int get_number(json_t *o, const char *key, double max, double scale, uint64_t *out,
		      struct al_error *err)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return al_fail(err, AL_EINVAL, 0, "field '%s': expected a number", key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < 0 || d > max || (scale == 1 && d != floor(d)))
		return al_fail(err, AL_EINVAL, 0, "field '%s': out of range", key);
	*out = (uint64_t)llround(d * scale);
	return 0;
}

static int string_array(json_t *a, const char *key, size_t max, const char ***out, size_t *n,
			struct al_error *err)
{
	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return al_fail(err, AL_EINVAL, 0, "field '%s': expected an array of strings", key);
	size_t len = json_array_size(a);
	if (len > max)
		return al_fail(err, AL_ELIMIT, 0, "field '%s': more than %zu items", key, max);
	const char **v = calloc(len + 1, sizeof(char *));
	if (!v)
		return al_fail(err, AL_ENOMEM, ENOMEM, "request");
	for (size_t i = 0; i < len; i++) {
		json_t *s = json_array_get(a, i);
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
			free(v);
			return al_fail(err, AL_EINVAL, 0,
				       "field '%s': item %zu is not a string without NUL", key, i);
		}
		v[i] = json_string_value(s);
	}
	*out = v;
	*n = len;
	return 0;
}

/* "K=V" into r->bufs */
static const char *kv(struct run_request *r, const char *k, const char *v)
{
	size_t n = strlen(k) + strlen(v) + 2;
	char *b = malloc(n);
	if (!b)
		return NULL;
	snprintf(b, n, "%s=%s", k, v);
	r->bufs[r->nbufs++] = b;
	return b;
}

void run_request_release(struct run_request *r)
{
	for (size_t i = 0; i < r->nbufs; i++) {
		explicit_bzero(r->bufs[i], strlen(r->bufs[i]));
		free(r->bufs[i]);
	}
	free(r->bufs);
	free(r->argv);
	free(r->env);
	free(r->secrets);
	free(r->secret_files);
	free(r->allow);
	free(r->integ);
	al_contract_free(r->contract);
	memset(r, 0, sizeof(*r));
}

int decode_run(json_t *body, struct run_request *r, struct al_error *err)
{
	static const char *const keys[] = { "argv",
					    "env",
					    "secrets",
					    "image",
					    "network",
					    "timeout",
					    "memory",
					    "pids",
					    "cpus",
					    "output_limit",
					    "disk_limit",
					    "files",
					    "group",
					    "wait",
					    "contract",
					    "backend",
					    "egress_connections",
					    "egress_bytes",
					    "integrations",
					    NULL };
	memset(r, 0, sizeof(*r));
	r->o.network = AL_NET_NONE;
	int rc = known_keys(body, keys, "run request", err);
	size_t n = 0;
	if (rc == 0)
		rc = string_array(json_object_get(body, "argv"), "argv", DECODE_ARGS_MAX, &r->argv,
				  &n, err);
	if (rc == 0 && (n == 0 || !r->argv[0][0]))
		rc = al_fail(err, AL_EINVAL, 0,
			     "field 'argv': expected the command, a non-empty array");
	json_t *env = json_object_get(body, "env"), *secrets = json_object_get(body, "secrets");
	if (rc == 0 && env && !json_is_object(env) && !json_is_null(env))
		rc = al_fail(err, AL_EINVAL, 0, "field 'env': expected an object of strings");
	if (rc == 0 && secrets && !json_is_array(secrets) && !json_is_null(secrets))
		rc = al_fail(err, AL_EINVAL, 0,
			     "field 'secrets': expected an array of {name, value, as}");
	size_t nenv = json_is_object(env) ? json_object_size(env) : 0;
	size_t nsec = json_is_array(secrets) ? json_array_size(secrets) : 0;
	if (rc == 0 && (nenv > 1024 || nsec > 1024))
		rc = al_fail(err, AL_ELIMIT, 0, "too many environment variables or secrets");
	if (rc == 0 && (!(r->bufs = calloc(nenv + nsec + 1, sizeof(char *))) ||
			!(r->env = calloc(nenv + 1, sizeof(char *))) ||
			!(r->secrets = calloc(nsec + 1, sizeof(char *))) ||
			!(r->secret_files = calloc(nsec + 1, sizeof(char *)))))
		rc = al_fail(err, AL_ENOMEM, ENOMEM, "request");
	const char *k;
	json_t *v;
	size_t ie = 0, is = 0, isf = 0;
	if (rc == 0)
		json_object_foreach(env, k, v) {
			if (rc == 0 && (!json_is_string(v) ||
					strlen(json_string_value(v)) != json_string_length(v) ||
					strlen(k) == 0 || strchr(k, '=')))
				rc = al_fail(err, AL_EINVAL, 0,
					     "field 'env': '%.64s' is not NAME: string", k);
			if (rc == 0 && !(r->env[ie++] = kv(r, k, json_string_value(v))))
				rc = al_fail(err, AL_ENOMEM, ENOMEM, "request");
		}
	for (size_t i = 0; rc == 0 && i < nsec; i++) {
		json_t *s = json_array_get(secrets, i);
		static const char *const skeys[] = { "name", "value", "as", NULL };
		const char *name, *value, *as;
		if (!json_is_object(s))
			rc = al_fail(err, AL_EINVAL, 0,
				     "field 'secrets': item %zu is not {name, value, as}", i);
		if (rc == 0)
			rc = known_keys(s, skeys, "secret", err);
		if (rc == 0)
			rc = get_string(s, "name", true, &name, err);
		if (rc == 0)
			rc = get_string(s, "value", true, &value, err);
		if (rc == 0)
			rc = get_string(s, "as", false, &as, err);
		if (rc == 0 && as && strcmp(as, "env") && strcmp(as, "file"))
			rc = al_fail(err, AL_EINVAL, 0, "secret %.64s: 'as' is env or file", name);
		if (rc == 0 && (!*name || strchr(name, '=')))
			rc = al_fail(err, AL_EINVAL, 0, "secret: bad name '%.64s'", name);
		const char *b = rc == 0 ? kv(r, name, value) : NULL;
		if (rc == 0 && !b)
			rc = al_fail(err, AL_ENOMEM, ENOMEM, "request");
		if (rc == 0 && as && !strcmp(as, "file"))
			r->secret_files[isf++] = b;
		else if (rc == 0)
			r->secrets[is++] = b;
	}
	const char *network = NULL;
	if (rc == 0)
		rc = get_string(body, "image", false, &r->o.image, err);
	if (rc == 0)
		rc = get_string(body, "group", false, &r->o.group, err);
	if (rc == 0 && r->o.group)
		rc = al_text_check("field 'group'", r->o.group, 16,
				   err); /* printed by audit: no Cc/Cf */
	/* "none" | "egress" | {"mode": "none"|"egress", "allow": [HOST[:PORT], ...]} */
	json_t *net = json_object_get(body, "network");
	if (rc == 0 && json_is_object(net)) {
		static const char *const nkeys[] = { "mode", "allow", NULL };
		size_t na = 0;
		json_t *mode = json_object_get(net, "mode");
		if ((rc = known_keys(net, nkeys, "field 'network'", err)) == 0 &&
		    !json_is_string(mode))
			rc = al_fail(err, AL_EINVAL, 0, "field 'network.mode': none or egress");
		if (rc == 0)
			rc = al_network_parse(json_string_value(mode), &r->o.network, err);
		if (rc == 0)
			rc = string_array(json_object_get(net, "allow"), "network.allow",
					  AL_NET_ALLOW_MAX, &r->allow, &na, err);
		if (rc == 0 && na && r->o.network != AL_NET_EGRESS)
			rc = al_fail(err, AL_EINVAL, 0,
				     "field 'network.allow': only with mode egress");
		for (size_t i = 0; rc == 0 && i < na; i++)
			rc = al_net_allow_check(r->allow[i], err);
		r->o.egress_allow = r->allow;
	} else if (rc == 0)
		rc = get_string(body, "network", false, &network, err);
	if (rc == 0 && network)
		rc = al_network_parse(network, &r->o.network, err);
	size_t ni = 0;
	if (rc == 0)
		rc = string_array(json_object_get(body, "integrations"), "integrations",
				  AL_INTEG_RUN_MAX, &r->integ, &ni, err);
	for (size_t i = 0; rc == 0 && i < ni; i++)
		rc = al_integ_name_check(r->integ[i], err);
	r->o.integrations = r->integ;
	if (rc == 0)
		rc = get_string(body, "backend", false, &r->o.backend, err);
	if (rc == 0 && r->o.backend && !al_sandbox_backend_known(r->o.backend))
		rc = al_fail(err, AL_EINVAL, 0, "field 'backend': ns or vm");
	/* a limit left out is the policy's default; 0 is never "none"; the
	 * ceilings are checked by the run (policy.h) */
	struct al_limits *l = &r->o.limits;
	static const struct {
		const char *key;
		double max, scale;
		size_t off;
	} lims[] = {
		{ "timeout", 1e7, 1000, offsetof(struct al_limits, timeout_ms) },
		{ "memory", 1e15, 1, offsetof(struct al_limits, memory) },
		{ "pids", 1 << 30, 1, offsetof(struct al_limits, pids) },
		{ "cpus", 4096, 1000, offsetof(struct al_limits, cpus_milli) },
		{ "output_limit", 1e15, 1, offsetof(struct al_limits, output) },
		{ "disk_limit", 1e15, 1, offsetof(struct al_limits, disk) },
		{ "files", 1e12, 1, offsetof(struct al_limits, files) },
		{ "egress_connections", 1 << 20, 1, offsetof(struct al_limits, connections) },
		{ "egress_bytes", 1e15, 1, offsetof(struct al_limits, egress_bytes) },
	};
	for (size_t i = 0; rc == 0 && i < sizeof(lims) / sizeof(lims[0]); i++) {
		uint64_t *lv = (uint64_t *)((char *)l + lims[i].off);
		rc = get_number(body, lims[i].key, lims[i].max, lims[i].scale, lv, err);
		if (rc == 0 && json_object_get(body, lims[i].key) &&
		    !json_is_null(json_object_get(body, lims[i].key)) && !*lv)
			rc = al_fail(err, AL_EINVAL, 0,
				     "field '%s': must be positive (leave it out for the default)",
				     lims[i].key);
	}
	json_t *ct = json_object_get(body, "contract");
	if (rc == 0 && ct && !json_is_null(ct) &&
	    (rc = al_contract_parse(ct, &r->contract, err)) == 0)
		r->o.contract = r->contract;
	json_t *w = json_object_get(body, "wait");
	if (rc == 0 && w && !json_is_boolean(w))
		rc = al_fail(err, AL_EINVAL, 0, "field 'wait': expected true or false");
	r->wait = json_is_true(w);
	if (rc < 0) {
		run_request_release(r);
		return rc;
	}
	r->o.argv = r->argv;
	r->o.env = r->env;
	r->o.secrets = r->secrets;
	r->o.secret_files = r->secret_files;
	return 0;
}

int decode_replay(json_t *body, struct run_request *r, struct al_error *err)
{
	static const char *const keys[] = { "on_head", "secrets", "wait", NULL };
	memset(r, 0, sizeof(*r));
	int rc = known_keys(body, keys, "replay request", err);
	json_t *secrets = json_object_get(body, "secrets");
	if (rc == 0 && secrets && !json_is_array(secrets) && !json_is_null(secrets))
		rc = al_fail(err, AL_EINVAL, 0,
			     "field 'secrets': expected an array of {name, value}");
	size_t nsec = json_is_array(secrets) ? json_array_size(secrets) : 0;
	if (rc == 0 && nsec > 1024)
		rc = al_fail(err, AL_ELIMIT, 0, "too many secrets");
	if (rc == 0 && (!(r->bufs = calloc(nsec + 1, sizeof(char *))) ||
			!(r->secrets = calloc(nsec + 1, sizeof(char *)))))
		rc = al_fail(err, AL_ENOMEM, ENOMEM, "request");
	for (size_t i = 0; rc == 0 && i < nsec; i++) {
		json_t *s = json_array_get(secrets, i);
		static const char *const skeys[] = { "name", "value", NULL };
		const char *name = NULL, *value;
		if (!json_is_object(s))
			rc = al_fail(err, AL_EINVAL, 0,
				     "field 'secrets': item %zu is not {name, value}", i);
		if (rc == 0)
			rc = known_keys(s, skeys, "secret", err);
		if (rc == 0)
			rc = get_string(s, "name", true, &name, err);
		if (rc == 0)
			rc = get_string(s, "value", true, &value, err);
		bool ok = rc == 0 && *name && !(name[0] >= '0' && name[0] <= '9');
		for (const char *q = name; ok && *q; q++)
			ok = *q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
			     (*q >= '0' && *q <= '9');
		if (rc == 0 && !ok)
			rc = al_fail(err, AL_EINVAL, 0,
				     "secret: bad name '%.64s' (expected [A-Za-z_][A-Za-z0-9_]*)",
				     name);
		for (size_t j = 0; rc == 0 && j < i; j++)
			if (!strncmp(r->secrets[j], name, strlen(name)) &&
			    r->secrets[j][strlen(name)] == '=')
				rc = al_fail(err, AL_EINVAL, 0, "secret %.64s is given twice",
					     name);
		if (rc == 0 && !(r->secrets[i] = kv(r, name, value)))
			rc = al_fail(err, AL_ENOMEM, ENOMEM, "request");
	}
	json_t *w = json_object_get(body, "wait"), *h = json_object_get(body, "on_head");
	if (rc == 0 && ((w && !json_is_boolean(w)) || (h && !json_is_boolean(h))))
		rc = al_fail(err, AL_EINVAL, 0,
			     "fields 'wait' and 'on_head': expected true or false");
	r->wait = json_is_true(w);
	r->on_head = json_is_true(h);
	if (rc < 0) {
		run_request_release(r);
		return rc;
	}
	r->o.secrets = r->secrets;
	return 0;
}

void apply_request_release(struct apply_request *r)
{
	free(r->paths);
	free(r->hunks);
	memset(r, 0, sizeof(*r));
}

/* One hunk list: a non-empty array of integers from 1 (NULL *n = 0 when
 * out is NULL: counting only). */
static int hunk_list(json_t *h, size_t item, unsigned *out, size_t *n, struct al_error *err)
{
	if (!json_is_array(h) || json_array_size(h) == 0)
		return al_fail(err, AL_EINVAL, 0,
			       "field 'paths': item %zu: 'hunks' is a non-empty array of hunk "
			       "numbers (leave it out for the whole change)",
			       item);
	size_t i;
	json_t *v;
	json_array_foreach(h, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > UINT32_MAX)
			return al_fail(err, AL_EINVAL, 0,
				       "field 'paths': item %zu: hunk %zu is not a hunk number (an "
				       "integer from 1)",
				       item, i);
		if (out)
			out[i] = (unsigned)json_integer_value(v);
	}
	*n = json_array_size(h);
	return 0;
}

/* paths: strings, or {"path": P[, "hunks": [N, ...]]} */
static int apply_paths(json_t *a, struct apply_request *r, struct al_error *err)
{
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return al_fail(err, AL_EINVAL, 0,
			       "field 'paths': expected an array of paths and {path, hunks}");
	size_t len = json_array_size(a), total = 0, i;
	if (len > DECODE_PATHS_MAX)
		return al_fail(err, AL_ELIMIT, 0, "field 'paths': more than %d items",
			       DECODE_PATHS_MAX);
	static const char *const keys[] = { "path", "hunks", NULL };
	json_t *v;
	json_array_foreach(a, i, v) { /* checked and counted before anything is kept */
		size_t n = 0;
		json_t *s = json_is_object(v) ? json_object_get(v, "path") : v;
		int rc = json_is_object(v) ? known_keys(v, keys, "field 'paths'", err) : 0;
		if (rc == 0 &&
		    (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)))
			rc = al_fail(err, AL_EINVAL, 0,
				     "field 'paths': item %zu is not a path (a string without NUL) "
				     "or {path, hunks}",
				     i);
		json_t *h = json_is_object(v) ? json_object_get(v, "hunks") : NULL;
		if (rc == 0 && h && (rc = hunk_list(h, i, NULL, &n, err)) == 0 &&
		    (total += n) > DECODE_HUNKS_MAX)
			rc = al_fail(err, AL_ELIMIT, 0, "field 'paths': more than %u hunk numbers",
				     DECODE_HUNKS_MAX);
		if (rc < 0)
			return rc;
	}
	if (!(r->paths = calloc(len + 1, sizeof(*r->paths))) ||
	    !(r->hunks = calloc(total + 1, sizeof(*r->hunks))))
		return al_fail(err, AL_ENOMEM, ENOMEM, "request");
	size_t at = 0;
	json_array_foreach(a, i, v) {
		struct al_apply_path *p = &r->paths[i];
		json_t *h = json_is_object(v) ? json_object_get(v, "hunks") : NULL;
		p->path = json_string_value(json_is_object(v) ? json_object_get(v, "path") : v);
		if (h) {
			p->hunks = r->hunks + at;
			hunk_list(h, i, r->hunks + at, &p->nhunks, err);
			at += p->nhunks;
		}
	}
	r->npaths = len;
	return 0;
}

int decode_apply(json_t *body, struct apply_request *r, struct al_error *err)
{
	static const char *const keys[] = { "mode", "paths", "strategy", "message", NULL };
	memset(r, 0, sizeof(*r));
	r->strategy = AL_REBASE_IF_DISJOINT;
	const char *mode = NULL, *strategy = NULL;
	int rc = known_keys(body, keys, "apply request", err);
	if (rc == 0)
		rc = get_string(body, "mode", true, &mode, err);
	if (rc == 0)
		rc = get_string(body, "strategy", false, &strategy, err);
	if (rc == 0 && strategy)
		rc = al_strategy_parse(strategy, &r->strategy, err);
	if (rc == 0)
		rc = get_string(body, "message", false, &r->message, err);
	if (rc == 0)
		rc = apply_paths(json_object_get(body, "paths"), r, err);
	if (rc == 0) {
		if (!strcmp(mode, "accept_all"))
			r->mode = AL_ACCEPT_ALL;
		else if (!strcmp(mode, "accept_selected"))
			r->mode = AL_ACCEPT_SELECTED;
		else if (!strcmp(mode, "reject_all"))
			r->mode = AL_REJECT_ALL;
		else
			rc = al_fail(err, AL_EINVAL, 0,
				     "field 'mode': accept_all, accept_selected or reject_all");
	}
	if (rc == 0 && (r->mode == AL_ACCEPT_SELECTED) != (r->npaths > 0))
		rc = al_fail(err, AL_EINVAL, 0,
			     "field 'paths': required by accept_selected, and only by it");
	if (rc < 0)
		apply_request_release(r);
	return rc;
}

void principal_request_release(struct principal_request *r)
{
	free(r->projects);
	memset(r, 0, sizeof(*r));
}

int decode_principal(json_t *body, struct principal_request *r, struct al_error *err)
{
	static const char *const keys[] = { "name", "roles", "projects", NULL };
	memset(r, 0, sizeof(*r));
	const char **roles = NULL;
	size_t nroles = 0;
	int rc = known_keys(body, keys, "principal", err);
	if (rc == 0)
		rc = get_string(body, "name", true, &r->name, err);
	if (rc == 0)
		rc = al_principal_name_check(r->name, err);
	if (rc == 0)
		rc = string_array(json_object_get(body, "roles"), "roles", 8, &roles, &nroles, err);
	for (size_t i = 0; rc == 0 && i < nroles; i++) {
		unsigned bit;
		if ((rc = al_roles_parse(roles[i], &bit, err)) == 0)
			r->roles |= bit;
	}
	free(roles);
	if (rc == 0 && !r->roles)
		rc = al_fail(err, AL_EINVAL, 0,
			     "field 'roles': at least one of admin, author, reviewer, agent");
	if (rc == 0)
		rc = string_array(json_object_get(body, "projects"), "projects", 1024, &r->projects,
				  &r->nprojects, err);
	for (size_t i = 0; rc == 0 && i < r->nprojects; i++)
		rc = al_project_name_check(r->projects[i], err);
	if (rc < 0)
		principal_request_release(r);
	return rc;
}

int decode_token(json_t *body, int64_t *ttl, struct al_error *err)
{
	static const char *const keys[] = { "ttl", NULL };
	uint64_t v = 0;
	int rc = known_keys(body, keys, "token request", err);
	if (rc == 0)
		rc = get_number(body, "ttl", 100.0 * 365 * 86400, 1, &v, err);
	*ttl = (int64_t)v;
	return rc;
}

int decode_project(json_t *body, const char **name, struct al_error *err)
{
	static const char *const keys[] = { "name", NULL };
	int rc = known_keys(body, keys, "project", err);
	if (rc == 0)
		rc = get_string(body, "name", true, name, err);
	if (rc == 0)
		rc = al_project_name_check(*name, err);
	return rc;
}

int decode_integration(json_t *body, struct al_integ_spec *s, struct al_error *err)
{
	static const char *const keys[] = { "name",   "base_url",    "header",   "secret",
					    "ca_pem", "keep_bodies", "insecure", NULL };
	memset(s, 0, sizeof(*s));
	json_t *kb = json_object_get(body, "keep_bodies"), *in = json_object_get(body, "insecure");
	int rc = known_keys(body, keys, "integration", err);
	if (rc == 0)
		rc = get_string(body, "name", true, &s->name, err);
	if (rc == 0)
		rc = get_string(body, "base_url", true, &s->base_url, err);
	if (rc == 0)
		rc = get_string(body, "header", true, &s->header, err);
	if (rc == 0)
		rc = get_string(body, "secret", true, &s->secret, err);
	if (rc == 0)
		rc = get_string(body, "ca_pem", false, &s->ca_pem, err);
	if (rc == 0 && ((kb && !json_is_boolean(kb)) || (in && !json_is_boolean(in))))
		rc = al_fail(err, AL_EINVAL, 0,
			     "fields 'keep_bodies' and 'insecure': expected true or false");
	s->keep_bodies = json_is_true(kb);
	s->insecure = json_is_true(in);
	/* http:// to the server's own loopback is a local home's test aid: a
	 * tenant's admin does not get to aim the daemon at its host's services */
	if (rc == 0 && s->insecure)
		rc = al_fail(err, AL_EINVAL, 0,
			     "integration: 'insecure' (http:// to a loopback address) is for a "
			     "local home only, not over the API");
	if (rc == 0)
		rc = al_integ_check(s, err);
	return rc;
}

int decode_integration_secret(json_t *body, const char **header, const char **secret,
			      struct al_error *err)
{
	static const char *const keys[] = { "secret", "header", NULL };
	int rc = known_keys(body, keys, "integration secret", err);
	if (rc == 0)
		rc = get_string(body, "secret", true, secret, err);
	if (rc == 0)
		rc = get_string(body, "header", false, header, err);
	if (rc == 0 && *header)
		rc = al_integ_header_check(*header, err);
	return rc;
}

int decode_integration_grant(json_t *body, const char **project, const char **principal,
			     struct al_error *err)
{
	static const char *const keys[] = { "project", "principal", NULL };
	int rc = known_keys(body, keys, "integration grant", err);
	if (rc == 0)
		rc = get_string(body, "project", false, project, err);
	if (rc == 0)
		rc = get_string(body, "principal", false, principal, err);
	if (rc == 0 && !*project == !*principal)
		rc = al_fail(err, AL_EINVAL, 0,
			     "integration grant: exactly one of 'project' and 'principal'");
	if (rc == 0)
		rc = *project ? al_project_name_check(*project, err)
			      : al_principal_name_check(*principal, err);
	return rc;
}
