/* airlock gc: collect lower layers and unretained objects (gc.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/gc.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

static const char gc_help[] =
	"usage: airlock gc [--dry-run] [--json] [--lower-budget BYTES] [--wait SEC] [--now UNIX]\n"
	"                  [--blobs-grace SEC]\n"
	"       airlock gc retention [DAYS|forever]\n"
	"\n"
	"Remove lower layers beyond the budget (least recently used first, never one a\n"
	"run is using) and the objects nothing retained reaches: a project's head, an\n"
	"open draft and an image always; a recorded snapshot, a commit, a run record\n"
	"and a ledger entry while younger than the tenant's retention (default:\n"
	"forever). Appends a 'gc' ledger entry saying what was reclaimed.\n"
	"\n"
	"  --dry-run           report what would be reclaimed; change nothing\n"
	"  --json              the report as JSON\n"
	"  --lower-budget BYTES  lower layers to keep (K, M, G; default 10G)\n"
	"  --wait SEC          how long to wait for writers to pause before the objects\n"
	"                      are swept (default 30; past it only layers are collected)\n"
	"  --now UNIX          the pass's clock (what would go at a later date, with\n"
	"                      --dry-run)\n"
	"  --blobs-grace SEC   with --blobs: delete from the bucket what nothing retains\n"
	"                      once the bucket has held it this long (default 86400;\n"
	"                      by the real clock, not --now)\n"
	"\n"
	"retention: print the retention period, or set it (0..36500 days, or forever);\n"
	"the change is a 'gc_retention' ledger entry.\n";

/* a size (suffix) or a count */
static int parse_u64(const char *s, bool suffix, uint64_t max, uint64_t *out)
{
	return suffix ? al_parse_size(s, max, out, NULL) : al_parse_count(s, max, out, NULL);
}

static void days_text(int64_t d, char *out, size_t n)
{
	if (d == AL_GC_FOREVER)
		snprintf(out, n, "forever");
	else
		snprintf(out, n, "%lld days", (long long)d);
}

