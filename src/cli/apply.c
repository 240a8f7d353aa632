/* airlock apply DRAFT (--accept-all | --accept PATH... | --hunks PATH=LIST... |
 * --patch | --reject-all): a draft decided, whole, by path, by hunk, or hunk
 * by hunk in the spirit of `git add -p`. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/store.h"
#include "airlock/volume.h"
#include "cli.h"
#include "airlock/util.h"

/* What the command takes: the paths (--accept, --hunks, or --patch's
 * answers) and the hunk numbers they point into. */
struct selection {
	struct al_apply_path *v;
	size_t n, cap;
	unsigned **lists; /* owned: each --hunks list */
	size_t nlists;
};

static void selection_release(struct selection *s)
{
	for (size_t i = 0; i < s->nlists; i++)
		free(s->lists[i]);
	free(s->lists);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int selection_add(struct selection *s, const char *path, unsigned *hunks, size_t n)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct al_apply_path *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	if (hunks) {
		unsigned **l = realloc(s->lists, (s->nlists + 1) * sizeof(*l));
		if (!l)
			return -1;
		s->lists = l;
		s->lists[s->nlists++] = hunks;
	}
	s->v[s->n++] = (struct al_apply_path){ path, hunks, n };
	return 0;
}

/* "PATH=1,3,5-7": the list is after the last '=' (it never holds one), so
 * any path, with ':' or '=' in it, is named exactly. */
static int parse_hunks_arg(const char *arg, char **path, unsigned **out, size_t *n)
{
	const char *eq = strrchr(arg, '=');
	*path = NULL;
	*out = NULL;
	*n = 0;
	if (!eq || eq == arg || !eq[1])
		return -1;
	size_t cap = 0;
	unsigned *v = NULL;
	for (const char *p = eq + 1; *p;) {
		char *end;
		errno = 0;
		unsigned long a = strtoul(p, &end, 10), b;
		if (end == p || *p == '-' || *p == '+' || errno || a == 0 || a > UINT32_MAX)
			goto bad;
		b = a;
		if (*end == '-') {
			const char *q = end + 1;
			b = strtoul(q, &end, 10);
			if (end == q || *q == '-' || *q == '+' || errno || b < a ||
			    b > UINT32_MAX || b - a >= (1u << 20))
				goto bad;
		}
		for (unsigned long x = a; x <= b; x++) {
			if (*n == cap) {
				cap = cap ? cap * 2 : 8;
				unsigned *w =
					cap <= (1u << 20) ? realloc(v, cap * sizeof(*w)) : NULL;
				if (!w)
					goto bad;
				v = w;
			}
			v[(*n)++] = (unsigned)x;
		}
		if (*end == ',' && end[1])
			p = end + 1;
		else if (*end)
			goto bad;
		else
			p = end;
	}
	if (!(*path = strndup(arg, (size_t)(eq - arg))))
		goto bad;
	*out = v;
	return 0;
bad:
	free(v);
	*n = 0;
	return -1;
}

/* ---- --patch: hunk by hunk ------------------------------------------------ */

struct patch_io {
	FILE *out; /* the hunks and questions (stderr with --json) */
	FILE *in;
};

static const char patch_help[] =
	"y - apply this hunk\n"
	"n - do not apply this hunk\n"
	"q - quit; do not apply this hunk or any of the remaining ones\n"
	"a - apply this hunk and all later hunks in the file\n"
	"d - do not apply this hunk or any of the later hunks in the file\n"
	"? - print help\n";

/* One answer among y n q a d; end of input is q (as git add -p takes it). */
static char ask(struct patch_io *io, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char ask(struct patch_io *io, const char *fmt, ...)
{
	char *line = NULL;
	size_t cap = 0;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		vfprintf(io->out, fmt, ap);
		va_end(ap);
		fflush(io->out);
		ssize_t len = getline(&line, &cap, io->in);
		if (len < 0) {
			fputc('\n', io->out);
			free(line);
			return 'q';
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len == 1 && strchr("ynqad", line[0])) {
			char c = line[0];
			free(line);
			return c;
		}
		fputs(patch_help, io->out);
	}
}

static const char *jstr(json_t *o, const char *k)
{
	return cli_esc(json_string_value(json_object_get(o, k)), "");
}

static void show_line(struct patch_io *io, json_t *l)
{
	json_t *t = json_object_get(l, "text");
	fputs(jstr(l, "origin"), io->out);
	cli_write_output(io->out, io->out == stdout ? 1 : 2, json_string_value(t),
			 json_string_length(t));
	fputc('\n', io->out);
	if (json_is_true(json_object_get(l, "no_newline")))
		fputs("\\ No newline at end of file\n", io->out);
}

