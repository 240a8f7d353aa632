/* airlock project create|list|head|log, airlock commit */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/manifest.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "util.h"

const char *cli_author(const char *given)
{
	if (given && *given)
		return given;
	const char *e = getenv("AIRLOCK_AUTHOR");
	if (e && *e)
		return e;
	struct passwd *pw = getpwuid(getuid());
	return pw ? pw->pw_name : "unknown";
}

int cli_import(struct al_store *st, const char *dir, uint8_t id[32], struct al_error *err)
{
	struct cli_progress prog;
	cli_progress_init(&prog, "import", 0);
	struct al_import_opts o = { .progress = cli_progress_cb, .progress_ctx = &prog };
	struct al_import_result res;
	int r = al_manifest_import(st, dir, &o, &res, err);
	cli_progress_done(&prog);
	if (r == 0)
		memcpy(id, res.id, 32);
	return r;
}


json_t *cli_conflicts_json(const struct al_conflict *c, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s}", "path", c[i].path);
		json_object_set_new(o, "copy_path", c[i].copy_path ? json_string(c[i].copy_path) : json_null());
		json_object_set_new(o, "base", cli_entry_json(c[i].has_base ? &c[i].base : NULL, NULL));
		json_object_set_new(o, "theirs", cli_entry_json(c[i].has_theirs ? &c[i].theirs : NULL, NULL));
		json_object_set_new(o, "ours", cli_entry_json(c[i].has_ours ? &c[i].ours : NULL, NULL));
		json_array_append_new(a, o);
	}
	return a;
}

void cli_conflicts_print(FILE *f, const struct al_conflict *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].copy_path)
			fprintf(f, "conflict %s: incoming version at %s\n", c[i].path, c[i].copy_path);
		else
			fprintf(f, "conflict %s: %s\n", c[i].path,
				c[i].has_theirs ? "kept ours" : "incoming deletion not applied; ours kept");
	}
}

/* A commit's result: the head on stdout (or JSON); a conflict error with
 * the current head and the overlapping paths. */
int cli_commit_report(struct cli *cli, int r, const struct al_commit_result *res, const struct al_error *err,
		      json_t *extra)
{
	if (r == AL_ECONFLICT) {
		fprintf(stderr, "%s: %s\n", cli->prog, err->msg);
		if (cli->json) {
			json_t *e = json_pack("{s:s,s:s}", "code", al_code_name(r), "message", err->msg);
			json_object_set_new(e, "head", cli_json_id(res->head));
			json_t *paths = json_array();
			for (size_t i = 0; i < res->nconflicts; i++)
				json_array_append_new(paths, json_string(res->conflicts[i].path));
			json_object_set_new(e, "paths", paths);
			json_object_set_new(e, "conflicts", cli_conflicts_json(res->conflicts, res->nconflicts));
			cli_json_print(json_pack("{s:o}", "error", e));
		}
		json_decref(extra);
		return al_code_exit(r);
	}
	if (r < 0) {
		json_decref(extra);
		return cli_error(cli, err);
	}
	if (cli->json) {
		json_t *o = extra ? extra : json_object();
		json_object_set_new(o, "head", cli_json_id(res->head));
		json_object_set_new(o, "seq", json_integer(res->seq));
		json_object_set_new(o, "rebased", json_boolean(res->rebased));
		json_object_set_new(o, "conflicts", cli_conflicts_json(res->conflicts, res->nconflicts));
		return cli_json_print(o);
	}
	json_decref(extra);
	char id[AL_ID_STRLEN + 1];
	al_id_fmt(res->head, id);
	printf("%s\n", id);
	cli_conflicts_print(stderr, res->conflicts, res->nconflicts);
	return 0;
}

static int proj_create(struct cli *cli, int argc, char **argv)
{
	const char *from, *author;
	int rc = cli_create_opts(cli, argc, argv,
				 "usage: airlock project create NAME [--from DIR] [--author A] [--json]\n\n"
				 "Create a project (names: [A-Za-z0-9][A-Za-z0-9._-]{0,63}) whose live head is\n"
				 "DIR imported as a snapshot, or the empty tree; print the head snapshot id.\n",
				 &from, &author);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	uint8_t snap[32];
	struct al_project_info p;
	int r = al_project_name_check(argv[optind], &err);
	if (r == 0 && from)
		r = cli_import(st, from, snap, &err);
	if (r == 0)
		r = al_project_create(st, argv[optind], from ? snap : NULL, cli_author(author), &p, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_pack("{s:s}", "name", p.name);
		json_object_set_new(o, "head", cli_json_id(p.head));
		return cli_json_print(o);
	}
	char id[AL_ID_STRLEN + 1];
	al_id_fmt(p.head, id);
	printf("%s\n", id);
	return 0;
}