static int retention(struct cli *cli, int argc, char **argv)
{
	if (argc > 2)
		return cli_usage(cli, "unexpected argument '%s'", argv[2]);
	struct al_error err = { 0 };
	int64_t days = AL_GC_FOREVER;
	if (argc == 2 && strcmp(argv[1], "forever") != 0) {
		uint64_t v;
		if (parse_u64(argv[1], false, AL_GC_RETENTION_MAX_DAYS, &v) < 0)
			return cli_usage(cli, "bad retention '%s' (0..%d days, or forever)",
					 cli_esc(argv[1], ""), AL_GC_RETENTION_MAX_DAYS);
		days = (int64_t)v;
	}
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	int r = argc == 2 ? al_gc_retention_set(st, days, cli_author(NULL), &err)
			  : al_gc_retention_get(st, &days, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	char t[32];
	days_text(days, t, sizeof(t));
	if (cli->json)
		return cli_json_print(json_pack(
			"{s:o}", "retention_days",
			days == AL_GC_FOREVER ? json_null() : json_integer((json_int_t)days)));
	printf("%s\n", t);
	return 0;
}

int cmd_gc(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "lower-budget", required_argument, NULL, 'b' },
		{ "wait", required_argument, NULL, 'w' },
		{ "now", required_argument, NULL, 't' },
		{ "blobs-grace", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct al_gc_opts o = { .actor = cli_author(NULL) };
	uint64_t v;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': o.dry_run = true; break;
		case 'j': cli->json = true; break;
		case 'b':
			if (parse_u64(optarg, true, 1ull << 50, &v) < 0 || v == 0)
				return cli_usage(
					cli,
					"bad --lower-budget '%s' (BYTES, with K, M or G; not 0)",
					cli_esc(optarg, ""));
			o.lower_budget = v;
			break;
		case 'w':
			if (al_parse_duration(optarg, 86400 * 1000, &v, NULL) < 0)
				return cli_usage(cli, "bad --wait '%s' (seconds)",
						 cli_esc(optarg, ""));
			o.wait_ms = v ? (unsigned)v : 1;
			break;
		case 't':
			if (al_parse_time(optarg, &o.now, NULL) < 0 || o.now <= 0 ||
			    o.now > (1ll << 40))
				return cli_usage(cli, "bad --now '%s' (unix seconds)",
						 cli_esc(optarg, ""));
			break;
		case 'g':
			if (al_parse_count(optarg, 30 * 86400, &v, NULL) < 0 || v == 0)
				return cli_usage(cli, "bad --blobs-grace '%s' (1..2592000 seconds)",
						 cli_esc(optarg, ""));
			o.blobs_grace = (int64_t)v;
			break;
		case 'h': fputs(gc_help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (cli->server)
		return cli_local_only(cli);
	if (optind < argc && !strcmp(argv[optind], "retention"))
		return retention(cli, argc - optind, argv + optind);
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", cli_esc(argv[optind], ""));
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_gc_report p;
	int r = al_gc_run(st, &o, &p, &err);
	al_store_close(st);
	if (r < 0)
		return cli_error(cli, &err);
	if (cli->json) {
		json_t *j = json_pack(
			"{s:b,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "dry_run",
			o.dry_run, "retention_days",
			p.retention_days == AL_GC_FOREVER ? json_null()
							  : json_integer(p.retention_days),
			"objects", (json_int_t)p.objects, "bytes", (json_int_t)p.bytes, "snapshots",
			(json_int_t)p.snapshots, "orphan_files", (json_int_t)p.orphan_files,
			"orphan_bytes", (json_int_t)p.orphan_bytes, "layers", (json_int_t)p.layers,
			"layer_bytes", (json_int_t)p.layer_bytes, "layers_kept",
			(json_int_t)p.layers_kept, "layer_bytes_kept",
			(json_int_t)p.layer_bytes_kept, "layers_in_use",
			(json_int_t)p.layers_in_use, "staging", (json_int_t)p.staging, "retained",
			(json_int_t)p.retained, "objects_skipped", p.objects_skipped);
		if (j && !o.dry_run)
			json_object_set_new(j, "ledger_seq", json_integer((json_int_t)p.seq));
		if (j) {
			json_object_set_new(j, "blobs_objects",
					    json_integer((json_int_t)p.blobs_objects));
			json_object_set_new(j, "blobs_bytes",
					    json_integer((json_int_t)p.blobs_bytes));
			json_object_set_new(j, "blobs_young",
					    json_integer((json_int_t)p.blobs_young));
		}
		return cli_json_print(j);
	}
	char t[32];
	days_text(p.retention_days, t, sizeof(t));
	printf("%s %llu objects (%llu bytes), %llu snapshots, %llu orphan files (%llu bytes), "
	       "%llu lower layers (%llu bytes), %llu staging directories\n",
	       o.dry_run ? "would reclaim" : "reclaimed", (unsigned long long)p.objects,
	       (unsigned long long)p.bytes, (unsigned long long)p.snapshots,
	       (unsigned long long)p.orphan_files, (unsigned long long)p.orphan_bytes,
	       (unsigned long long)p.layers, (unsigned long long)p.layer_bytes,
	       (unsigned long long)p.staging);
	printf("kept %llu lower layers (%llu bytes, %llu in use); %llu objects retained; retention "
	       "%s\n",
	       (unsigned long long)p.layers_kept, (unsigned long long)p.layer_bytes_kept,
	       (unsigned long long)p.layers_in_use, (unsigned long long)p.retained, t);
	const char *blobs = getenv("AIRLOCK_BLOBS");
	if (blobs && *blobs)
		printf("bucket: %s %llu objects (%llu bytes); %llu unretained kept until past the "
		       "grace period\n",
		       o.dry_run ? "would delete" : "deleted", (unsigned long long)p.blobs_objects,
		       (unsigned long long)p.blobs_bytes, (unsigned long long)p.blobs_young);
	if (p.objects_skipped)
		printf("objects not swept: writers did not pause within the wait (see --wait)\n");
	if (!o.dry_run)
		printf("ledger entry %llu\n", (unsigned long long)p.seq);
	return 0;
}