static void show_file(struct patch_io *io, json_t *f)
{
	json_t *old = json_object_get(f, "old"), *new = json_object_get(f, "new");
	json_t *e = json_is_object(new) ? new : old;
	fprintf(io->out, "%s %s (%s", jstr(f, "op"), jstr(f, "path"), jstr(e, "type"));
	if (json_is_true(json_object_get(f, "type_changed")))
		fprintf(io->out, ", was %s", jstr(old, "type"));
	if (json_is_true(json_object_get(f, "mode_changed")))
		fprintf(io->out, ", mode %s -> %s", jstr(old, "mode"), jstr(new, "mode"));
	else
		fprintf(io->out, ", mode %s", jstr(e, "mode"));
	fprintf(io->out, ")\n");
	const char *to = json_string_value(json_object_get(old, "target")),
		   *tn = json_string_value(json_object_get(new, "target"));
	if (to || tn)
		fprintf(io->out, "    symlink %s -> %s\n", to ? cli_esc(to, "") : "(none)",
			tn ? cli_esc(tn, "") : "(none)");
	if (json_is_true(json_object_get(f, "binary")))
		fprintf(io->out, "    binary: %lld bytes -> %lld bytes\n",
			(long long)json_integer_value(json_object_get(old, "size")),
			(long long)json_integer_value(json_object_get(new, "size")));
}

static void show_hunk(struct patch_io *io, json_t *h)
{
	size_t i;
	json_t *l;
	fprintf(io->out, "@@ -%lld,%lld +%lld,%lld @@ [hunk %lld]\n",
		(long long)json_integer_value(json_object_get(h, "old_start")),
		(long long)json_integer_value(json_object_get(h, "old_lines")),
		(long long)json_integer_value(json_object_get(h, "new_start")),
		(long long)json_integer_value(json_object_get(h, "new_lines")),
		(long long)json_integer_value(json_object_get(h, "number")));
	json_array_foreach(json_object_get(h, "lines"), i, l)
		show_line(io, l);
}

/* What --patch decided of one change. */
enum answer { A_NONE, A_WHOLE, A_HUNKS, A_DERIVED };
struct decision {
	enum answer a;
	unsigned *hunks;
	size_t n;
};

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* A change with others beneath it whose new side is a directory (or that
 * deletes a directory): it goes with them, it is not asked about. */
static bool derived(json_t *files, size_t i)
{
	json_t *f = json_array_get(files, i), *nx = json_array_get(files, i + 1);
	json_t *new = json_object_get(f, "new"), *old = json_object_get(f, "old");
	const char *t = json_string_value(json_object_get(json_is_object(new) ? new : old, "type"));
	return nx && t && !strcmp(t, "dir") &&
	       under(json_string_value(json_object_get(nx, "path")),
		     json_string_value(json_object_get(f, "path")));
}

/* Ask about each change of the review document; fills d (one per file). */
static void patch_ask(struct patch_io *io, json_t *files, struct decision *d)
{
	size_t nf = json_array_size(files);
	bool quit = false;
	for (size_t i = 0; i < nf && !quit; i++) {
		json_t *f = json_array_get(files, i);
		const char *path = jstr(f, "path");
		if (derived(files, i)) {
			d[i].a = A_DERIVED;
			continue;
		}
		/* a file that replaces a directory takes what it replaces along */
		size_t skip = 0;
		while (i + 1 + skip < nf &&
		       under(json_string_value(
				     json_object_get(json_array_get(files, i + 1 + skip), "path")),
			     json_string_value(json_object_get(f, "path"))))
			skip++;
		show_file(io, f);
		json_t *hunks = json_object_get(f, "hunks");
		size_t nh = json_array_size(hunks);
		if (!json_is_true(json_object_get(f, "hunks_selectable")) || nh == 0) {
			json_t *u = json_object_get(f, "unified");
			size_t k;
			json_t *h;
			json_array_foreach(hunks, k, h)
				show_hunk(io, h);
			if (!json_is_string(u) && !nh &&
			    !json_is_true(json_object_get(f, "binary")))
				fprintf(io->out, "    (no text to show)\n");
			char c = ask(io, "Apply this change to %s [y,n,q,a,d,?]? ", path);
			d[i].a = c == 'y' || c == 'a' ? A_WHOLE : A_NONE;
			quit = c == 'q';
			i += skip;
			continue;
		}
		d[i].hunks = calloc(nh, sizeof(unsigned));
		bool all = true, rest = false, take_rest = false;
		for (size_t k = 0; k < nh && !quit && d[i].hunks; k++) {
			json_t *h = json_array_get(hunks, k);
			bool take = take_rest;
			if (!rest) {
				show_hunk(io, h);
				char c = ask(io, "(%zu/%zu) Apply this hunk to %s [y,n,q,a,d,?]? ",
					     k + 1, nh, path);
				quit = c == 'q';
				take = c == 'y' || c == 'a';
				rest = c == 'a' || c == 'd';
				take_rest = c == 'a';
			}
			if (take)
				d[i].hunks[d[i].n++] =
					(unsigned)json_integer_value(json_object_get(h, "number"));
			all = all && take;
		}
		/* every hunk: the whole change (its mode change too) */
		d[i].a = d[i].n == 0 ? A_NONE : all && d[i].n == nh ? A_WHOLE : A_HUNKS;
	}
}

