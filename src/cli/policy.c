/* airlock admin policy show|set: run limits' defaults and ceilings, for the
 * deployment (--deployment, the operator's, local only) or the tenant (the
 * tenant's admin; over --server the token's tenant).  policy.h. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/contract.h"
#include "airlock/net.h"
#include "airlock/policy.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

static const char show_help[] =
	"usage: airlock admin policy show [--deployment] [--json]\n\n"
	"The run policy: what a run gets for a limit it leaves out (defaults), the most\n"
	"it may ask for (ceilings), runs in flight per tenant and per principal, and\n"
	"whether limits this host cannot enforce are skipped (best effort).  Without\n"
	"--deployment: what applies to the tenant's runs ('effective') and what the\n"
	"tenant set ('tenant'); with it, the deployment's (local home only).\n";

static const char set_help[] =
	"usage: airlock admin policy set [--deployment] [--default-LIMIT V]... [--max-LIMIT V]...\n"
	"                                [--runs-per-tenant N] [--runs-per-principal N]\n"
	"                                [--best-effort-limits on|off]\n"
	"                                [--contract-on-violation record|drop|block_apply]\n"
	"                                [--backend ns|vm] [--backends ns,vm]\n"
	"                                [--egress-allow HOST[:PORT],...] [--json]\n\n"
	"Change the run policy of the tenant (its admin; recorded in its ledger) or,\n"
	"with --deployment, of the deployment (the operator, local home only).  LIMIT\n"
	"is memory, pids, cpus, timeout (seconds), output-limit, disk-limit, files,\n"
	"egress-connections or egress-bytes;\n"
	"sizes take K, M, G, T.  A tenant's ceilings may not exceed the deployment's,\n"
	"a default may not exceed its ceiling (exit 8, nothing changed).  Best effort\n"
	"(run even where a limit cannot be enforced; the record says which were) is\n"
	"the deployment's only.  --contract-on-violation is the least a run contract's\n"
	"violation does (record < drop < block_apply; a contract may ask for more); a\n"
	"tenant's may only be stricter than the deployment's.  --backend is the sandbox\n"
	"of a run that names none, --backends the ones a run may ask for (a tenant's\n"
	"are among the deployment's): --backend vm --backends vm makes every run a\n"
	"microVM.  --egress-allow is the destinations a run's --allow may name (each\n"
	"entry within one of these; a tenant's within the deployment's; '' for none,\n"
	"the built-in value).\n";

/* V as the JSON number of a limit: sizes with K/M/G/T, timeout a duration
 * (seconds, or 30s, 5m, 2h), the rest decimal; positive */
static int limit_value(const char *name, const char *s, json_t **out)
{
	bool size = !strcmp(name, "memory") || !strcmp(name, "output_limit") ||
		    !strcmp(name, "disk_limit") || !strcmp(name, "egress_bytes");
	double d;
	if (size) {
		uint64_t v;
		if (al_parse_size(s, (uint64_t)INT64_MAX, &v, NULL) < 0 || !v)
			return -1;
		*out = json_integer((json_int_t)v);
		return 0;
	}
	if (!strcmp(name, "timeout")) {
		uint64_t ms;
		if (al_parse_duration(s, UINT64_MAX, &ms, NULL) < 0)
			return -1;
		d = (double)ms / 1000;
	} else if (al_parse_decimal(s, 9e15, &d, NULL) < 0)
		return -1;
	if (d <= 0)
		return -1;
	*out = !strcmp(name, "cpus") || !strcmp(name, "timeout")
		       ? json_real(d)
		       : json_integer((json_int_t)llround(d));
	return 0;
}

static void limits_text(const char *title, json_t *o)
{
	const char *k;
	json_t *v;
	printf("%s:", title);
	json_object_foreach(o, k, v) {
		if (json_is_integer(v))
			printf(" %s=%lld", k, (long long)json_integer_value(v));
		else
			printf(" %s=%g", k, json_number_value(v));
	}
	printf("\n");
}

