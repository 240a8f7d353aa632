/* airlock review DRAFT [--json] [--stat] [--side-by-side] */
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>
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
 * ("@@ -1,3 +1,4 @@ [hunk 1] context"): what apply --hunks PATH=N names;
 * coloured line by line when colour is on (the text is the review's,
 * already safe for a terminal).  A line that starts "@@ -" is a hunk
 * header: a diff's content lines start with ' ', '+', '-' or '\\'. */
static void print_unified(json_t *uj)
{
	const char *u = json_string_value(uj);
	size_t n = json_string_length(uj);
	bool colour = *cli_color(CLI_RESET);
	unsigned hunk = 0;
	while (n) {
		const char *nl = memchr(u, '\n', n);
		size_t len = nl ? (size_t)(nl - u) + 1 : n, body = nl ? len - 1 : len;
		const char *c = !colour ? ""
				: !strncmp(u, "+++ ", 4) || !strncmp(u, "--- ", 4) ||
						!strncmp(u, "diff ", 5) || !strncmp(u, "index ", 6)
					? CLI_BOLD
				: u[0] == '+'          ? CLI_GREEN
				: u[0] == '-'          ? CLI_RED
				: !strncmp(u, "@@", 2) ? CLI_CYAN
						       : "";
		const char *close = body > 4 && !memcmp(u, "@@ -", 4)
					    ? memmem(u + 4, body - 4, " @@", 3)
					    : NULL;
		fputs(c, stdout);
		if (close) {
			fwrite(u, 1, (size_t)(close + 3 - u), stdout);
			printf(" [hunk %u]", ++hunk);
			fwrite(close + 3, 1, (size_t)(u + body - (close + 3)), stdout);
		} else
			fwrite(u, 1, body, stdout);
		printf("%s%s", *c ? CLI_RESET : "", nl ? "\n" : "");
		u += len;
		n -= len;
	}
}

/* --side-by-side: the width of the terminal (or $COLUMNS, else 160) */
static int sbs_width;

static int terminal_width(void)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	int n = c ? atoi(c) : 0;
	return n >= 40 && n <= 1000 ? n : 160;
}

/* text in exactly w columns: cut at a character boundary (">" marks a cut),
 * padded with spaces; a character is taken as one column */
static void cell(const char *text, int w, const char *colour, bool pad)
{
	const char *t = text ? text : "";
	int cols = 0;
	size_t i = 0, n = strlen(t);
	while (i < n && cols < w) {
		size_t next = i + 1;
		while (next < n && ((unsigned char)t[next] & 0xc0) == 0x80)
			next++;
		if (cols == w - 1 && next < n)
			break;
		i = next;
		cols++;
	}
	bool cut = i < n;
	printf("%s%.*s%s%s%*s", colour, (int)i, t, cut ? ">" : "", *colour ? CLI_RESET : "",
	       pad ? w - cols - (cut ? 1 : 0) : 0, "");
}

