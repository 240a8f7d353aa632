/* airlock fsck: verify every stored object and every snapshot. */
#include <getopt.h>
#include <stdio.h>

#include "airlock/fsck.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

struct report_ctx {
	json_t *problems;
};

static void report(void *ctx, const char *problem, const struct al_oid *id, const char *why)
{
	struct report_ctx *r = ctx;
	char s[AL_OID_STRLEN + 1];
	al_oid_fmt(id, s);
	if (r->problems)
		json_array_append_new(r->problems, json_pack("{s:s,s:s,s:s}", "problem", problem,
							     "id", s, "detail", why));
	else
		printf("%s %s: %s\n", problem, s, why);
}

int cmd_fsck(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: airlock fsck [--json]\n\n"
			       "Re-hash every stored object and walk every snapshot; check that "
			       "run records,\n"
			       "commits, heads and drafts' states say what the ledger says. Print "
			       "each\n"
			       "missing or corrupt object and each difference (one line: problem "
			       "id:\n"
			       "detail; problem is corrupt, missing or ledger) and exit 4 if "
			       "any.\n");
			return 0;
		}
		if (c == 'j')
			cli->json = true;
		else
			return cli_usage(cli, "bad option");
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct report_ctx rc = { cli->json ? json_array() : NULL };
	struct al_fsck_summary s;
	int n = al_fsck(st, report, &rc, &s, &err);
	al_store_close(st);
	if (n < 0) {
		json_decref(rc.problems);
		return cli_error(cli, &err);
	}
	if (cli->json) {
		json_t *o = json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "ok", n == 0,
				      "objects", (json_int_t)s.objects, "packed",
				      (json_int_t)s.packed, "loose", (json_int_t)s.loose, "bytes",
				      (json_int_t)s.bytes, "snapshots", (json_int_t)s.snapshots,
				      "nodes", (json_int_t)s.nodes, "corrupt",
				      (json_int_t)s.corrupt, "missing", (json_int_t)s.missing,
				      "unreferenced_files", (json_int_t)s.unreferenced_files);
		json_object_set_new(o, "ledger_differences", json_integer((json_int_t)s.ledger));
		json_object_set_new(o, "problems", rc.problems);
		cli_json_print(o);
	} else {
		fprintf(stderr,
			"fsck: %llu objects (%llu packed, %llu loose, %llu bytes), %llu snapshots, "
			"%llu tree nodes: %llu corrupt, %llu missing, %llu differ from the "
			"ledger\n",
			(unsigned long long)s.objects, (unsigned long long)s.packed,
			(unsigned long long)s.loose, (unsigned long long)s.bytes,
			(unsigned long long)s.snapshots, (unsigned long long)s.nodes,
			(unsigned long long)s.corrupt, (unsigned long long)s.missing,
			(unsigned long long)s.ledger);
	}
	return n ? al_code_exit(AL_ECORRUPT) : 0;
}