static void policy_text(const char *label, json_t *p)
{
	if (label)
		printf("[%s]\n", label);
	limits_text("defaults", json_object_get(p, "defaults"));
	limits_text("ceilings", json_object_get(p, "ceilings"));
	json_t *t = json_object_get(p, "runs_per_tenant"),
	       *pr = json_object_get(p, "runs_per_principal");
	if (t)
		printf("runs in flight per tenant: %lld\n", (long long)json_integer_value(t));
	if (pr)
		printf("runs in flight per principal: %lld\n", (long long)json_integer_value(pr));
	printf("best-effort limits: %s\n",
	       json_is_true(json_object_get(p, "best_effort_limits")) ? "on" : "off");
	json_t *cv = json_object_get(p, "contract_on_violation");
	if (cv)
		printf("contract violations at least: %s\n", json_string_value(cv));
	json_t *be = json_object_get(p, "backend"), *bs = json_object_get(p, "backends");
	if (be)
		printf("sandbox backend: %s\n", json_string_value(be));
	if (bs) {
		size_t i;
		json_t *b;
		printf("sandbox backends allowed:");
		json_array_foreach(bs, i, b)
			printf("%s %s", i ? "," : "", json_string_value(b));
		printf("\n");
	}
	json_t *eg = json_object_get(p, "egress_allow");
	if (eg) {
		size_t i;
		json_t *e;
		printf("egress allowed to:%s", json_array_size(eg) ? "" : " nothing");
		json_array_foreach(eg, i, e) {
			char q[4 * AL_NET_ENTRY_MAX];
			const char *s = json_string_value(e);
			al_quote(s, strlen(s), q, sizeof(q));
			printf("%s %s", i ? "," : "", q);
		}
		printf("\n");
	}
}

static json_t *policy_json(const struct al_policy *p)
{
	_cleanup_free_ char *s = al_policy_format(p);
	json_error_t je;
	return s ? json_loads(s, 0, &je) : NULL;
}

static int print_doc(struct cli *cli, json_t *doc, bool deployment)
{
	if (cli->json)
		return cli_json_print(doc);
	if (deployment)
		policy_text(NULL, doc);
	else {
		policy_text("effective", json_object_get(doc, "effective"));
		policy_text("set by the tenant", json_object_get(doc, "tenant"));
	}
	json_decref(doc);
	return 0;
}

static int local_doc(struct cli *cli, bool deployment, json_t **out, struct al_error *err)
{
	struct al_policy p, t;
	if (deployment) {
		struct al_policy stored;
		int r = al_policy_get(cli->home, NULL, &stored, err);
		if (r < 0)
			return r;
		al_policy_builtin(&p);
		/* the built-in values, then the stored ones */
		_cleanup_free_ char *s = al_policy_format(&stored);
		json_t *b = policy_json(&p), *o = NULL;
		json_error_t je;
		if (s && b && (o = json_loads(s, 0, &je))) {
			json_object_update(json_object_get(b, "defaults"),
					   json_object_get(o, "defaults"));
			json_object_update(json_object_get(b, "ceilings"),
					   json_object_get(o, "ceilings"));
			json_object_set(b, "best_effort_limits",
					json_object_get(o, "best_effort_limits"));
			const char *k[] = {
				"runs_per_tenant", "runs_per_principal", "contract_on_violation",
				"backend",         "backends",           "egress_allow"
			};
			for (int i = 0; i < 6; i++)
				if (json_object_get(o, k[i]))
					json_object_set(b, k[i], json_object_get(o, k[i]));
		}
		json_decref(o);
		*out = b;
		return b ? 0 : al_fail(err, AL_ENOMEM, 0, "policy");
	}
	struct al_store *st = NULL;
	int r = cli_open(cli, &st, err);
	if (r == 0)
		r = al_policy_effective(st, &p, err);
	if (r == 0)
		r = al_policy_get(NULL, st, &t, err);
	al_store_close(st);
	if (r == 0)
		*out = json_pack("{s:o,s:o}", "effective", policy_json(&p), "tenant",
				 policy_json(&t));
	return r;
}

