/* airlock snapshot import|show|export|diff|list */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/cas.h"
#include "airlock/manifest.h"
#include "airlock/overlay.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

/* Parse options common to the subcommands: --json, --force, --no-cache, --help.
 * Returns -1 to continue, or an exit code. */
struct flags {
	bool force, no_cache;
};

static int parse(struct cli *cli, int argc, char **argv, const char *help, bool allow_json,
		 bool allow_force, bool allow_nocache, struct flags *fl, int nargs)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "no-cache", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h': fputs(help, stdout); return 0;
		case 'j':
			if (!allow_json)
				return cli_usage(cli, "--json is not an option here");
			cli->json = true;
			break;
		case 'f':
			if (!allow_force)
				return cli_usage(cli, "--force is not an option here");
			fl->force = true;
			break;
		case 'n':
			if (!allow_nocache)
				return cli_usage(cli, "--no-cache is not an option here");
			fl->no_cache = true;
			break;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != nargs)
		return cli_usage(cli, "expected %d argument%s, got %d", nargs,
				 nargs == 1 ? "" : "s", argc - optind);
	return -1;
}

/* Parse n ids from argv[optind…] and open the store; 0 or an exit code. */
static int ids_and_store(struct cli *cli, char **argv, int n, struct al_oid *ids,
			 struct al_store **st)
{
	struct al_error err = { 0 };
	for (int i = 0; i < n; i++) {
		char id[AL_OID_STRLEN + 1];
		int rc = cli_id(cli, CLI_ID_SNAPSHOT, argv[optind + i], id, sizeof(id));
		if (rc)
			return rc;
		if (al_oid_parse(id, &ids[i], &err) < 0)
			return cli_error(cli, &err);
	}
	if (cli_open(cli, st, &err) < 0)
		return cli_error(cli, &err);
	return 0;
}

static int snap_import(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(
		cli, argc, argv,
		"usage: airlock snapshot import DIR [--json] [--no-cache]\n\n"
		"Store DIR (files, symlinks, directories with their permission bits) as a\n"
		"snapshot and print its id. Device files, FIFOs, sockets and invalid names\n"
		"are refused with the path named; nothing is stored then. Unchanged files are\n"
		"recognised by a stat cache (--no-cache reads every file).\n",
		true, false, true, &fl, 1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct cli_progress prog;
	cli_progress_init(&prog, "import", 0);
	struct al_import_opts opts = { .no_cache = fl.no_cache,
				       .progress = cli_progress_cb,
				       .progress_ctx = &prog };
	struct al_import_result res;
	int r = al_manifest_import(st, argv[optind], &opts, &res, &err);
	cli_progress_done(&prog);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *o = json_object();
		json_object_set_new(o, "id", view_id(&res.id));
		json_object_set_new(o, "files", json_integer((json_int_t)res.files));
		json_object_set_new(o, "dirs", json_integer((json_int_t)res.dirs));
		json_object_set_new(o, "symlinks", json_integer((json_int_t)res.symlinks));
		json_object_set_new(o, "bytes", json_integer((json_int_t)res.bytes));
		json_object_set_new(o, "bytes_read", json_integer((json_int_t)res.bytes_read));
		json_object_set_new(o, "cache_hits", json_integer((json_int_t)res.cache_hits));
		return cli_json_print(o);
	}
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(&res.id, id);
	printf("%s\n", id);
	return 0;
}

static json_t *entry_json(struct al_cas *cas, const struct al_entry *e)
{
	uint8_t *t = NULL;
	size_t n = 0;
	if (e->type == AL_T_SYMLINK && cas && al_cas_get(cas, &e->digest, &t, &n, NULL) < 0)
		t = NULL;
	json_t *o = view_entry(e, (char *)t);
	free(t);
	return o;
}

struct show_ctx {
	struct cli *cli;
	struct al_cas *cas;
	bool first;
};

static int show_one(void *ctx, const char *path, const struct al_entry *e, struct al_error *err)
{
	(void)err;
	struct show_ctx *s = ctx;
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(&e->digest, id);
	if (!s->cli->json) {
		printf("%s %04o %llu %s %s\n", al_entry_type_name(e->type), e->mode,
		       (unsigned long long)e->size, id, path);
		return 0;
	}
	json_t *o = entry_json(s->cas, e);
	json_object_set_new(o, "path", json_string(path));
	char *str = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS);
	json_decref(o);
	printf("%s%s", s->first ? "" : ",", str);
	free(str);
	s->first = false;
	return 0;
}

