/* The documents the commands print: from the local home or, with
 * --server, from airlockd (cli_fetch, cli_list), and how they are printed
 * (cli_print_list, cli_commit_print, cli_commit_report).  Uses common.c
 * and remote.c; the commands use it. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"

int cli_fetch(struct cli *cli, const char *path, cli_doc_fn local, const void *arg, json_t **out)
{
	*out = NULL;
	if (cli->server)
		return cli_remote_get(cli, path, out);
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	int r = local(st, arg, out, &err);
	al_store_close(st);
	if (r < 0) {
		json_decref(*out);
		*out = NULL;
		return cli_error(cli, &err);
	}
	return -1;
}

int cli_print_list(struct cli *cli, json_t *arr, cli_text_fn text)
{
	if (cli->json)
		return cli_json_print(arr);
	if (cli->page)
		cli_pager(cli);
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		text(v);
	json_decref(arr);
	return 0;
}

struct list_arg {
	cli_list_fn run;
	const char *arg;
};

static int list_local(struct al_store *st, const void *arg, json_t **out, struct al_error *err)
{
	const struct list_arg *l = arg;
	*out = json_array();
	return l->run(st, l->arg, *out, err);
}

int cli_list(struct cli *cli, int argc, char **argv, const char *help, int nargs,
	     const char *remote, cli_list_fn run, cli_text_fn text)
{
	int rc = cli_simple_opts(cli, argc, argv, help, nargs);
	if (rc >= 0)
		return rc;
	const char *arg = nargs ? argv[optind] : NULL;
	if (cli->server && !remote)
		return cli_local_only(cli);
	char path[1024] = "", esc[512];
	const char *hole = remote ? strstr(remote, "%s") : NULL;
	if (hole)
		snprintf(path, sizeof(path), "%.*s%s%s", (int)(hole - remote), remote,
			 cli_path_escape(arg ? arg : "", esc, sizeof(esc)), hole + 2);
	else if (remote)
		snprintf(path, sizeof(path), "%s", remote);
	struct list_arg l = { run, arg };
	json_t *arr;
	if ((rc = cli_fetch(cli, path, list_local, &l, &arr)) >= 0)
		return rc;
	return cli_print_list(cli, arr, text);
}

/* A commit's result document: the head on stdout (or the JSON), a line per
 * conflict on stderr. */
int cli_commit_print(struct cli *cli, json_t *doc)
{
	if (cli->json)
		return cli_json_print(doc);
	printf("%s\n", json_string_value(json_object_get(doc, "head")));
	json_t *ap = json_object_get(doc, "applied");
	if (json_is_integer(ap)) { /* a draft's apply: what it took and left */
		long long a = json_integer_value(ap),
			  d = json_integer_value(json_object_get(doc, "discarded")),
			  p = json_integer_value(json_object_get(doc, "partial"));
		char part[48] = "";
		if (p)
			snprintf(part, sizeof(part), " (%lld in part)", p);
		if (!strcmp(cli_esc(json_string_value(json_object_get(doc, "state")), ""),
			    AL_DRAFT_REJECTED))
			fprintf(stderr, "rejected: %lld change%s discarded\n", d,
				d == 1 ? "" : "s");
		else if (d)
			fprintf(stderr, "applied %lld of %lld changes%s; %lld discarded\n", a,
				a + d, part, d);
		else
			fprintf(stderr, "applied %lld of %lld changes%s\n", a, a, part);
		const char *hp;
		json_t *hl;
		json_object_foreach(json_object_get(doc, "hunks"), hp, hl) {
			fprintf(stderr, "took %s hunk%s", cli_esc(hp, "?"),
				json_array_size(hl) == 1 ? "" : "s");
			size_t k;
			json_t *n;
			json_array_foreach(hl, k, n)
				fprintf(stderr, "%s%lld", k ? "," : " ",
					(long long)json_integer_value(n));
			fprintf(stderr, "\n");
		}
	}
	size_t k;
	json_t *w;
	json_array_foreach(json_object_get(doc, "warnings"), k, w)
		fprintf(stderr, "warning: %s\n", cli_esc(json_string_value(w), ""));
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(doc, "merged"), i, c)
		fprintf(stderr, "merged %s: both sides' lines (merge_lines)\n",
			cli_esc(json_string_value(c), "?"));
	json_array_foreach(json_object_get(doc, "conflicts"), i, c) {
		const char *path = json_string_value(json_object_get(c, "path"));
		const char *copy = json_string_value(json_object_get(c, "copy_path"));
		if (copy)
			fprintf(stderr, "conflict %s: incoming version at %s\n", path, copy);
		else
			fprintf(stderr, "conflict %s: %s\n", path,
				json_is_object(json_object_get(c, "theirs"))
					? "kept ours"
					: "incoming deletion not applied; ours kept");
	}
	json_decref(doc);
	return 0;
}

/* A commit's result: the head on stdout (or JSON); a conflict error with
 * the current head and the overlapping paths. */
int cli_commit_report(struct cli *cli, int r, const struct al_commit_result *res,
		      const struct al_error *err, json_t *extra)
{
	if (r < 0) {
		json_decref(extra);
		if (r != AL_ECONFLICT)
			return cli_error(cli, err);
		return cli_remote_error(cli, err, view_error(err, res));
	}
	json_t *o = view_commit_result(res);
	if (extra) {
		json_object_update(extra, o);
		json_decref(o);
		o = extra;
	}
	return cli_commit_print(cli, o);
}
