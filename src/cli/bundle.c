/* airlock bundle export|inspect|apply */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/delta.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "ops.h"
#include "airlock/util.h"

static int bundle_export(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock bundle export DRAFT FILE [--json]\n\n"
		"Write the draft's changes (its base to its head) as a DeltaBundle: a tar.zst\n"
		"whose first member .airlock/bundle.json is the index (docs/formats.md).\n"
		"Prints the bundle id (sha256 of the index).\n",
		2);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_draft_info d;
	struct al_oid id;
	int r = al_draft_get(st, argv[optind], &d, &err);
	struct cli_watch w;
	cli_watch_start(&w, "bundle export", -1, 0);
	if (r == 0)
		r = al_bundle_write(al_store_cas(st), &d.base, &d.head, argv[optind + 1], &id,
				    &err);
	cli_watch_stop(&w);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_pack("{s:s,s:s}", "draft", d.id, "file", argv[optind + 1]);
		json_object_set_new(o, "id", view_id(&id));
		return cli_json_print(o);
	}
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(&id, s);
	printf("%s\n", s);
	return 0;
}

static int open_bundle(struct cli *cli, const char *path, int *fd)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		struct al_error err;
		al_fail(&err, errno == ENOENT ? AL_ENOTFOUND : AL_EIO, errno, "open %s", path);
		return cli_error(cli, &err);
	}
	return 0;
}

/* Progress of reading the bundle fd: its offset against its size. */
static void watch_bundle(struct cli_watch *w, const char *what, int fd)
{
	struct stat s;
	cli_watch_start(w, what, fd,
			fstat(fd, &s) == 0 && S_ISREG(s.st_mode) ? (uint64_t)s.st_size : 0);
}

static int bundle_inspect(struct cli *cli, int argc, char **argv)
{
	int fd, rc = cli_simple_opts(cli, argc, argv,
				     "usage: airlock bundle inspect FILE [--json]\n\n"
				     "Verify a bundle completely (index, members, sizes, digests, "
				     "paths) without\n"
				     "storing anything, and list it: id, base, head, one line per "
				     "entry A|M|D path.\n"
				     "A refused bundle exits 6 with the reason.\n",
				     1);
	if (rc >= 0)
		return rc;
	if ((rc = open_bundle(cli, argv[optind], &fd)))
		return rc;
	struct al_error err = { 0 };
	struct al_bundle b;
	struct cli_watch w;
	watch_bundle(&w, "bundle inspect", fd);
	int r = al_bundle_read_fd(NULL, fd, &b, &err);
	cli_watch_stop(&w);
	close(fd);
	if (r < 0)
		return cli_error(cli, &err);
	char id[AL_OID_STRLEN + 1], base[AL_OID_STRLEN + 1], head[AL_OID_STRLEN + 1];
	al_oid_fmt(&b.id, id);
	al_oid_fmt(&b.base, base);
	al_oid_fmt(&b.head, head);
	if (cli->json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < b.n; i++) {
			char op[2] = { b.entries[i].op, 0 };
			json_t *o = json_pack("{s:s,s:s}", "op", op, "path", b.entries[i].path);
			json_object_set_new(
				o, "old",
				view_entry(b.entries[i].has_old ? &b.entries[i].old : NULL, NULL));
			json_object_set_new(
				o, "new",
				view_entry(b.entries[i].has_new ? &b.entries[i].new : NULL, NULL));
			json_array_append_new(arr, o);
		}
		json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:o}", "id", id, "base", base, "head", head,
				      "bytes", (json_int_t)b.content_bytes, "entries", arr);
		al_bundle_release(&b);
		return cli_json_print(o);
	}
	printf("bundle %s\nbase %s\nhead %s\n", id, base, head);
	for (size_t i = 0; i < b.n; i++)
		printf("%c %s\n", b.entries[i].op, b.entries[i].path);
	al_bundle_release(&b);
	return 0;
}

static int bundle_apply(struct cli *cli, int argc, char **argv)
{
	struct cli_commit_flags f = { .strategy = AL_STRICT };
	int rc = cli_commit_opts(
		cli, argc, argv,
		"usage: airlock bundle apply FILE NAME --base ID [--strategy S] [-m MSG] "
		"[--json]\n\n"
		"Verify the bundle, apply its changes to snapshot ID (every old version it\n"
		"names must be what ID has) and commit the result to project NAME as the\n"
		"change from ID, with --strategy (default strict). A refused bundle changes\n"
		"nothing. Prints the new head.\n",
		2, &f);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	const struct al_oid *b = &f.base_id;
	if (cli->server) {
		char path[2048], esc[256], besc[128], mesc[1024];
		snprintf(path, sizeof(path), "/projects/%s/commits?base=%s&strategy=%s%s%s",
			 cli_path_escape(argv[optind + 1], esc, sizeof(esc)),
			 cli_path_escape(f.base, besc, sizeof(besc)), al_strategy_name(f.strategy),
			 f.message ? "&message=" : "",
			 f.message ? cli_path_escape(f.message, mesc, sizeof(mesc)) : "");
		json_t *doc = NULL;
		if (cli_http(cli, "POST", path, NULL, argv[optind], NULL, &doc, &err) < 0)
			return cli_remote_error(cli, &err, doc);
		return cli_commit_print(cli, doc);
	}
	int fd;
	if ((rc = open_bundle(cli, argv[optind], &fd)))
		return rc;
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0) {
		close(fd);
		return cli_error(cli, &err);
	}
	struct al_commit_result res = { 0 };
	struct al_commit_opts o = { .strategy = f.strategy,
				    .author = f.author,
				    .message = f.message };
	struct al_oid bundle_id;
	struct cli_watch w;
	watch_bundle(&w, "bundle apply", fd);
	int r = ops_bundle_commit(st, argv[optind + 1], fd, b, &o, &res, &bundle_id, &err);
	cli_watch_stop(&w);
	close(fd);
	al_store_close(st);
	json_t *extra =
		cli->json && r == 0 ? json_pack("{s:o}", "bundle", view_id(&bundle_id)) : NULL;
	rc = cli_commit_report(cli, r, &res, &err, extra);
	al_commit_result_release(&res);
	return rc;
}

int cmd_bundle(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "export", bundle_export, "write a draft's changes as a DeltaBundle" },
		{ "inspect", bundle_inspect, "verify and list a bundle" },
		{ "apply", bundle_apply, "verify a bundle and commit it to a project" },
		{ 0 },
	};
	return cli_dispatch(cli, "bundle", cmds, argc - 1, argv + 1);
}