/* the hunks' side_by_side rows: old line | new line, each half of the width */
static void side_by_side(json_t *hunks, int width)
{
	int half = (width - 3) / 2, text_w = half - 6;
	if (text_w < 8)
		text_w = 8;
	size_t i, j;
	json_t *h, *row;
	json_array_foreach(hunks, i, h) {
		const char *hdr = json_string_value(json_object_get(h, "header"));
		printf("%s%.*s%s\n", cli_color(CLI_CYAN), hdr ? (int)strcspn(hdr, "\n") : 0,
		       hdr ? cli_esc(hdr, "") : "", cli_color(CLI_RESET));
		json_array_foreach(json_object_get(h, "side_by_side"), j, row) {
			json_t *l = json_object_get(row, "left"),
			       *r = json_object_get(row, "right");
			const char *lt = json_string_value(json_object_get(l, "text")),
				   *rt = json_string_value(json_object_get(r, "text"));
			bool same = lt && rt && !strcmp(lt, rt);
			char mark = !json_is_object(l)   ? '>'
				    : !json_is_object(r) ? '<'
				    : same               ? ' '
							 : '|';
			if (json_is_object(l))
				printf("%5lld ",
				       (long long)json_integer_value(json_object_get(l, "no")));
			else
				printf("      ");
			cell(json_is_object(l) ? cli_esc(lt, "") : "", text_w,
			     same ? "" : cli_color(CLI_RED), true);
			printf(" %c ", mark);
			if (json_is_object(r))
				printf("%5lld ",
				       (long long)json_integer_value(json_object_get(r, "no")));
			else
				printf("      ");
			if (json_is_object(r))
				cell(cli_esc(rt, ""),
				     width - text_w - 15 < 8 ? 8 : width - text_w - 15,
				     same ? "" : cli_color(CLI_GREEN), false);
			printf("\n");
		}
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
	const char *opc = cli_state_color(op), *off = *opc ? CLI_RESET : "";
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
			printf("%s%s%s %s | binary %lld -> %lld bytes%s\n", opc, op, off, path,
			       olds, news, tag);
		else
			printf("%s%s%s %s | +%lld -%lld%s\n", opc, op, off, path,
			       (long long)json_integer_value(json_object_get(f, "additions")),
			       (long long)json_integer_value(json_object_get(f, "deletions")), tag);
		return;
	}
	json_t *e = json_is_object(new) ? new : old;
	printf("%s%s%s%s %s (%s", cli_color(CLI_BOLD), opc, op, off, path, jstr(e, "type"));
	if (jtrue(f, "type_changed"))
		printf(", was %s", jstr(old, "type"));
	if (jtrue(f, "mode_changed"))
		printf(", mode %s -> %s", jstr(old, "mode"), jstr(new, "mode"));
	else
		printf(", mode %s", jstr(e, "mode"));
	printf(")%s%s\n", tag, cli_color(CLI_RESET));
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
	if (sbs_width && json_array_size(json_object_get(f, "hunks")))
		side_by_side(json_object_get(f, "hunks"), sbs_width);
	else if (json_is_string(u))
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

static int run_local(struct al_store *st, const void *arg, json_t **out, struct al_error *err)
{
	return view_run(st, arg, false, 0, out, err);
}

/* Where the draft came from: its run (command, principal, exit, duration,
 * limits hit, neutralised files, contract verdict), base and state. */
static void header(struct cli *cli, json_t *doc)
{
	const char *state = jstr(doc, "state");
	printf("draft     %s of %s, %s%s%s\n", cli_short(jstr(doc, "draft")), jstr(doc, "project"),
	       cli_state_color(state), state, *cli_state_color(state) ? CLI_RESET : "");
	printf("base      %s\n", cli_short(jstr(doc, "base")));
	const char *run = json_string_value(json_object_get(doc, "run"));
	json_t *rec = NULL;
	char path[256], esc[128];
	if (run) {
		snprintf(path, sizeof(path), "/runs/%s", cli_path_escape(run, esc, sizeof(esc)));
		/* a header without the record is still a review: errors are quiet */
		bool json = cli->json;
		int saved = dup(2), devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (saved >= 0 && devnull >= 0)
			dup2(devnull, 2);
		if (cli_fetch(cli, path, run_local, run, &rec) >= 0)
			rec = NULL;
		if (saved >= 0) {
			dup2(saved, 2);
			close(saved);
		}
		if (devnull >= 0)
			close(devnull);
		cli->json = json;
	}
	if (!rec)
		return;
	printf("run       %s:", cli_short(run));
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(rec, "argv"), i, v)
		printf(" %s", cli_esc(json_string_value(v), "?"));
	const char *principal = json_string_value(json_object_get(rec, "principal"));
	printf("\nby        %s%s%s\n", jstr(rec, "author"), principal ? ", principal " : "",
	       principal ? cli_esc(principal, "") : "");
	long long code = json_integer_value(json_object_get(rec, "exit_code"));
	const char *outcome = json_string_value(json_object_get(rec, "outcome"));
	json_t *usage = json_object_get(rec, "usage");
	long long wall = json_integer_value(json_object_get(usage, "wall_ms"));
	char took[32];
	if (wall < 1000)
		snprintf(took, sizeof(took), "%lld ms", wall);
	else
		snprintf(took, sizeof(took), "%.1f s", (double)wall / 1000.0);
	printf("exit      %lld%s%s, %s, started %s\n", code, outcome ? " " : "",
	       outcome ? cli_esc(outcome, "") : "", took,
	       cli_when(json_integer_value(json_object_get(rec, "started")), 0));
	const char *hit[4];
	size_t nhit = 0;
	if (json_is_true(json_object_get(rec, "timed_out")))
		hit[nhit++] = "time";
	if (json_is_true(json_object_get(rec, "oom")))
		hit[nhit++] = "memory";
	if (json_is_true(json_object_get(rec, "disk_limit_hit")))
		hit[nhit++] = "disk";
	if (json_integer_value(json_object_get(rec, "dropped")))
		hit[nhit++] = "output";
	if (nhit) {
		printf("limits    %s", cli_color(CLI_RED));
		for (size_t k = 0; k < nhit; k++)
			printf("%s%s", k ? ", " : "", hit[k]);
		printf("%s hit\n", cli_color(CLI_RESET));
	}
	json_array_foreach(json_object_get(rec, "neutralised"), i, v)
		printf("%s %s\n", i ? "         " : "neutralised",
		       cli_esc(json_string_value(v), "?"));
	json_t *ct = json_object_get(rec, "contract");
	if (json_is_object(ct)) {
		const char *verdict = jstr(ct, "verdict");
		printf("contract  %s%s%s\n", cli_state_color(verdict), verdict,
		       *cli_state_color(verdict) ? CLI_RESET : "");
	}
	printf("\n");
	json_decref(rec);
}