static int list_one(void *ctx, const struct al_project_info *p, struct al_error *err)
{
	(void)err;
	json_t *arr = ctx;
	char id[AL_ID_STRLEN + 1];
	al_id_fmt(p->head, id);
	if (!arr) {
		printf("%s %s %lld\n", p->name, id, (long long)p->commits);
		return 0;
	}
	json_array_append_new(arr, json_pack("{s:s,s:s,s:I,s:I}", "name", p->name, "head", id, "commits",
					     (json_int_t)p->commits, "created", (json_int_t)p->created));
	return 0;
}

static int run_list(struct al_store *st, const char *arg, json_t *arr, struct al_error *err)
{
	(void)arg;
	return al_project_foreach(st, list_one, arr, err);
}

static int proj_list(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv, "usage: airlock project list [--json]\n\nOne line per project: name head commits.\n",
			0, run_list);
}

static int proj_head(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(cli, argc, argv,
			     "usage: airlock project head NAME [--json]\n\nPrint the live head snapshot id.\n", 1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_project_info p;
	int r = al_project_get(st, argv[optind], &p, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_pack("{s:s,s:I}", "name", p.name, "commits", (json_int_t)p.commits);
		json_object_set_new(o, "head", cli_json_id(p.head));
		return cli_json_print(o);
	}
	char id[AL_ID_STRLEN + 1];
	al_id_fmt(p.head, id);
	printf("%s\n", id);
	return 0;
}

static int log_one(void *ctx, const struct al_commit_info *c, struct al_error *err)
{
	(void)err;
	json_t *arr = ctx;
	char res[AL_ID_STRLEN + 1], base[AL_ID_STRLEN + 1], parent[AL_ID_STRLEN + 1];
	al_id_fmt(c->result, res);
	al_id_fmt(c->base, base);
	al_id_fmt(c->parent, parent);
	if (!arr) {
		printf("%lld %s %s %s %s%s%s: %s\n", (long long)c->seq, res, c->kind, c->strategy, c->author,
		       c->draft ? " draft " : "", c->draft ? c->draft : "", c->message);
		for (size_t i = 0; i < c->nconflicts; i++)
			printf("    conflict %s -> %s\n", c->conflicts[i].path,
			       c->conflicts[i].copy_path ? c->conflicts[i].copy_path : "(ours kept)");
		return 0;
	}
	json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "seq", (json_int_t)c->seq, "result", res,
			      "base", base, "parent", parent, "kind", c->kind, "strategy", c->strategy, "author",
			      c->author, "message", c->message, "time", (json_int_t)c->time);
	json_object_set_new(o, "draft", c->draft ? json_string(c->draft) : json_null());
	json_object_set_new(o, "conflicts", cli_conflicts_json(c->conflicts, c->nconflicts));
	json_array_append_new(arr, o);
	return 0;
}

static int proj_log(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(cli, argc, argv,
			     "usage: airlock project log NAME [--json]\n\n"
			     "The live volume's commits, oldest first: seq result kind strategy author\n"
			     "[draft D]: message, then one line per conflict it recorded.\n", 1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	json_t *arr = cli->json ? json_array() : NULL;
	int r = al_project_log(st, argv[optind], log_one, arr, &err);
	al_store_close(st);
	if (r < 0) {
		json_decref(arr);
		return cli_error(cli, &err);
	}
	return arr ? cli_json_print(arr) : 0;
}

int cmd_project(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", proj_create, "create a project; print its head" },
		{ "list", proj_list, "list projects" },
		{ "head", proj_head, "print a project's live head" },
		{ "log", proj_log, "a project's commits, with conflicts" },
		{ 0 },
	};
	return cli_dispatch(cli, "project", cmds, argc - 1, argv + 1);
}

int cmd_commit(struct cli *cli, int argc, char **argv)
{
	struct cli_commit_flags f = { .strategy = AL_STRICT, .message = "" };
	int rc = cli_commit_opts(cli, argc, argv,
				 "usage: airlock commit NAME DIR --base ID [--strategy strict|rebase_if_disjoint|conflict_copy]\n"
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
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	uint8_t snap[32];
	struct al_commit_result res = { 0 };
	struct al_commit_opts o = { .strategy = f.strategy, .author = f.author, .message = f.message };
	struct al_project_info p;
	int r = al_project_get(st, argv[optind], &p, &err);
	if (r == 0)
		r = cli_import(st, argv[optind + 1], snap, &err);
	if (r == 0)
		r = al_project_commit(st, argv[optind], f.base_id, snap, &o, &res, &err);
	al_store_close(st);
	rc = cli_commit_report(cli, r, &res, &err, NULL);
	al_commit_result_release(&res);
	return rc;
}