/* The selection --patch's answers make: a directory change goes whole when
 * everything beneath it does (then it stands for all of them), else the
 * changes beneath it are named one by one. */
static int patch_selection(json_t *files, struct decision *d, struct selection *s)
{
	size_t nf = json_array_size(files);
	for (size_t i = nf; i-- > 0;) {
		if (d[i].a != A_DERIVED)
			continue;
		const char *p =
			json_string_value(json_object_get(json_array_get(files, i), "path"));
		bool all = true;
		for (size_t j = i + 1; j < nf && all; j++) {
			const char *q = json_string_value(
				json_object_get(json_array_get(files, j), "path"));
			if (!under(q, p))
				break;
			all = d[j].a == A_WHOLE;
		}
		d[i].a = all ? A_WHOLE : A_NONE;
	}
	const char *taken = NULL; /* the last directory taken whole */
	for (size_t i = 0; i < nf; i++) {
		const char *p =
			json_string_value(json_object_get(json_array_get(files, i), "path"));
		if (taken && under(p, taken))
			continue;
		taken = NULL;
		int r = 0;
		if (d[i].a == A_WHOLE) {
			r = selection_add(s, p, NULL, 0);
			taken = p;
		} else if (d[i].a == A_HUNKS) {
			r = selection_add(s, p, d[i].hunks, d[i].n);
			d[i].hunks = NULL; /* s owns it */
		}
		if (r < 0)
			return -1;
	}
	return 0;
}

struct review_arg {
	const char *draft;
};

static int review_local(struct al_store *st, const void *arg, json_t **out, struct al_error *err)
{
	const struct review_arg *a = arg;
	return view_review(st, a->draft, false, out, err);
}

/* --patch: the draft's review, a question per hunk, the selection.  -1 to
 * go on with s, else the exit code. */
static int patch_mode(struct cli *cli, const char *draft, struct selection *s, json_t **review)
{
	char path[256], esc[128];
	snprintf(path, sizeof(path), "/drafts/%s/review", cli_path_escape(draft, esc, sizeof(esc)));
	struct review_arg ra = { draft };
	int rc = cli_fetch(cli, path, review_local, &ra, review);
	if (rc >= 0)
		return rc;
	/* refused as the apply would refuse it, before any question */
	const char *state = json_string_value(json_object_get(*review, "state"));
	if (state && strcmp(state, AL_DRAFT_OPEN) != 0) {
		struct al_error err = { 0 };
		if (!strcmp(state, AL_DRAFT_EMPTY))
			al_fail(&err, AL_ESTATE, 0,
				"draft %s is empty (its run changed nothing): nothing to apply",
				jstr(*review, "draft"));
		else
			al_fail(&err, AL_ESTATE, 0, "draft %s was already %s",
				jstr(*review, "draft"), state);
		return cli_error(cli, &err);
	}
	json_t *files = json_object_get(*review, "files");
	size_t nf = json_array_size(files);
	struct decision *d = calloc(nf ? nf : 1, sizeof(*d));
	if (!d) {
		struct al_error err = { 0 };
		al_fail(&err, AL_ENOMEM, ENOMEM, "apply");
		return cli_error(cli, &err);
	}
	struct patch_io io = { cli->json ? stderr : stdout, stdin };
	patch_ask(&io, files, d);
	rc = patch_selection(files, d, s) < 0 ? 1 : -1;
	for (size_t i = 0; i < nf; i++)
		free(d[i].hunks);
	free(d);
	if (rc >= 0) {
		struct al_error err = { 0 };
		al_fail(&err, AL_ENOMEM, ENOMEM, "apply");
		return cli_error(cli, &err);
	}
	if (s->n == 0) {
		fprintf(stderr, "nothing selected: draft %s stays open\n", jstr(*review, "draft"));
		if (cli->json)
			return cli_json_print(json_pack("{s:s,s:s}", "draft",
							jstr(*review, "draft"), "state",
							AL_DRAFT_OPEN));
		return 0;
	}
	return -1;
}

