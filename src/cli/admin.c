/* airlock admin: bootstrap and manage tenants, principals, grants and
 * tokens.  On a local home it works on the home's directory (airlock.db);
 * with --server the principal and token verbs go through the API as the
 * token's admin (tenants are created locally only). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "airlock/auth.h"
#include "airlock/cas.h"
#include "airlock/pg.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

static int open_auth(struct cli *cli, struct al_auth **a)
{
	struct al_error err = { 0 };
	return al_auth_open(cli->home, a, &err) < 0 ? cli_error(cli, &err) : 0;
}

static int tenant_create(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock admin tenant create NAME [--json]\n\n"
		"Create a tenant (names: [a-z0-9][a-z0-9_-]{0,62}) in the local home: its own\n"
		"store, metadata and ledger, sharing nothing with the others.\n",
		1);
	if (rc >= 0)
		return rc;
	if (cli->server)
		return cli_local_only(cli);
	struct al_error err = { 0 };
	if (al_home_tenant_create(cli->home, argv[optind], cli_author(NULL), &err) < 0)
		return cli_error(cli, &err);
	if (cli->json)
		return cli_json_print(json_pack("{s:s}", "tenant", argv[optind]));
	printf("%s\n", argv[optind]);
	return 0;
}

static void principal_text(json_t *p)
{
	char roles[64] = "", projects[1024] = "";
	size_t i, n = 0;
	json_t *v;
	json_array_foreach(json_object_get(p, "roles"), i, v)
		n += (size_t)snprintf(roles + n, sizeof(roles) > n ? sizeof(roles) - n : 0, "%s%s",
				      i ? "," : "", json_string_value(v));
	n = 0;
	json_array_foreach(json_object_get(p, "projects"), i, v)
		n += (size_t)snprintf(projects + n, sizeof(projects) > n ? sizeof(projects) - n : 0,
				      "%s%s", i ? "," : "", json_string_value(v));
	printf("%s %s %s\n", cli_esc(json_string_value(json_object_get(p, "name")), "-"),
	       cli_esc(roles, "-"), n ? cli_esc(projects, "-") : "-");
}

static int principal_create(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "role", required_argument, NULL, 'r' },
		{ "project", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned roles = 0;
	const char **projects = calloc((size_t)argc + 1, sizeof(char *));
	size_t np = 0;
	struct al_error err = { 0 };
	int c, rc = -1;
	optind = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		unsigned bits;
		switch (c) {
		case 'r':
			if (al_roles_parse(optarg, &bits, &err) < 0)
				rc = cli_usage(cli, "%s", err.msg);
			else
				roles |= bits;
			break;
		case 'p': projects[np++] = optarg; break;
		case 'j': cli->json = true; break;
		case 'h':
			printf("usage: airlock admin principal create NAME --role "
			       "admin|author|reviewer|agent[,...]\n"
			       "                                     [--project P]... [--json]\n\n"
			       "Create a principal (a user or an agent) of the tenant with its "
			       "roles;\n"
			       "--project grants a project (an agent starts runs only on granted "
			       "ones).\n"
			       "Then give it a token: airlock admin token create NAME.\n");
			rc = 0;
			break;
		default: rc = cli_usage(cli, "bad option"); break;
		}
	}
	if (rc < 0 && argc - optind != 1)
		rc = cli_usage(cli, "expected the principal's name");
	if (rc < 0 && !roles)
		rc = cli_usage(cli, "--role is required (admin, author, reviewer, agent)");
	for (size_t i = 0; rc < 0 && i < np; i++)
		if (al_project_name_check(projects[i], &err) < 0)
			rc = cli_error(cli, &err);
	if (rc >= 0) {
		free(projects);
		return rc;
	}
	json_t *doc = NULL;
	if (cli->server) {
		static const char *const names[] = { "admin", "author", "reviewer", "agent" };
		json_t *body = json_pack("{s:s}", "name", argv[optind]), *rl = json_array(),
		       *pl = json_array();
		for (size_t i = 0; i < 4; i++)
			if (roles & (1u << i))
				json_array_append_new(rl, json_string(names[i]));
		for (size_t i = 0; i < np; i++)
			json_array_append_new(pl, json_string(projects[i]));
		json_object_set_new(body, "roles", rl);
		json_object_set_new(body, "projects", pl);
		int r = cli_http(cli, "POST", "/principals", body, NULL, NULL, &doc, &err);
		json_decref(body);
		free(projects);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_auth *a = NULL;
		const char *tenant = cli->tenant;
		if ((rc = open_auth(cli, &a))) {
			free(projects);
			return rc;
		}
		struct al_principal p;
		int r = al_auth_principal_create(a, tenant, argv[optind], roles, cli_author(NULL),
						 &err);
		for (size_t i = 0; r == 0 && i < np; i++)
			r = al_auth_grant(a, tenant, argv[optind], projects[i], cli_author(NULL),
					  &err);
		if (r == 0)
			r = al_auth_principal_get(a, tenant, argv[optind], &p, &err);
		if (r == 0)
			doc = view_principal(a, &p);
		al_auth_close(a);
		free(projects);
		if (r < 0)
			return cli_error(cli, &err);
	}
	if (cli->json)
		return cli_json_print(doc);
	principal_text(doc);
	json_decref(doc);
	return 0;
}

struct plist {
	struct al_auth *a;
	json_t *arr;
};

static int principal_one(void *ctx, const struct al_principal *p, struct al_error *err)
{
	(void)err;
	struct plist *l = ctx;
	json_array_append_new(l->arr, view_principal(l->a, p));
	return 0;
}

/* An admin listing: GET remote from the server, or collect(a, tenant, arr)
 * on the local directory; then the array or a text line per item. */
