/* airlock project create|list|head|log, airlock commit */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/contract.h"
#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

static int proj_create(struct cli *cli, int argc, char **argv)
{
	const char *from, *author;
	int rc = cli_create_opts(
		cli, argc, argv,
		"usage: airlock project create NAME [--from DIR] [--author A] [--json]\n\n"
		"Create a project (names: [A-Za-z0-9][A-Za-z0-9._-]{0,63}) whose live head is\n"
		"DIR imported as a snapshot, or the empty tree; print the head snapshot id.\n",
		&from, &author);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	json_t *doc = NULL;
	if (cli->server && from) {
		/* one request: the project and its head, or nothing (docs/api.md) */
		char path[512], esc[200];
		snprintf(path, sizeof(path), "/projects/%s",
			 cli_path_escape(argv[optind], esc, sizeof(esc)));
		if (cli_http_tree(cli, path, from, &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
		json_object_del(doc, "tree");
	} else if (cli->server) {
		json_t *body = json_pack("{s:s}", "name", argv[optind]);
		int r = cli_http(cli, "POST", "/projects", body, NULL, NULL, &doc, &err);
		json_decref(body);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_store *st = NULL;
		if (cli_open(cli, &st, &err) < 0)
			return cli_error(cli, &err);
		struct al_oid snap;
		struct al_project_info p;
		int r = al_project_name_check(argv[optind], &err);
		if (r == 0 && from)
			r = cli_import(st, from, &snap, &err);
		if (r == 0)
			r = al_project_create(st, argv[optind], from ? &snap : NULL,
					      cli_author(author), &p, &err);
		al_store_close(st);
		if (r < 0)
			return cli_error(cli, &err);
		doc = view_project(&p);
	}
	if (cli->json)
		return cli_json_print(doc);
	printf("%s\n", json_string_value(json_object_get(doc, "head")));
	json_decref(doc);
	return 0;
}

static const char *jstr(json_t *o, const char *k)
{
	return cli_esc(json_string_value(json_object_get(o, k)), "");
}

static void project_text(json_t *p)
{
	printf("%s %s %lld\n", jstr(p, "name"),
	       cli_id_text(json_string_value(json_object_get(p, "head"))),
	       (long long)json_integer_value(json_object_get(p, "commits")));
}

static int run_list(struct al_store *st, const char *arg, json_t *arr, struct al_error *err)
{
	(void)arg;
	return view_projects(st, arr, err);
}

static int proj_list(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv,
			"usage: airlock project list [--json]\n\nOne line per project: name head "
			"commits.\n",
			0, "/projects", run_list, project_text);
}

static int head_local(struct al_store *st, const void *name, json_t **out, struct al_error *err)
{
	struct al_project_info p;
	int r = al_project_get(st, name, &p, err);
	if (r == 0)
		*out = view_project(&p);
	return r;
}

static int proj_head(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock project head NAME [--json]\n\nPrint the live head snapshot id.\n",
		1);
	if (rc >= 0)
		return rc;
	json_t *o;
	char path[256], esc[200];
	snprintf(path, sizeof(path), "/projects/%s",
		 cli_path_escape(argv[optind], esc, sizeof(esc)));
	if ((rc = cli_fetch(cli, path, head_local, argv[optind], &o)) >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(o);
	printf("%s\n", jstr(o, "head"));
	json_decref(o);
	return 0;
}

static void log_text(json_t *c)
{
	const char *draft = json_string_value(json_object_get(c, "draft"));
	printf("%lld %s %s %s %s%s%s: %s\n",
	       (long long)json_integer_value(json_object_get(c, "seq")),
	       cli_id_text(json_string_value(json_object_get(c, "result"))), jstr(c, "kind"),
	       jstr(c, "strategy"), jstr(c, "author"), draft ? " draft " : "",
	       draft ? cli_id_text(draft) : "", jstr(c, "message"));
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(c, "conflicts"), i, k) {
		const char *copy = json_string_value(json_object_get(k, "copy_path"));
		printf("    conflict %s -> %s\n", jstr(k, "path"), copy ? copy : "(ours kept)");
	}
}

static int log_list(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return view_log(st, project, arr, err);
}

static int proj_log(struct cli *cli, int argc, char **argv)
{
	cli->page = true;
	return cli_list(
		cli, argc, argv,
		"usage: airlock project log NAME [--json]\n\n"
		"The live volume's commits, oldest first: seq result kind strategy author\n"
		"[draft D]: message, then one line per conflict it recorded. On a terminal\n"
		"the list goes through the pager ($AIRLOCK_PAGER, $PAGER or less -FRX).\n",
		1, "/projects/%s/log", log_list, log_text);
}

static const char contract_help[] =
	"usage: airlock project contract NAME [--set FILE | --unset] [--author A] [--json]\n\n"
	"Show the project's default run contract (docs/formats.md, \"Contracts\"), or\n"
	"replace it with FILE (--set), or remove it (--unset).  Every run on the\n"
	"project is checked against it as well as against its own --contract; a\n"
	"run's contract cannot weaken it.  A bad contract is refused (exit 6,\n"
	"nothing changed).  Authors and admins change it; each change is recorded\n"
	"in the ledger (project_contract: before, after).\n"
	"--json: {\"project\", \"contract\": {…} or null}.\n";

