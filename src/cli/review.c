/* airlock review DRAFT [--json] [--stat] */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/review.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "util.h"

struct rctx {
	struct cli *cli;
	bool stat;
	json_t *files;
	int nfiles, adds, dels;
};

static json_t *side(const struct al_review_line *l, bool left)
{
	if (!l)
		return json_null();
	return json_pack("{s:i,s:s%}", "no", left ? l->old_no : l->new_no, "text", l->text, l->len);
}

/* The same hunk as rows of (left, right): context on both sides, a run of
 * removals paired with the run of additions that follows it. */
static json_t *side_by_side(const struct al_review_hunk *h)
{
	json_t *rows = json_array();
	size_t i = 0;
	while (i < h->nlines) {
		const struct al_review_line *l = &h->lines[i];
		if (l->origin == ' ') {
			json_array_append_new(rows, json_pack("{s:o,s:o}", "left", side(l, true), "right", side(l, false)));
			i++;
			continue;
		}
		size_t d0 = i;
		while (i < h->nlines && h->lines[i].origin == '-')
			i++;
		size_t a0 = i;
		while (i < h->nlines && h->lines[i].origin == '+')
			i++;
		size_t nd = a0 - d0, na = i - a0;
		for (size_t k = 0; k < (nd > na ? nd : na); k++)
			json_array_append_new(rows, json_pack("{s:o,s:o}", "left", side(k < nd ? &h->lines[d0 + k] : NULL, true),
							      "right", side(k < na ? &h->lines[a0 + k] : NULL, false)));
	}
	return rows;
}


static int one(void *ctx, const struct al_review_file *f, struct al_error *err)
{
	(void)err;
	struct rctx *r = ctx;
	r->nfiles++;
	r->adds += f->additions;
	r->dels += f->deletions;
	if (r->files) {
		char op[2] = { f->op, 0 };
		json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:b,s:b,s:i,s:i}", "op", op, "path", f->path, "binary", f->binary,
				      "content_changed", f->content_changed, "mode_changed", f->mode_changed,
				      "type_changed", f->type_changed, "additions", f->additions, "deletions", f->deletions);
		json_object_set_new(o, "old", cli_entry_json(f->has_old ? &f->old : NULL, f->symlink_old));
		json_object_set_new(o, "new", cli_entry_json(f->has_new ? &f->new : NULL, f->symlink_new));
		if (!r->stat && f->unified) {
			json_object_set_new(o, "unified", json_string(f->unified));
			json_t *hs = json_array();
			for (size_t h = 0; h < f->nhunks; h++) {
				const struct al_review_hunk *hk = &f->hunks[h];
				json_t *lines = json_array();
				for (size_t i = 0; i < hk->nlines; i++) {
					const struct al_review_line *l = &hk->lines[i];
					char og[2] = { l->origin, 0 };
					json_t *lo = json_pack("{s:s,s:s%}", "origin", og, "text", l->text, l->len);
					json_object_set_new(lo, "old", l->old_no > 0 ? json_integer(l->old_no) : json_null());
					json_object_set_new(lo, "new", l->new_no > 0 ? json_integer(l->new_no) : json_null());
					if (l->no_newline)
						json_object_set_new(lo, "no_newline", json_true());
					json_array_append_new(lines, lo);
				}
				json_array_append_new(hs, json_pack("{s:s,s:i,s:i,s:i,s:i,s:o,s:o}", "header", hk->header,
								    "old_start", hk->old_start, "old_lines", hk->old_lines,
								    "new_start", hk->new_start, "new_lines", hk->new_lines,
								    "lines", lines, "side_by_side", side_by_side(hk)));
			}
			json_object_set_new(o, "hunks", hs);
		}
		json_array_append_new(r->files, o);
		return 0;
	}
	if (r->stat) {
		if (f->binary)
			printf("%c %s | binary %llu -> %llu bytes\n", f->op, f->path,
			       (unsigned long long)(f->has_old ? f->old.size : 0), (unsigned long long)(f->has_new ? f->new.size : 0));
		else
			printf("%c %s | +%d -%d\n", f->op, f->path, f->additions, f->deletions);
		return 0;
	}
	const struct al_entry *e = f->has_new ? &f->new : &f->old;
	printf("%c %s (%s", f->op, f->path, al_entry_type_name(e->type));
	if (f->type_changed)
		printf(", was %s", al_entry_type_name(f->old.type));
	if (f->mode_changed)
		printf(", mode %04o -> %04o", f->old.mode, f->new.mode);
	else
		printf(", mode %04o", e->mode);
	printf(")\n");
	if (f->symlink_old || f->symlink_new)
		printf("    symlink %s -> %s\n", f->symlink_old ? f->symlink_old : "(none)",
		       f->symlink_new ? f->symlink_new : "(none)");
	if (f->binary) {
		char a[AL_ID_STRLEN + 1] = "-", b[AL_ID_STRLEN + 1] = "-";
		if (f->has_old)
			al_id_fmt(f->old.digest, a);
		if (f->has_new)
			al_id_fmt(f->new.digest, b);
		printf("    binary: %llu bytes %s -> %llu bytes %s\n", (unsigned long long)(f->has_old ? f->old.size : 0), a,
		       (unsigned long long)(f->has_new ? f->new.size : 0), b);
	}
	if (f->unified)
		fputs(f->unified, stdout);
	return 0;
}

int cmd_review(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "stat", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct rctx r = { .cli = cli };
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': cli->json = true; break;
		case 's': r.stat = true; break;
		case 'h':
			printf("usage: airlock review DRAFT [--json] [--stat]\n\n"
			       "Every change of a draft against its base: one header line per path\n"
			       "(A/M/D, type, mode), then a unified diff for text files; binary files\n"
			       "(or over 8 MiB) with sizes and digests. --stat: one line per path with\n"
			       "+added -removed lines and a total. --json: {draft, project, state, base,\n"
			       "head, files:[{op, path, old, new, binary, additions, deletions, unified,\n"
			       "hunks:[{header, lines, side_by_side:[{left, right}]}]}], stat}.\n");
			return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected a draft id");
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_draft_info d;
	int rc = al_draft_get(st, argv[optind], &d, &err);
	if (rc == 0) {
		r.files = cli->json ? json_array() : NULL;
		rc = al_review(al_store_cas(st), d.base, d.head, !r.stat, one, &r, &err);
	}
	al_store_close(st);
	if (rc < 0) {
		json_decref(r.files);
		return cli_error(cli, &err);
	}
	if (cli->json) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "draft", d.id, "project", d.project, "state", d.state, "files", r.files);
		json_object_set_new(o, "base", cli_json_id(d.base));
		json_object_set_new(o, "head", cli_json_id(d.head));
		json_object_set_new(o, "stat", json_pack("{s:i,s:i,s:i}", "files", r.nfiles, "additions", r.adds, "deletions", r.dels));
		return cli_json_print(o);
	}
	if (r.stat)
		printf("%d files changed, %d insertions(+), %d deletions(-)\n", r.nfiles, r.adds, r.dels);
	return 0;
}