typedef int (*admin_collect_fn)(struct al_auth *a, const char *tenant, json_t *arr,
				struct al_error *err);
static int admin_list(struct cli *cli, int argc, char **argv, const char *help, const char *remote,
		      admin_collect_fn collect, cli_text_fn text)
{
	int rc = cli_simple_opts(cli, argc, argv, help, 0);
	if (rc >= 0)
		return rc;
	json_t *arr = NULL;
	if (cli->server) {
		if ((rc = cli_remote_get(cli, remote, &arr)) >= 0)
			return rc;
		return cli_print_list(cli, arr, text);
	}
	struct al_auth *a = NULL;
	struct al_error err = { 0 };
	if ((rc = open_auth(cli, &a)))
		return rc;
	arr = json_array();
	int r = collect(a, cli->tenant, arr, &err);
	al_auth_close(a);
	if (r < 0) {
		json_decref(arr);
		return cli_error(cli, &err);
	}
	return cli_print_list(cli, arr, text);
}

static int collect_principals(struct al_auth *a, const char *tenant, json_t *arr,
			      struct al_error *err)
{
	struct plist l = { a, arr };
	return al_auth_principal_foreach(a, tenant, principal_one, &l, err);
}

static int principal_list(struct cli *cli, int argc, char **argv)
{
	return admin_list(cli, argc, argv,
			  "usage: airlock admin principal list [--json]\n\n"
			  "The tenant's principals: name roles granted-projects.\n",
			  "/principals", collect_principals, principal_text);
}

static int grant(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock admin grant PRINCIPAL PROJECT [--json]\n\n"
		"Grant a project to a principal (agents start runs only on granted projects).\n",
		2);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	if (al_project_name_check(argv[optind + 1], &err) < 0)
		return cli_error(cli, &err);
	json_t *doc = NULL;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/principals/%s/grants",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		json_t *body = json_pack("{s:s}", "name", argv[optind + 1]);
		int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
		json_decref(body);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_auth *a = NULL;
		if ((rc = open_auth(cli, &a)))
			return rc;
		struct al_principal p;
		int r = al_auth_grant(a, cli->tenant, argv[optind], argv[optind + 1],
				      cli_author(NULL), &err);
		if (r == 0)
			r = al_auth_principal_get(a, cli->tenant, argv[optind], &p, &err);
		if (r == 0)
			doc = view_principal(a, &p);
		al_auth_close(a);
		if (r < 0)
			return cli_error(cli, &err);
	}
	if (cli->json)
		return cli_json_print(doc);
	principal_text(doc);
	json_decref(doc);
	return 0;
}

/* 90, 90s, 15m, 12h, 30d: whole seconds, at most 100 years */
static int parse_duration(const char *s, int64_t *out)
{
	uint64_t ms;
	if (al_parse_duration(s, 100ull * 365 * 86400 * 1000, &ms, NULL) < 0)
		return -1;
	*out = (int64_t)((ms + 999) / 1000);
	return 0;
}

