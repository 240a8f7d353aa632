/* airlock review DRAFT [--json] [--stat] */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/review.h"
#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

static const char *jstr(json_t *o, const char *k)
{
	return cli_esc(json_string_value(json_object_get(o, k)), "");
}

static bool jtrue(json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

/* The unified diff with each hunk's number on its header line
 * ("@@ -1,3 +1,4 @@ [hunk 1] context"): what apply --hunks PATH=N names.  A
 * line that starts "@@ -" is a hunk header: a diff's content lines start
 * with ' ', '+', '-' or '\\'. */
static void print_unified(json_t *u)
{
	const char *p = json_string_value(u), *end = p + json_string_length(u);
	unsigned n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		const char *close =
			len > 4 && !memcmp(p, "@@ -", 4) ? memmem(p + 4, len - 4, " @@", 3) : NULL;
		if (close) {
			fwrite(p, 1, (size_t)(close + 3 - p), stdout);
			printf(" [hunk %u]", ++n);
			fwrite(close + 3, 1, (size_t)(p + len - (close + 3)), stdout);
		} else
			fwrite(p, 1, len, stdout);
		p += len;
	}
}

/* One file of a review document as text (the embedded and the remote
 * review print the same). */
static void file_text(json_t *f, bool stat)
{
	json_t *old = json_object_get(f, "old"), *new = json_object_get(f, "new");
	long long olds = json_integer_value(json_object_get(old, "size")),
		  news = json_integer_value(json_object_get(new, "size"));
	const char *op = jstr(f, "op"), *path = jstr(f, "path");
	char tag[160] = "", hunks[64] = "";
	const char *oc = json_string_value(json_object_get(f, "outcome"));
	size_t k, o = 0;
	json_t *n;
	json_array_foreach(json_object_get(f, "applied_hunks"), k, n)
		if (o + 24 < sizeof(hunks))
			o += (size_t)snprintf(hunks + o, sizeof(hunks) - o, "%s%lld",
					      k ? "," : ": hunks ",
					      (long long)json_integer_value(n));
		else if (o + 5 < sizeof(hunks))
			o += (size_t)snprintf(hunks + o, sizeof(hunks) - o, ",...");
	if (oc || json_is_string(json_object_get(f, "cut")))
		snprintf(tag, sizeof(tag), " [%s%s%s%s]", oc ? cli_esc(oc, "") : "", hunks,
			 oc && json_is_string(json_object_get(f, "cut")) ? ", " : "",
			 json_is_string(json_object_get(f, "cut"))
				 ? "possibly truncated by the disk limit"
				 : "");
	if (stat) {
		if (jtrue(f, "binary"))
			printf("%s %s | binary %lld -> %lld bytes%s\n", op, path, olds, news, tag);
		else
			printf("%s %s | +%lld -%lld%s\n", op, path,
			       (long long)json_integer_value(json_object_get(f, "additions")),
			       (long long)json_integer_value(json_object_get(f, "deletions")), tag);
		return;
	}
	json_t *e = json_is_object(new) ? new : old;
	printf("%s %s (%s", op, path, jstr(e, "type"));
	if (jtrue(f, "type_changed"))
		printf(", was %s", jstr(old, "type"));
	if (jtrue(f, "mode_changed"))
		printf(", mode %s -> %s", jstr(old, "mode"), jstr(new, "mode"));
	else
		printf(", mode %s", jstr(e, "mode"));
	printf(")%s\n", tag);
	const char *to = json_string_value(json_object_get(old, "target")),
		   *tn = json_string_value(json_object_get(new, "target"));
	if (to || tn)
		printf("    symlink %s -> %s\n", to ? to : "(none)", tn ? tn : "(none)");
	if (jtrue(f, "binary")) {
		const char *a = json_string_value(json_object_get(old, "sha256")),
			   *b = json_string_value(json_object_get(new, "sha256"));
		printf("    binary: %lld bytes %s -> %lld bytes %s\n", olds, a ? a : "-", news,
		       b ? b : "-");
	}
	json_t *u = json_object_get(f, "unified");
	if (json_is_string(u))
		print_unified(u);
}

struct review_arg {
	const char *draft;
	bool stat;
};

static int review_local(struct al_store *st, const void *arg, json_t **out, struct al_error *err)
{
	const struct review_arg *a = arg;
	return view_review(st, a->draft, a->stat, out, err);
}

static const char review_help[] =
	"usage: airlock review DRAFT [--json] [--stat]\n\n"
	"Every change of a draft against its base: one header line per path\n"
	"(A/M/D, type, mode), then a unified diff for text files, each hunk numbered\n"
	"on its header ([hunk N]: what apply --hunks PATH=N names); binary files (or\n"
	"over 8 MiB) with sizes and digests. A decided draft first says its state\n"
	"(applied, partially_applied, rejected, empty) and tags each path [applied],\n"
	"[partially_applied: hunks 1,3] or [discarded]; a draft whose run was\n"
	"cancelled, timed out, ran out of memory or hit its disk limit says so\n"
	"(\"warning: ...\"), naming the files the disk limit cut. --stat: one line per\n"
	"path with +added -removed lines and a total. --json: {draft, project, state,\n"
	"base, head, applied, partial, discarded, run, marks, warnings[, disk_limit],\n"
	"files:[{op, path, old, new, binary, additions, deletions, hunks_selectable,\n"
	"outcome[, applied_hunks][, cut], unified, hunks:[{number, header, lines,\n"
	"side_by_side:[{left, right}]}]}], stat}.\n";

int cmd_review(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stat", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool stat = false;
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': cli->json = true; break;
		case 's': stat = true; break;
		case 'h': fputs(review_help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cli, "expected a draft id");
	json_t *doc;
	char path[256], esc[128];
	snprintf(path, sizeof(path), "/drafts/%s/review%s",
		 cli_path_escape(argv[optind], esc, sizeof(esc)), stat ? "?stat=1" : "");
	struct review_arg ra = { argv[optind], stat };
	int rc = cli_fetch(cli, path, review_local, &ra, &doc);
	if (rc >= 0)
		return rc;
	if (cli->json)
		return cli_json_print(doc);
	size_t i;
	json_t *f;
	/* what the reviewer must know first: a decision taken, a run cut short */
	const char *state = jstr(doc, "state");
	long long na = json_integer_value(json_object_get(doc, "applied")),
		  nd = json_integer_value(json_object_get(doc, "discarded"));
	if (strcmp(state, AL_DRAFT_OPEN) != 0) {
		printf("draft %s is %s", jstr(doc, "draft"), state);
		long long np = json_integer_value(json_object_get(doc, "partial"));
		if (na + nd && np)
			printf(": %lld applied (%lld in part), %lld discarded", na, np, nd);
		else if (na + nd)
			printf(": %lld applied, %lld discarded", na, nd);
		printf("\n");
	}
	json_array_foreach(json_object_get(doc, "warnings"), i, f)
		printf("warning: %s\n", cli_esc(json_string_value(f), ""));
	json_array_foreach(json_object_get(doc, "files"), i, f)
		file_text(f, stat);
	json_t *st = json_object_get(doc, "stat");
	if (stat)
		printf("%lld files changed, %lld insertions(+), %lld deletions(-)\n",
		       (long long)json_integer_value(json_object_get(st, "files")),
		       (long long)json_integer_value(json_object_get(st, "additions")),
		       (long long)json_integer_value(json_object_get(st, "deletions")));
	json_decref(doc);
	return 0;
}