/* Keep the files at or under one of paths (PATH... of review): the
 * document's files and its stat count only those. */
static void filter_paths(json_t *doc, char **paths, int n)
{
	json_t *files = json_object_get(doc, "files"), *kept = json_array();
	long long add = 0, del = 0;
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f) {
		const char *p = json_string_value(json_object_get(f, "path"));
		for (int k = 0; p && k < n; k++) {
			size_t l = strlen(paths[k]);
			if (!strncmp(p, paths[k], l) && (p[l] == 0 || p[l] == '/')) {
				json_array_append(kept, f);
				add += json_integer_value(json_object_get(f, "additions"));
				del += json_integer_value(json_object_get(f, "deletions"));
				break;
			}
		}
	}
	json_object_set_new(doc, "files", kept);
	json_t *st = json_object_get(doc, "stat");
	if (json_is_object(st)) {
		json_object_set_new(st, "files", json_integer((json_int_t)json_array_size(kept)));
		json_object_set_new(st, "additions", json_integer(add));
		json_object_set_new(st, "deletions", json_integer(del));
	}
}

static const char review_help[] =
	"usage: airlock review DRAFT [PATH...] [--json] [--stat] [--side-by-side]\n\n"
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
	"side_by_side:[{left, right}]}]}], stat}.\n"
	"--side-by-side: the text diffs as two columns, old | new, as wide as\n"
	"the terminal ($COLUMNS, else 160 when not a terminal); '<' a removed\n"
	"line, '>' an added one, '|' a changed one, a cut line ends in '>'.\n"
	"DRAFT may be a unique prefix of a draft or run id, or @ (your last\n"
	"run). PATH...: only the changes at or under these paths (./a/ is a; the\n"
	"stat counts those). On a terminal: colour and the pager (docs/cli.md).\n";

int cmd_review(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "stat", no_argument, NULL, 's' },
		{ "side-by-side", no_argument, NULL, 'y' },
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
		case 'y': sbs_width = terminal_width(); break;
		case 'h': fputs(review_help, stdout); return 0;
		default: return cli_usage(cli, "bad option");
		}
	}
	if (argc - optind < 1)
		return cli_usage(cli, "expected a draft id");
	for (int k = optind + 1; k < argc; k++) {
		argv[k] = cli_draft_path(argv[k]);
		if (!*argv[k] || !strcmp(argv[k], ".") || !strcmp(argv[k], "./") ||
		    argv[k][0] == '/' || !strcmp(argv[k], "..") || !strncmp(argv[k], "../", 3) ||
		    strstr(argv[k], "/../") ||
		    (strlen(argv[k]) >= 3 && !strcmp(argv[k] + strlen(argv[k]) - 3, "/..")))
			return cli_usage(cli, "'%s' is not a path inside the draft",
					 cli_esc(argv[k], "?"));
	}
	json_t *doc;
	char path[256], esc[128], id[64];
	int rc = cli_id(cli, CLI_ID_RUN | CLI_ID_DRAFT, argv[optind], id, sizeof(id));
	if (rc || (rc = cli_id_check(cli, CLI_ID_RUN | CLI_ID_DRAFT, id)))
		return rc;
	snprintf(path, sizeof(path), "/drafts/%s/review%s", cli_path_escape(id, esc, sizeof(esc)),
		 stat ? "?stat=1" : "");
	struct review_arg ra = { id, stat };
	rc = cli_fetch(cli, path, review_local, &ra, &doc);
	if (rc >= 0)
		return rc;
	if (argc - optind > 1)
		filter_paths(doc, argv + optind + 1, argc - optind - 1);
	if (cli->json)
		return cli_json_print(doc);
	cli_pager(cli);
	header(cli, doc);
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
	if (!json_array_size(json_object_get(doc, "files")) && argc - optind > 1)
		printf("no changes at or under the paths given\n");
	else if (!json_array_size(json_object_get(doc, "files")))
		printf("no changes: the draft's head is its base%s\n",
		       json_is_string(json_object_get(doc, "run"))
			       ? " (its run changed nothing the draft keeps)"
			       : "");
	json_t *st = json_object_get(doc, "stat");
	if (stat)
		printf("%lld files changed, %lld insertions(+), %lld deletions(-)\n",
		       (long long)json_integer_value(json_object_get(st, "files")),
		       (long long)json_integer_value(json_object_get(st, "additions")),
		       (long long)json_integer_value(json_object_get(st, "deletions")));
	json_decref(doc);
	return 0;
}