/* ---- the command --------------------------------------------------------------- */

static const char apply_help[] =
	"usage: airlock apply DRAFT (--accept-all | --accept PATH... | --hunks PATH=LIST...\n"
	"                            | --patch | --reject-all)\n"
	"                     [--strategy S] [-m MSG] [--author A] [--json]\n\n"
	"Apply a draft to its project's live head in one commit: every change\n"
	"(--accept-all); only the changes at or under the listed paths (--accept; a\n"
	"path the draft does not change is an error); only some hunks of a text file\n"
	"(--hunks PATH=1,3 or PATH=2-4: the numbers review prints as [hunk N]; the\n"
	"list is after the last '=', so PATH may hold ':' or '='); --accept and\n"
	"--hunks combine. --patch asks, hunk by hunk, y (apply), n (skip), q (quit),\n"
	"a (this and the file's later hunks), d (skip the file's later hunks), ?\n"
	"(help), reading the answers from stdin; end of input is q. --reject-all\n"
	"discards the draft. The commit uses --strategy (default rebase_if_disjoint;\n"
	"strict, conflict_copy, merge_lines: also merges text files both sides changed\n"
	"in non-overlapping hunks). Only an open draft can be decided: an applied,\n"
	"partially_applied, rejected or empty draft is refused (exit 9), and so is an\n"
	"accept that would change nothing in the head (\"nothing to apply\", exit 9).\n"
	"Prints the new head; on stderr \"applied 2 of 8 changes; 6 discarded\" and a\n"
	"warning for a draft whose run was cancelled or hit a limit.\n";

static int apply_remote(struct cli *cli, const char *draft, const char *mode_name,
			enum al_strategy strategy, const char *msg, const struct selection *s)
{
	struct al_error err = { 0 };
	json_t *body = json_pack("{s:s,s:s}", "mode", mode_name, "strategy",
				 al_strategy_name(strategy)),
	       *doc = NULL;
	json_t *pa = json_array();
	for (size_t i = 0; i < s->n; i++) {
		if (!s->v[i].hunks) {
			json_array_append_new(pa, json_string(s->v[i].path));
			continue;
		}
		json_t *h = json_array();
		for (size_t k = 0; k < s->v[i].nhunks; k++)
			json_array_append_new(h, json_integer(s->v[i].hunks[k]));
		json_array_append_new(pa, json_pack("{s:s,s:o}", "path", s->v[i].path, "hunks", h));
	}
	if (s->n)
		json_object_set_new(body, "paths", pa);
	else
		json_decref(pa);
	if (msg)
		json_object_set_new(body, "message", json_string(msg));
	char path[256], esc[128];
	snprintf(path, sizeof(path), "/drafts/%s/apply", cli_path_escape(draft, esc, sizeof(esc)));
	int r = cli_http(cli, "POST", path, body, NULL, NULL, &doc, &err);
	json_decref(body);
	return r < 0 ? cli_remote_error(cli, &err, doc) : cli_commit_print(cli, doc);
}

static int apply_local(struct cli *cli, const char *draft, enum al_apply_mode mode,
		       const char *mode_name, enum al_strategy strategy, const char *msg,
		       const char *author, const struct selection *s)
{
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	/* the draft's own id, also when it is named by its run's */
	struct al_draft_info d;
	int r = al_draft_get(st, draft, &d, &err);
	if (r == 0)
		al_oid_fmt(&d.base, cli->change_base); /* for a conflict's advice */
	char message[256];
	snprintf(message, sizeof(message), "%s", msg ? msg : "");
	if (!msg)
		snprintf(message, sizeof(message), "%s draft %s", mode_name, r == 0 ? d.id : draft);
	struct al_commit_opts o = { .strategy = strategy,
				    .author = cli_author(author),
				    .message = message };
	struct al_commit_result res = { 0 };
	if (r == 0)
		r = al_draft_apply_sel(st, draft, mode, s->v, s->n, &o, &res, &err);
	json_t *extra = view_apply(r == 0 ? d.id : draft, mode_name, al_strategy_name(strategy),
				   s->v, s->n);
	if (r == 0)
		view_apply_result(st, d.id, extra, &res);
	al_store_close(st);
	int rc = cli_commit_report(cli, r, &res, &err, extra);
	al_commit_result_release(&res);
	return rc;
}