static int policy_show(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "deployment", no_argument, NULL, 'd' },
					      { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	bool deployment = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'd')
			deployment = true;
		else if (c == 'j')
			cli->json = true;
		else if (c == 'h')
			return printf("%s", show_help), 0;
		else
			return cli_usage(cli, "bad option");
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (cli->server && deployment)
		return cli_local_only(cli);
	json_t *doc = NULL;
	if (cli->server) {
		int r = cli_remote_get(cli, "/policy", &doc);
		return r ? r : print_doc(cli, doc, false);
	}
	struct al_error err = { 0 };
	if (local_doc(cli, deployment, &doc, &err) < 0)
		return cli_error(cli, &err);
	return print_doc(cli, doc, deployment);
}

static const char *const limit_names[] = { "memory",       "pids",
					   "cpus",         "timeout",
					   "output-limit", "disk-limit",
					   "files",        "egress-connections",
					   "egress-bytes" };
#define NLIMITS 9

static int policy_set(struct cli *cli, int argc, char **argv)
{
	enum {
		O_DEP = 256,
		O_RPT,
		O_RPP,
		O_BE,
		O_CV,
		O_BACKEND,
		O_BACKENDS,
		O_EGRESS,
		O_JSON,
		O_DEF = 300,
		O_MAX = 400
	};
	struct option opts[2 * NLIMITS + 12]; /* the limits, 10 more, the terminator */
	char names[2 * NLIMITS][32];
	size_t n = 0;
	for (int i = 0; i < NLIMITS; i++)
		for (int m = 0; m < 2; m++) {
			snprintf(names[n], sizeof(names[n]), "%s-%s", m ? "max" : "default",
				 limit_names[i]);
			opts[n] = (struct option){ names[n], required_argument, NULL,
						   (m ? O_MAX : O_DEF) + i };
			n++;
		}
	opts[n++] = (struct option){ "deployment", no_argument, NULL, O_DEP };
	opts[n++] = (struct option){ "runs-per-tenant", required_argument, NULL, O_RPT };
	opts[n++] = (struct option){ "runs-per-principal", required_argument, NULL, O_RPP };
	opts[n++] = (struct option){ "best-effort-limits", required_argument, NULL, O_BE };
	opts[n++] = (struct option){ "contract-on-violation", required_argument, NULL, O_CV };
	opts[n++] = (struct option){ "backend", required_argument, NULL, O_BACKEND };
	opts[n++] = (struct option){ "backends", required_argument, NULL, O_BACKENDS };
	opts[n++] = (struct option){ "egress-allow", required_argument, NULL, O_EGRESS };
	opts[n++] = (struct option){ "json", no_argument, NULL, O_JSON };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ 0 };

	json_t *doc = json_pack("{s:{},s:{}}", "defaults", "ceilings");
	bool deployment = false, changed = false;
	int c, rc = -1;
	optind = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		json_t *v = NULL;
		if ((c >= O_DEF && c < O_DEF + NLIMITS) || (c >= O_MAX && c < O_MAX + NLIMITS)) {
			int i = c >= O_MAX ? c - O_MAX : c - O_DEF;
			char key[32];
			snprintf(key, sizeof(key), "%s", limit_names[i]);
			for (char *p = key; *p; p++)
				*p = *p == '-' ? '_' : *p;
			if (limit_value(key, optarg, &v) < 0) {
				rc = cli_usage(cli, "bad --%s-%s '%s' (a positive number)",
					       c >= O_MAX ? "max" : "default", limit_names[i],
					       optarg);
				break;
			}
			json_object_set_new(
				json_object_get(doc, c >= O_MAX ? "ceilings" : "defaults"), key, v);
			changed = true;
			continue;
		}
		switch (c) {
		case O_DEP: deployment = true; break;
		case O_RPT:
		case O_RPP: {
			uint64_t k;
			if (al_parse_count(optarg, 1 << 20, &k, NULL) < 0 || !k)
				rc = cli_usage(cli, "bad --%s '%s' (a positive whole number)",
					       c == O_RPT ? "runs-per-tenant"
							  : "runs-per-principal",
					       optarg);
			else
				json_object_set_new(
					doc, c == O_RPT ? "runs_per_tenant" : "runs_per_principal",
					json_integer((json_int_t)k));
			changed = true;
			break;
		}
		case O_BE:
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				rc = cli_usage(cli, "--best-effort-limits takes on or off");
			json_object_set_new(doc, "best_effort_limits",
					    json_boolean(!strcmp(optarg, "on")));
			changed = true;
			break;
		case O_CV: {
			enum al_contract_action a;
			if (al_contract_action_parse(optarg, &a))
				rc = cli_usage(cli, "--contract-on-violation takes record, drop or "
						    "block_apply");
			json_object_set_new(doc, "contract_on_violation", json_string(optarg));
			changed = true;
			break;
		}
		case O_BACKEND:
			if (!al_policy_backend_bit(optarg))
				rc = cli_usage(cli, "--backend takes ns or vm");
			json_object_set_new(doc, "backend", json_string(optarg));
			changed = true;
			break;
		case O_BACKENDS: {
			json_t *a = json_array();
			char buf[64];
			snprintf(buf, sizeof(buf), "%s", optarg);
			char *save = NULL;
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
				json_array_append_new(a, json_string(t));
			json_object_set_new(doc, "backends", a);
			changed = true;
			break;
		}
		case O_EGRESS: {
			/* comma-separated; "" is the empty list (no destination) */
			json_t *a = json_array();
			char buf[AL_NET_ALLOW_MAX * AL_NET_ENTRY_MAX];
			snprintf(buf, sizeof(buf), "%s", optarg);
			char *save = NULL;
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
				json_array_append_new(a, json_string(t));
			json_object_set_new(doc, "egress_allow", a);
			changed = true;
			break;
		}
		case O_JSON: cli->json = true; break;
		case 'h':
			printf("%s", set_help);
			rc = 0;
			break;
		default: rc = cli_usage(cli, "bad option"); break;
		}
	}
	if (rc < 0 && optind != argc)
		rc = cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (rc < 0 && !changed)
		rc = cli_usage(cli, "nothing to set (see --help)");
	if (rc < 0 && cli->server && deployment)
		rc = cli_local_only(cli);
	if (rc >= 0) {
		json_decref(doc);
		return rc;
	}
	if (cli->server) {
		json_t *out = NULL;
		struct al_error err = { 0 };
		int r = cli_http(cli, "PUT", "/policy", doc, NULL, NULL, &out, &err);
		json_decref(doc);
		if (r < 0)
			return cli_remote_error(cli, &err, out);
		return print_doc(cli, out, false);
	}
	struct al_error err = { 0 };
	_cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	struct al_policy p;
	bool has_be;
	int r = text ? al_policy_parse(text, strlen(text), &p, &has_be, &err)
		     : al_fail(&err, AL_ENOMEM, 0, "policy");
	struct al_store *st = NULL;
	if (r == 0 && !deployment)
		r = cli_open(cli, &st, &err);
	if (r == 0)
		r = al_policy_set(cli->home, st, &p, has_be, p.best_effort, cli_author(NULL), &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	json_t *shown = NULL;
	if (local_doc(cli, deployment, &shown, &err) < 0)
		return cli_error(cli, &err);
	return print_doc(cli, shown, deployment);
}

int cmd_admin_policy(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "show", policy_show, "the run policy (defaults, ceilings, runs in flight)" },
		{ "set", policy_set, "change the tenant's or the deployment's run policy" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin policy", cmds, argc - 1, argv + 1);
}