static int contract_doc(struct al_store *st, const char *project, json_t **out,
			struct al_error *err)
{
	json_t *c = NULL;
	int r = al_project_contract_get(st, project, &c, err);
	if (r == 0 &&
	    !(*out = json_pack("{s:s,s:o}", "project", project, "contract", c ? c : json_null())))
		r = al_fail(err, AL_ENOMEM, 0, "contract");
	return r;
}

static int proj_contract(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "set", required_argument, NULL, 's' },    { "unset", no_argument, NULL, 'u' },
		{ "author", required_argument, NULL, 'a' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { 0 }
	};
	const char *set = NULL, *author = NULL;
	bool unset = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': set = optarg; break;
		case 'u': unset = true; break;
		case 'a': author = optarg; break;
		case 'j': cli->json = true; break;
		case 'h': printf("%s", contract_help); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage(cli, optind < argc ? "unexpected argument"
						    : "expected the project name");
	if (set && unset)
		return cli_usage(cli, "--set and --unset exclude each other");
	const char *name = argv[optind];
	struct al_error err = { 0 };
	json_t *contract = NULL, *doc = NULL;
	if (set) {
		_cleanup_free_ char *text = NULL;
		size_t n = 0;
		struct al_contract *parsed = NULL;
		int r = cli_read_small(set, AL_CONTRACT_MAX, &text, &n, &err);
		if (r == 0)
			r = al_contract_parse_text(text, n, &parsed, &err);
		if (r == 0)
			contract = json_incref((json_t *)al_contract_json(parsed));
		al_contract_free(parsed);
		if (r < 0)
			return cli_error(cli, &err);
	}
	int r;
	if (cli->server) {
		char path[256], esc[200];
		snprintf(path, sizeof(path), "/projects/%s/contract",
			 cli_path_escape(name, esc, sizeof(esc)));
		r = cli_http(cli,
			     set     ? "PUT"
			     : unset ? "DELETE"
				     : "GET",
			     path, contract, NULL, NULL, &doc, &err);
		json_decref(contract);
		if (r < 0)
			return cli_remote_error(cli, &err, doc);
	} else {
		struct al_store *st = NULL;
		r = cli_open(cli, &st, &err);
		if (r == 0 && (set || unset))
			r = al_project_contract_set(st, name, contract, cli_author(author), &err);
		if (r == 0)
			r = contract_doc(st, name, &doc, &err);
		json_decref(contract);
		al_store_close(st);
		if (r < 0)
			return cli_error(cli, &err);
	}
	if (cli->json)
		return cli_json_print(doc);
	json_t *ct = json_object_get(doc, "contract");
	if (json_is_null(ct) || !ct)
		printf("project %s has no contract\n", name);
	else {
		_cleanup_free_ char *t = json_dumps(ct, JSON_INDENT(2) | JSON_SORT_KEYS);
		for (char *l = t, *e; l && *l; l = e ? e + 1 : NULL) {
			if ((e = strchr(l, '\n')))
				*e = 0;
			printf("%s\n", cli_esc(l, ""));
		}
	}
	json_decref(doc);
	return 0;
}

int cmd_project(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", proj_create, "create a project; print its head" },
		{ "list", proj_list, "list projects" },
		{ "head", proj_head, "print a project's live head" },
		{ "log", proj_log, "a project's commits, with conflicts" },
		{ "contract", proj_contract, "show or change the project's run contract" },
		{ 0 },
	};
	return cli_dispatch(cli, "project", cmds, argc - 1, argv + 1);
}

int cmd_commit(struct cli *cli, int argc, char **argv)
{
	struct cli_commit_flags f = { .strategy = AL_STRICT, .message = "" };
	int rc = cli_commit_opts(
		cli, argc, argv,
		"usage: airlock commit NAME DIR --base ID [--strategy "
		"strict|rebase_if_disjoint|conflict_copy]\n"
		"                      [-m MSG] [--author A] [--json]\n\n"
		"Import DIR and commit it to project NAME as the change from snapshot ID.\n"
		"If the head is no longer ID: strict (default) fails with exit 5 naming the\n"
		"head and the overlapping paths; rebase_if_disjoint replays the change when\n"
		"it touches nothing the head changed; conflict_copy commits what is disjoint\n"
		"and lands each overlapping incoming version beside ours. Prints the new head.\n",
		2, &f);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	if (cli->server) {
		char path[1536], esc[200], mesc[1024];
		json_t *doc = NULL;
		snprintf(path, sizeof(path), "/projects/%s/commits?base=%s&strategy=%s&message=%s",
			 cli_path_escape(argv[optind], esc, sizeof(esc)), f.base,
			 al_strategy_name(f.strategy),
			 cli_path_escape(f.message, mesc, sizeof(mesc)));
		if (cli_http_tree(cli, path, argv[optind + 1], &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
		json_object_del(doc, "tree");
		return cli_commit_print(cli, doc);
	}
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_oid snap;
	struct al_commit_result res = { 0 };
	struct al_commit_opts o = { .strategy = f.strategy,
				    .author = f.author,
				    .message = f.message };
	struct al_project_info p;
	int r = al_project_get(st, argv[optind], &p, &err);
	if (r == 0)
		r = cli_import(st, argv[optind + 1], &snap, &err);
	if (r == 0)
		r = al_project_commit(st, argv[optind], &f.base_id, &snap, &o, &res, &err);
	al_store_close(st);
	rc = cli_commit_report(cli, r, &res, &err, NULL);
	al_commit_result_release(&res);
	return rc;
}