static int snap_show(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(
		cli, argc, argv,
		"usage: airlock snapshot show ID [--json]\n\n"
		"List every entry of a snapshot, a directory before its contents, one line\n"
		"each: type mode size sha256 path (type is file, symlink or dir; a dir's size\n"
		"is the bytes of the files beneath it and its sha256 the id of its tree node).\n"
		"--json: {\"id\":…,\"entries\":[{path,type,mode,size,sha256[,target]}…]}\n",
		true, false, false, &fl, 1);
	if (rc >= 0)
		return rc;
	struct al_oid id[1];
	struct al_store *st = NULL;
	if ((rc = ids_and_store(cli, argv, 1, id, &st)))
		return rc;
	struct al_error err = { 0 };
	struct show_ctx s = { cli, al_store_cas(st), true };
	/* check existence first so --json errors are not mixed into output */
	int r = al_manifest_stat(s.cas, &id[0], NULL, NULL, &err);
	if (r == 0) {
		if (cli->json) {
			char ids[AL_OID_STRLEN + 1];
			al_oid_fmt(&id[0], ids);
			printf("{\"id\":\"%s\",\"entries\":[", ids);
		}
		r = al_manifest_walk(s.cas, &id[0], show_one, &s, &err);
		if (cli->json)
			printf("]}\n");
	}
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	return 0;
}

static int snap_export(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(
		cli, argc, argv,
		"usage: airlock snapshot export ID DIR [--force]\n\n"
		"Write a snapshot to DIR (created if missing): contents, permission bits,\n"
		"symlinks (never followed) and empty directories. DIR must be empty unless\n"
		"--force, which replaces files and symlinks in the way (never a directory).\n",
		false, true, false, &fl, 2);
	if (rc >= 0)
		return rc;
	struct al_oid id[1];
	struct al_store *st = NULL;
	if ((rc = ids_and_store(cli, argv, 1, id, &st)))
		return rc;
	struct al_error err = { 0 };
	uint64_t total = 0;
	int r = al_manifest_stat(al_store_cas(st), &id[0], &total, NULL, &err);
	if (r == 0) {
		struct cli_progress prog;
		cli_progress_init(&prog, "export", total);
		struct al_export_opts opts = { .force = fl.force,
					       .progress = cli_progress_cb,
					       .progress_ctx = &prog };
		r = al_manifest_export(al_store_cas(st), &id[0], argv[optind + 1], &opts, &err);
		cli_progress_done(&prog);
	}
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	return 0;
}

struct diff_ctx {
	struct cli *cli;
	struct al_cas *cas;
	bool first;
	uint64_t n;
};

static int diff_one(void *ctx, const struct al_change *c, struct al_error *err)
{
	(void)err;
	struct diff_ctx *d = ctx;
	d->n++;
	if (!d->cli->json) {
		printf("%c %s\n", c->op, c->path);
		return 0;
	}
	char op[2] = { c->op, 0 };
	json_t *o = json_pack("{s:s,s:s}", "op", op, "path", c->path);
	if (c->old)
		json_object_set_new(o, "old", entry_json(d->cas, c->old));
	if (c->new)
		json_object_set_new(o, "new", entry_json(d->cas, c->new));
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS);
	json_decref(o);
	printf("%s%s", d->first ? "" : ",", s);
	free(s);
	d->first = false;
	return 0;
}

static int snap_diff(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(cli, argc, argv,
		       "usage: airlock snapshot diff A B [--json]\n\n"
		       "Print what changes from snapshot A to B, one line per path: A (added),\n"
		       "M (content, mode or type changed) or D (deleted). Only subtrees whose ids\n"
		       "differ are read. --json: {\"a\",\"b\",\"changes\":[{op,path,old,new}…]}\n",
		       true, false, false, &fl, 2);
	if (rc >= 0)
		return rc;
	struct al_oid ab[2];
	struct al_store *st = NULL;
	if ((rc = ids_and_store(cli, argv, 2, ab, &st)))
		return rc;
	const struct al_oid *a = &ab[0], *b = &ab[1];
	struct al_error err = { 0 };
	struct diff_ctx d = { cli, al_store_cas(st), true, 0 };
	int r = al_manifest_stat(d.cas, a, NULL, NULL, &err);
	if (r == 0)
		r = al_manifest_stat(d.cas, b, NULL, NULL, &err);
	if (r == 0) {
		if (cli->json) {
			char ia[AL_OID_STRLEN + 1], ib[AL_OID_STRLEN + 1];
			al_oid_fmt(a, ia);
			al_oid_fmt(b, ib);
			printf("{\"a\":\"%s\",\"b\":\"%s\",\"changes\":[", ia, ib);
		}
		r = al_manifest_diff(d.cas, a, b, diff_one, &d, &err);
		if (cli->json)
			printf("]}\n");
	}
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	return 0;
}