static int token_create(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ttl", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int64_t ttl = 0;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_duration(optarg, &ttl) < 0)
				return cli_usage(
					cli,
					"bad --ttl '%s' (seconds, or N followed by s, m, h or d)",
					optarg);
			break;
		case 'j': cli->json = true; break;
		case 'h':
			printf("usage: airlock admin token create PRINCIPAL [--ttl DURATION] "
			       "[--json]\n\n"
			       "A new bearer token for PRINCIPAL, printed once on stdout (only its "
			       "hash is\n"
			       "kept); its id (for revoke) goes to stderr. --ttl: it expires "
			       "after\n"
			       "DURATION (seconds, or 30m, 12h, 90d; default: never). Use it as\n"
			       "AIRLOCK_TOKEN with --server, or 'Authorization: Bearer TOKEN'.\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected the principal's name");
	struct al_error err = { 0 };
	json_t *doc = NULL;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/principals/%s/tokens",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		json_t *body = json_pack("{s:I}", "ttl", (json_int_t)ttl);
		int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
		json_decref(body);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_auth *a = NULL;
		int rc = open_auth(cli, &a);
		if (rc)
			return rc;
		char token[AL_TOKEN_LEN + 1];
		struct al_token_info t;
		int r = al_auth_token_create(a, cli->tenant, argv[optind], ttl, token, &t,
					     cli_author(NULL), &err);
		al_auth_close(a);
		if (r < 0)
			return cli_error(cli, &err);
		doc = view_token(&t);
		json_object_set_new(doc, "token", json_string(token));
		OPENSSL_cleanse(token, sizeof(token));
	}
	if (cli->json)
		return cli_json_print(doc);
	printf("%s\n", json_string_value(json_object_get(doc, "token")));
	json_t *exp = json_object_get(doc, "expires");
	char until[48] = ", no expiry";
	if (json_is_integer(exp))
		snprintf(until, sizeof(until), ", expires at unix time %lld",
			 (long long)json_integer_value(exp));
	fprintf(stderr, "%s: token %s for %s%s\n", cli->prog,
		json_string_value(json_object_get(doc, "id")),
		json_string_value(json_object_get(doc, "principal")), until);
	json_decref(doc);
	return 0;
}

static int token_revoke(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock admin token revoke ID [--json]\n\n"
		"Revoke a token by its id (airlock admin token list): every later request\n"
		"with it is refused (401).\n",
		1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	json_t *doc = NULL;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/tokens/%s",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		if (cli_http(cli, "DELETE", path, NULL, NULL, NULL, &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_auth *a = NULL;
		if ((rc = open_auth(cli, &a)))
			return rc;
		int r = al_auth_token_revoke(a, cli->tenant, argv[optind], cli_author(NULL), &err);
		al_auth_close(a);
		if (r < 0)
			return cli_error(cli, &err);
		doc = json_pack("{s:s,s:b}", "id", argv[optind], "revoked", 1);
	}
	if (cli->json)
		return cli_json_print(doc);
	json_decref(doc);
	printf("revoked %s\n", argv[optind]);
	return 0;
}

static void token_text(json_t *t)
{
	json_t *exp = json_object_get(t, "expires");
	char e[32] = "never";
	if (json_is_integer(exp))
		snprintf(e, sizeof(e), "%lld", (long long)json_integer_value(exp));
	printf("%s %s %s%s\n", cli_esc(json_string_value(json_object_get(t, "id")), "-"),
	       cli_esc(json_string_value(json_object_get(t, "principal")), "-"), e,
	       json_is_true(json_object_get(t, "revoked")) ? " revoked" : "");
}

static int token_one(void *ctx, const struct al_token_info *t, struct al_error *err)
{
	(void)err;
	json_array_append_new(ctx, view_token(t));
	return 0;
}

static int collect_tokens(struct al_auth *a, const char *tenant, json_t *arr, struct al_error *err)
{
	return al_auth_token_foreach(a, tenant, NULL, token_one, arr, err);
}

static int token_list(struct cli *cli, int argc, char **argv)
{
	return admin_list(
		cli, argc, argv,
		"usage: airlock admin token list [--json]\n\n"
		"The tenant's tokens (never their text): id principal expires [revoked].\n",
		"/tokens", collect_tokens, token_text);
}

static int cmd_tenant(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", tenant_create, "create a tenant" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin tenant", cmds, argc - 1, argv + 1);
}

