/* airlock draft create|list */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

static int draft_create(struct cli *cli, int argc, char **argv)
{
	const char *from, *author;
	int rc = cli_create_opts(
		cli, argc, argv,
		"usage: airlock draft create NAME [--from DIR] [--author A] [--json]\n\n"
		"Fork a draft from project NAME's live head and print its id. With --from,\n"
		"the draft's content is DIR (its changes are DIR against the head).\n",
		&from, &author);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_oid snap;
	struct al_draft_info d;
	struct al_project_info p;
	int r = al_project_get(st, argv[optind], &p, &err);
	if (r == 0 && from)
		r = cli_import(st, from, &snap, &err);
	if (r == 0)
		r = al_draft_create(st, argv[optind], from ? &snap : NULL, cli_author(author), &d,
				    &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_pack("{s:s,s:s}", "id", d.id, "project", d.project);
		json_object_set_new(o, "base", view_id(&d.base));
		json_object_set_new(o, "head", view_id(&d.head));
		return cli_json_print(o);
	}
	printf("%s\n", d.id);
	return 0;
}

static void draft_text(json_t *d)
{
	const char *state = json_string_value(json_object_get(d, "state"));
	const char *sc = cli_state_color(state);
	printf("%s %s%s%s base %s head %s",
	       cli_id_text(json_string_value(json_object_get(d, "id"))), sc, cli_esc(state, "-"),
	       *sc ? CLI_RESET : "", cli_id_text(json_string_value(json_object_get(d, "base"))),
	       cli_id_text(json_string_value(json_object_get(d, "head"))));
	long long a = json_integer_value(json_object_get(d, "applied")),
		  x = json_integer_value(json_object_get(d, "discarded"));
	long long p = json_integer_value(json_object_get(d, "partial"));
	if (a + x && p)
		printf(" (%lld applied, %lld discarded; %lld in part)", a, x, p);
	else if (a + x)
		printf(" (%lld applied, %lld discarded)", a, x);
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(d, "marks"), i, m)
		printf("%s%s", i ? "," : " [", cli_esc(json_string_value(m), "?"));
	printf("%s\n", json_array_size(json_object_get(d, "marks")) ? "]" : "");
	json_array_foreach(json_object_get(d, "paths"), i, m) {
		printf("    %-9s %s",
		       cli_esc(json_string_value(json_object_get(m, "outcome")), "?"),
		       cli_esc(json_string_value(json_object_get(m, "path")), "?"));
		size_t k;
		json_t *n;
		json_array_foreach(json_object_get(m, "hunks"), k, n)
			printf("%s%lld", k ? "," : " [hunks ", (long long)json_integer_value(n));
		printf("%s\n", json_array_size(json_object_get(m, "hunks")) ? "]" : "");
	}
}

static int run_list(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return view_drafts(st, project, arr, err);
}

static int draft_list(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv,
			"usage: airlock draft list NAME [--json]\n\n"
			"The drafts of project NAME: id state base head, then for a decided draft\n"
			"(applied 2, discarded 6) and one line per changed path, applied,\n"
			"partially_applied [hunks 1,3] or discarded; [marks] of the run that made\n"
			"it (cancelled, timed_out, oom, disk_limit, stdout_truncated,\n"
			"stderr_truncated). States: open, applied, partially_applied, rejected,\n"
			"empty (its run changed nothing).\n",
			1, "/projects/%s/drafts", run_list, draft_text);
}

int cmd_draft(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "create", draft_create, "fork a draft from a project's head" },
		{ "list", draft_list, "list a project's drafts" },
		{ 0 },
	};
	return cli_dispatch(cli, "draft", cmds, argc - 1, argv + 1);
}
