/* airlock draft create|list, airlock apply */
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
	printf("%s %s base %s head %s", cli_esc(json_string_value(json_object_get(d, "id")), "-"),
	       cli_esc(json_string_value(json_object_get(d, "state")), "-"),
	       cli_esc(json_string_value(json_object_get(d, "base")), "-"),
	       cli_esc(json_string_value(json_object_get(d, "head")), "-"));
	long long a = json_integer_value(json_object_get(d, "applied")),
		  x = json_integer_value(json_object_get(d, "discarded"));
	if (a + x)
		printf(" (%lld applied, %lld discarded)", a, x);
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(d, "marks"), i, m)
		printf("%s%s", i ? "," : " [", cli_esc(json_string_value(m), "?"));
	printf("%s\n", json_array_size(json_object_get(d, "marks")) ? "]" : "");
	json_array_foreach(json_object_get(d, "paths"), i, m)
		printf("    %-9s %s\n",
		       cli_esc(json_string_value(json_object_get(m, "outcome")), "?"),
		       cli_esc(json_string_value(json_object_get(m, "path")), "?"));
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
			"(applied 2, discarded 6) and one line per changed path, applied or\n"
			"discarded; [marks] of the run that made it (cancelled, timed_out, oom,\n"
			"disk_limit, stdout_truncated, stderr_truncated). States: open, applied,\n"
			"partially_applied, rejected, empty (its run changed nothing).\n",
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

int cmd_apply(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "accept-all", no_argument, NULL, 'A' },
		{ "accept", required_argument, NULL, 'p' },
		{ "reject-all", no_argument, NULL, 'R' },
		{ "strategy", required_argument, NULL, 's' },
		{ "message", required_argument, NULL, 'm' },
		{ "author", required_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	enum al_apply_mode mode = 0; /* none given yet */
	enum al_strategy strategy = AL_REBASE_IF_DISJOINT;
	int c, nmodes = 0;
	const char *msg = NULL, *author = NULL;
	const char **paths = calloc((size_t)argc + 1, sizeof(char *));
	size_t npaths = 0;
	struct al_error err = { 0 };
	optind = 0;
	while ((c = getopt_long(argc, argv, "hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'A':
			mode = AL_ACCEPT_ALL;
			nmodes++;
			break;
		case 'R':
			mode = AL_REJECT_ALL;
			nmodes++;
			break;
		case 'p':
			if (mode != AL_ACCEPT_SELECTED)
				nmodes++;
			mode = AL_ACCEPT_SELECTED;
			paths[npaths++] = cli_draft_path(optarg);
			break;
		case 'm': msg = optarg; break;
		case 'a': author = optarg; break;
		case 'j': cli->json = true; break;
		case 's':
			if (al_strategy_parse(optarg, &strategy, &err) < 0) {
				free(paths);
				return cli_usage(cli, "%s", err.msg);
			}
			break;
		case 'h':
			free(paths);
			printf("usage: airlock apply DRAFT (--accept-all | --accept PATH... | "
			       "--reject-all)\n"
			       "                     [--strategy S] [-m MSG] [--author A] "
			       "[--json]\n\n"
			       "Apply a draft to its project's live head in one commit: every "
			       "change\n"
			       "(--accept-all), only the changes at or under the listed paths "
			       "(--accept;\n"
			       "a path the draft does not change is an error), or none "
			       "(--reject-all\n"
			       "discards the draft). The commit uses --strategy (default "
			       "rebase_if_disjoint;\n"
			       "strict, conflict_copy). Only an open draft can be decided: an "
			       "applied,\n"
			       "partially_applied, rejected or empty draft is refused (exit 9), "
			       "and so is an\n"
			       "accept that would change nothing in the head (\"nothing to "
			       "apply\", exit 9).\n"
			       "Prints the new head; on stderr \"applied 2 of 8 changes; 6 "
			       "discarded\" and a\n"
			       "warning for a draft whose run was cancelled or hit a limit.\n");
			return 0;
		default: free(paths); return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind < 1) {
		free(paths);
		return cli_usage(cli, "expected the draft id");
	}
	char draft_id[64];
	int idrc = cli_id(cli, CLI_ID_RUN | CLI_ID_DRAFT, argv[optind], draft_id, sizeof(draft_id));
	if (idrc || (idrc = cli_id_check(cli, CLI_ID_RUN | CLI_ID_DRAFT, draft_id))) {
		free(paths);
		return idrc;
	}
	const char *draft = draft_id;
	for (int i = optind + 1; i < argc; i++) {
		if (mode != AL_ACCEPT_SELECTED) {
			free(paths);
			return cli_usage(cli, "unexpected argument '%s'", argv[i]);
		}
		paths[npaths++] = cli_draft_path(argv[i]);
	}
	if (nmodes != 1) {
		free(paths);
		return cli_usage(
			cli, "give exactly one of --accept-all, --accept PATH..., --reject-all");
	}
	const char *mode_name = mode == AL_ACCEPT_ALL   ? "accept_all"
				: mode == AL_REJECT_ALL ? "reject_all"
							: "accept_selected";
	if (cli->server) {
		json_t *body = json_pack("{s:s,s:s}", "mode", mode_name, "strategy",
					 al_strategy_name(strategy)),
		       *doc = NULL;
		json_t *pa = json_array();
		for (size_t i = 0; i < npaths; i++)
			json_array_append_new(pa, json_string(paths[i]));
		if (npaths)
			json_object_set_new(body, "paths", pa);
		else
			json_decref(pa);
		if (msg)
			json_object_set_new(body, "message", json_string(msg));
		char path[256], esc[128];
		snprintf(path, sizeof(path), "/drafts/%s/apply",
			 cli_path_escape(draft, esc, sizeof(esc)));
		int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
		json_decref(body);
		free(paths);
		return r < 0 ? cli_remote_error(cli, &err, doc) : cli_commit_print(cli, doc);
	}
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0) {
		free(paths);
		return cli_error(cli, &err);
	}
	/* the draft's own id, also when it is named by its run's */
	struct al_draft_info d;
	int r = al_draft_get(st, draft, &d, &err);
	if (r == 0)
		al_oid_fmt(&d.base, cli->change_base);
	char message[256];
	snprintf(message, sizeof(message), "%s", msg ? msg : "");
	if (!msg)
		snprintf(message, sizeof(message), "%s draft %s", mode_name, r == 0 ? d.id : draft);
	struct al_commit_opts o = { .strategy = strategy,
				    .author = cli_author(author),
				    .message = message };
	struct al_commit_result res = { 0 };
	if (r == 0)
		r = al_draft_apply(st, draft, mode, paths, npaths, &o, &res, &err);
	json_t *extra = view_apply(r == 0 ? d.id : draft, mode_name, al_strategy_name(strategy),
				   paths, npaths);
	if (r == 0)
		view_apply_result(st, d.id, extra, &res);
	al_store_close(st);
	free(paths);
	int rc = cli_commit_report(cli, r, &res, &err, extra);
	al_commit_result_release(&res);
	return rc;
}