struct list_ctx {
	json_t *arr;
};

static int list_one(void *ctx, const struct al_snapshot_info *info, struct al_error *err)
{
	(void)err;
	struct list_ctx *l = ctx;
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(&info->id, id);
	if (!l->arr) {
		printf("%s %llu files %llu bytes %s\n", cli_id_text(id),
		       (unsigned long long)info->files, (unsigned long long)info->bytes,
		       info->source ? info->source : "-");
		return 0;
	}
	json_t *o = json_pack("{s:s,s:I,s:I,s:I}", "id", id, "created", (json_int_t)info->created,
			      "files", (json_int_t)info->files, "bytes", (json_int_t)info->bytes);
	if (info->source)
		json_object_set_new(o, "source", view_bytes(info->source, strlen(info->source)));
	json_array_append_new(l->arr, o);
	return 0;
}

static int snap_list(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(cli, argc, argv,
		       "usage: airlock snapshot list [--json]\n\n"
		       "List the snapshots imported into this tenant: id, files, bytes, source.\n",
		       true, false, false, &fl, 0);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct list_ctx l = { cli->json ? json_array() : NULL };
	int r = al_store_snapshot_foreach(st, list_one, &l, &err);
	al_store_close(st);
	if (r < 0) {
		json_decref(l.arr);
		return cli_error(cli, &err);
	}
	if (l.arr)
		return cli_json_print(l.arr);
	return 0;
}

static int snap_apply_upper(struct cli *cli, int argc, char **argv)
{
	struct flags fl = { 0 };
	int rc = parse(
		cli, argc, argv,
		"usage: airlock snapshot apply-upper BASE UPPERDIR [--json]\n\n"
		"Plumbing (what a run does when it ends): apply an overlayfs upper directory\n"
		"to snapshot BASE and print the resulting snapshot id. Whiteouts delete,\n"
		"opaque directories replace, identical copy-ups are no change. Device files,\n"
		"FIFOs and sockets are not kept, setuid/setgid bits are removed, hardlinks\n"
		"become independent files: each is reported on stderr. Symlinks are never\n"
		"followed.\n",
		true, false, false, &fl, 2);
	if (rc >= 0)
		return rc;
	struct al_oid base[1], out;
	struct al_store *st = NULL;
	if ((rc = ids_and_store(cli, argv, 1, base, &st)))
		return rc;
	struct al_error err = { 0 };
	struct al_overlay_report rep;
	int r = al_overlay_apply(st, &base[0], argv[optind + 1], &out, &rep, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *notes = json_array();
		for (size_t i = 0; i < rep.nnotes; i++)
			json_array_append_new(notes, json_string(rep.notes[i]));
		json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:o}", "set", (json_int_t)rep.set,
				      "deleted", (json_int_t)rep.deleted, "unchanged_copyups",
				      (json_int_t)rep.unchanged_copyups, "neutralised",
				      (json_int_t)rep.neutralised, "notes", notes);
		json_object_set_new(o, "id", view_id(&out));
		al_overlay_report_release(&rep);
		return cli_json_print(o);
	}
	char id[AL_OID_STRLEN + 1];
	al_oid_fmt(&out, id);
	printf("%s\n", id);
	for (size_t i = 0; i < rep.nnotes; i++)
		fprintf(stderr, "%s: %s\n", cli->prog, rep.notes[i]);
	al_overlay_report_release(&rep);
	return 0;
}

int cmd_snapshot(struct cli *cli, int argc, char **argv)
{
	static const struct cli_cmd cmds[] = {
		{ "import", snap_import, "store a directory as a snapshot; print its id" },
		{ "show", snap_show, "list a snapshot's entries" },
		{ "export", snap_export, "write a snapshot into a directory" },
		{ "diff", snap_diff, "list the changes between two snapshots" },
		{ "list", snap_list, "list imported snapshots" },
		{ "apply-upper", snap_apply_upper,
		  "apply an overlayfs upper directory (plumbing)" },
		{ 0 },
	};
	return cli_dispatch(cli, "snapshot", cmds, argc - 1, argv + 1);
}