int cmd_apply(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "accept-all", no_argument, NULL, 'A' },
		{ "accept", required_argument, NULL, 'p' },
		{ "hunks", required_argument, NULL, 'H' },
		{ "patch", no_argument, NULL, 'P' },
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
	int c, nmodes = 0, rc = -1;
	bool patch = false, selecting = false;
	const char *msg = NULL, *author = NULL;
	struct selection s = { 0 };
	char **owned = calloc((size_t)argc + 1, sizeof(char *)); /* --hunks' paths */
	size_t nowned = 0;
	struct al_error err = { 0 };
	json_t *review = NULL;
	if (!owned)
		return 1;
	optind = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, "hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'A':
			mode = AL_ACCEPT_ALL;
			nmodes++;
			break;
		case 'R':
			mode = AL_REJECT_ALL;
			nmodes++;
			break;
		case 'P':
			patch = true;
			mode = AL_ACCEPT_SELECTED;
			nmodes++;
			break;
		case 'p':
		case 'H': {
			nmodes += !selecting;
			selecting = true;
			mode = AL_ACCEPT_SELECTED;
			char *path = NULL;
			unsigned *hunks = NULL;
			size_t n = 0;
			if (c == 'H' && parse_hunks_arg(optarg, &path, &hunks, &n) < 0) {
				rc = cli_usage(cli,
					       "--hunks '%s': expected PATH=LIST, LIST as 1,3 or "
					       "2-4 (hunk numbers from 1)",
					       cli_esc(optarg, ""));
				break;
			}
			if (path)
				owned[nowned++] = path;
			if (selection_add(&s,
					  c == 'H' ? cli_draft_path(path) : cli_draft_path(optarg),
					  hunks, n) < 0) {
				free(hunks);
				rc = cli_usage(cli, "out of memory");
			}
			break;
		}
		case 'm': msg = optarg; break;
		case 'a': author = optarg; break;
		case 'j': cli->json = true; break;
		case 's':
			if (al_strategy_parse(optarg, &strategy, &err) < 0)
				rc = cli_usage(cli, "%s", err.msg);
			break;
		case 'h':
			fputs(apply_help, stdout);
			rc = 0;
			break;
		default: rc = cli_usage(cli, "bad option");
		}
	}
	const char *draft = optind < argc ? argv[optind] : NULL;
	char draft_id[64];
	if (rc < 0 && !draft)
		rc = cli_usage(cli, "expected the draft id");
	/* a unique prefix, a run's id or @ (docs/cli.md, "Names") */
	if (rc < 0) {
		int idrc =
			cli_id(cli, CLI_ID_RUN | CLI_ID_DRAFT, draft, draft_id, sizeof(draft_id));
		if (idrc || (idrc = cli_id_check(cli, CLI_ID_RUN | CLI_ID_DRAFT, draft_id)))
			rc = idrc;
		draft = draft_id;
	}
	for (int i = optind + 1; rc < 0 && i < argc; i++) {
		if (!selecting)
			rc = cli_usage(cli, "unexpected argument '%s'", argv[i]);
		else if (selection_add(&s, cli_draft_path(argv[i]), NULL, 0) < 0)
			rc = cli_usage(cli, "out of memory");
	}
	if (rc < 0 && nmodes != 1)
		rc = cli_usage(cli, "give exactly one of --accept-all, --accept PATH... or --hunks "
				    "PATH=LIST..., --patch, --reject-all");
	const char *mode_name = mode == AL_ACCEPT_ALL   ? "accept_all"
				: mode == AL_REJECT_ALL ? "reject_all"
							: "accept_selected";
	if (rc < 0 && patch)
		rc = patch_mode(cli, draft, &s, &review);
	if (rc < 0)
		rc = cli->server
			     ? apply_remote(cli, draft, mode_name, strategy, msg, &s)
			     : apply_local(cli, draft, mode, mode_name, strategy, msg, author, &s);
	json_decref(review); /* --patch's selection borrowed its paths */
	selection_release(&s);
	for (size_t i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	return rc;
}