static int cmd_principal(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", principal_create, "create a principal with roles (and grants)" },
		{ "list", principal_list, "list the tenant's principals" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin principal", cmds, argc - 1, argv + 1);
}

static int cmd_token(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", token_create, "a new token for a principal (shown once)" },
		{ "revoke", token_revoke, "revoke a token by id" },
		{ "list", token_list, "list the tenant's tokens" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin token", cmds, argc - 1, argv + 1);
}

static int metadata_migrate(struct cli *cli, int argc, char **argv)
{
	static const char help[] =
		"usage: airlock --metadata postgres://OWNER@HOST/DB admin metadata migrate\n"
		"                --service-role ROLE [--json]\n\n"
		"Create or upgrade airlock's schema in a PostgreSQL database (versioned\n"
		"migrations, each in its own transaction), as OWNER, who owns it; grant ROLE,\n"
		"the role the service connects as, rows only.  ROLE must exist and must not\n"
		"be a superuser, have BYPASSRLS or own anything: row-level security is what\n"
		"keeps tenants apart (docs/operations.md, \"Metadata on PostgreSQL\").\n"
		"Prints: schema FROM -> TO.\n";
	static const struct option opts[] = {
		{ "service-role", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *role = NULL;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r': role = optarg; break;
		case 'j': cli->json = true; break;
		case 'h': fputs(help, stdout); return 0;
		default: fputs(help, stderr); return 2;
		}
	}
	if (optind != argc || !role)
		return cli_usage(cli, "expected --service-role ROLE (see --help)");
	if (!cli->metadata || !*cli->metadata)
		return cli_usage(cli, "which database? pass --metadata postgres://… (or set "
				      "AIRLOCK_METADATA)");
	struct al_error err = { 0 };
	int from = 0, to = 0;
	if (al_pg_migrate(cli->metadata, role, &from, &to, &err) < 0)
		return cli_error(cli, &err);
	if (cli->json)
		return cli_json_print(json_pack("{s:i,s:i}", "from", from, "to", to));
	printf("schema %d -> %d\n", from, to);
	return 0;
}

static int cmd_metadata(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "migrate", metadata_migrate, "create or upgrade the PostgreSQL schema" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin metadata", cmds, argc - 1, argv + 1);
}

static void sync_progress(void *ctx, uint64_t n, uint64_t bytes)
{
	struct cli_progress *p = ctx;
	uint64_t now = al_now_ns();
	if (!p->enabled || now - p->start_ns < p->delay_ns)
		return;
	p->shown = true;
	fprintf(stderr, "\rblobs sync: %llu objects, %.1f MiB uploaded   ", (unsigned long long)n,
		(double)bytes / 1048576.0);
}

static int blobs_sync(struct cli *cli, int argc, char **argv)
{
	static const char help[] =
		"usage: airlock --blobs s3://BUCKET[/PREFIX][?...] admin blobs sync [--json]\n\n"
		"Upload to the object store every object of the tenant's local store that the\n"
		"bucket lacks: what a home stored before --blobs was used.  Lists the bucket\n"
		"first, so it is idempotent and a run cut short resumes where it stopped.\n"
		"Prints: objects N, in the bucket already M, uploaded K (B bytes).\n";
	int r = cli_simple_opts(cli, argc, argv, help, 0);
	if (r >= 0)
		return r;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct cli_progress p;
	cli_progress_init(&p, "blobs sync", 0);
	struct al_cas_sync_stats s;
	r = al_cas_remote_sync(al_store_cas(st), sync_progress, &p, &s, &err);
	al_store_close(st);
	if (p.shown)
		fputc('\n', stderr);
	if (r < 0) {
		if (s.uploaded)
			al_error_prefix(&err, "after %llu objects uploaded: ",
					(unsigned long long)s.uploaded);
		return cli_error(cli, &err);
	}
	if (cli->json)
		return cli_json_print(json_pack(
			"{s:s,s:I,s:I,s:I,s:I}", "tenant", cli->tenant, "objects",
			(json_int_t)s.objects, "present", (json_int_t)s.present, "uploaded",
			(json_int_t)s.uploaded, "bytes", (json_int_t)s.bytes));
	printf("objects %llu, in the bucket already %llu, uploaded %llu (%llu bytes)\n",
	       (unsigned long long)s.objects, (unsigned long long)s.present,
	       (unsigned long long)s.uploaded, (unsigned long long)s.bytes);
	return 0;
}

static int cmd_blobs(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "sync", blobs_sync, "upload what the local store has and the bucket lacks" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin blobs", cmds, argc - 1, argv + 1);
}

int cmd_admin(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "tenant", cmd_tenant, "create tenants (local home)" },
		{ "principal", cmd_principal, "create and list principals" },
		{ "grant", grant, "grant a project to a principal" },
		{ "token", cmd_token, "create, revoke and list bearer tokens" },
		{ "policy", cmd_admin_policy, "run limits: defaults, ceilings, runs in flight" },
		{ "integration", cmd_admin_integration,
		  "credentials a run uses through airlock, never sees" },
		{ "metadata", cmd_metadata, "the PostgreSQL schema (--metadata)" },
		{ "blobs", cmd_blobs, "the object store (--blobs): upload what the home has" },
		{ 0 },
	};
	return cli_dispatch(cli, "admin", cmds, argc - 1, argv + 1);
}
