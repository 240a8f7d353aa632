/* airlock replay: a recorded run executed again from its record, and the
 * verdict on whether it did the same (docs/determinism.md). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "airlock/replay.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "airlock/util.h"
#include "cli.h"
#include "ops.h"

static const char replay_help[] =
	"usage: airlock replay RUN [--on-head] [--secret K[=V]]... [--json]\n"
	"\n"
	"Run a recorded run again, from its record: the same base snapshot, image,\n"
	"command, environment, limits and network policy, in a new sandbox, into a new\n"
	"draft in the original's group. Then compare: exit status, stdout, stderr and\n"
	"every changed path (change kind, type, mode, content digest).\n"
	"\n"
	"  --on-head       run the same command on the project's head now instead of\n"
	"                  the original's base; the two drafts' changes are compared\n"
	"                  path by path\n"
	"  --secret K[=V]  a secret the original had (without =V: taken from airlock's\n"
	"                  own environment); every one it had must be given again,\n"
	"                  secrets are never recorded. The record's keyed digest says\n"
	"                  whether the value is the original's\n"
	"  --json          the replay's run record, with its verdict and output\n"
	"\n"
	"The verdict: identical (exit 0); divergent (exit 20), each difference with the\n"
	"first differing line of an output, a unified diff (text) or sizes and digests\n"
	"(binary) of a path, and its likely cause when that can be told; not_replayable\n"
	"(exit 21) when an input is gone (a garbage-collected image or snapshot) or a\n"
	"secret was not given: recorded with the reason, no sandbox started.\n"
	"docs/determinism.md says what a run has pinned and what it cannot.\n";

static const char *jstr(json_t *o, const char *k)
{
	return cli_esc(json_string_value(json_object_get(o, k)), "");
}

/* One side of a path difference, for people: "A file 0644 12 bytes sha256:…" */
static void side_text(json_t *s, char *out, size_t n)
{
	if (!json_is_object(s)) {
		snprintf(out, n, "absent");
		return;
	}
	json_t *size = json_object_get(s, "size");
	const char *op = json_string_value(json_object_get(s, "op"));
	snprintf(out, n, "%s%s%s%s%s", op ? op : "", op ? " " : "",
		 json_object_get(s, "type") ? jstr(s, "type") : "deleted",
		 json_object_get(s, "mode") ? " " : "", jstr(s, "mode"));
	size_t used = strlen(out);
	if (json_is_integer(size))
		snprintf(out + used, n - used, " %lld bytes %s",
			 (long long)json_integer_value(size), jstr(s, "sha256"));
}

static void print_hint(json_t *d)
{
	if (json_object_get(d, "hint"))
		printf("    likely cause (%s): %s\n", jstr(d, "hint"), jstr(d, "hint_text"));
}

static void print_output_diff(json_t *d)
{
	const char *what = jstr(d, "what");
	json_t *line = json_object_get(d, "line");
	if (!json_is_integer(line)) {
		printf("  %s differs: %lld bytes %s -> %lld bytes %s\n", what,
		       (long long)json_integer_value(json_object_get(d, "original_bytes")),
		       json_is_string(json_object_get(d, "original_sha256"))
			       ? jstr(d, "original_sha256")
			       : "(none)",
		       (long long)json_integer_value(json_object_get(d, "replay_bytes")),
		       json_is_string(json_object_get(d, "replay_sha256"))
			       ? jstr(d, "replay_sha256")
			       : "(none)");
	} else {
		printf("  %s differs at line %lld:\n", what, (long long)json_integer_value(line));
		json_t *a = json_object_get(d, "original"), *b = json_object_get(d, "replay");
		printf("    original: %s\n",
		       json_is_string(a) ? cli_esc(json_string_value(a), "") : "(no such line)");
		printf("    replay:   %s\n",
		       json_is_string(b) ? cli_esc(json_string_value(b), "") : "(no such line)");
	}
	print_hint(d);
}

static void print_path_diff(json_t *d)
{
	char a[256], b[256];
	json_t *what = json_object_get(d, "differs"), *w;
	size_t i;
	printf("  %s:", jstr(d, "path"));
	json_array_foreach(what, i, w) {
		const char *s = cli_esc(json_string_value(w), "?");
		printf("%s ", i ? "," : "");
		if (!strcmp(s, "present"))
			/* the side that changed it has the change's op */
			printf("changed by the %s only",
			       json_object_get(json_object_get(d, "original"), "op") ? "original"
										     : "replay");
		else if (!strcmp(s, "kind"))
			printf("a different kind of change");
		else
			printf("%s differs", s);
	}
	printf("\n");
	side_text(json_object_get(d, "original"), a, sizeof(a));
	side_text(json_object_get(d, "replay"), b, sizeof(b));
	printf("    original: %s\n    replay:   %s\n", a, b);
	if (json_object_get(d, "original_target") || json_object_get(d, "replay_target"))
		printf("    symlink %s -> %s\n",
		       json_is_string(json_object_get(d, "original_target"))
			       ? jstr(d, "original_target")
			       : "(none)",
		       json_is_string(json_object_get(d, "replay_target"))
			       ? jstr(d, "replay_target")
			       : "(none)");
	if (json_is_true(json_object_get(d, "binary")))
		printf("    binary: sizes and digests above\n");
	print_hint(d);
	json_t *u = json_object_get(d, "unified");
	if (json_is_string(u)) {
		/* the command's bytes: on a terminal only text and colour pass */
		fflush(stdout);
		cli_write_output(stdout, 1, json_string_value(u), json_string_length(u));
		if (json_is_true(json_object_get(d, "unified_truncated")))
			printf("    (diff cut at %u KiB)\n", 16u);
	}
}

/* The verdict, for people; returns the exit status it stands for. */
static int print_verdict(json_t *rec)
{
	json_t *v = json_object_get(rec, "verdict");
	const char *result = jstr(v, "result");
	printf("replay %s of %s%s: %s", jstr(rec, "id"), jstr(rec, "replay_of"),
	       json_is_true(json_object_get(v, "on_head")) ? " (on the project's head)" : "",
	       result);
	if (!strcmp(result, "not_replayable")) {
		printf(": %s\n", jstr(v, "reason"));
		return AL_REPLAY_EXIT_NOT_REPLAYABLE;
	}
	json_t *diffs = json_object_get(v, "differences"), *d;
	size_t i, n = json_array_size(diffs);
	if (n)
		printf(", %zu difference%s", n, n == 1 ? "" : "s");
	printf("\n");
	json_array_foreach(diffs, i, d) {
		const char *what = jstr(d, "what");
		if (!strcmp(what, "path")) {
			print_path_diff(d);
		} else if (!strcmp(what, "stdout") || !strcmp(what, "stderr")) {
			print_output_diff(d);
		} else if (!strcmp(what, "exit_code")) {
			json_t *a = json_object_get(d, "original"),
			       *b = json_object_get(d, "replay");
			printf("  exit status: %s%lld -> %s%lld\n", json_is_null(a) ? "none " : "",
			       (long long)json_integer_value(a), json_is_null(b) ? "none " : "",
			       (long long)json_integer_value(b));
			print_hint(d);
		} else {
			printf("  %s: %s -> %s\n", what, jstr(d, "original"), jstr(d, "replay"));
			print_hint(d);
		}
	}
	json_t *unlisted = json_object_get(v, "paths_unlisted");
	if (json_is_integer(unlisted))
		printf("  … and %lld more paths differ (not listed)\n",
		       (long long)json_integer_value(unlisted));
	json_array_foreach(json_object_get(v, "secrets"), i, d)
		if (!json_is_true(json_object_get(d, "same")))
			printf("  secret %s: not the original's value\n", jstr(d, "name"));
	if (json_is_string(json_object_get(rec, "draft")))
		printf("review: airlock review %s\n", jstr(rec, "id"));
	return !strcmp(result, "identical") ? 0 : AL_REPLAY_EXIT_DIVERGENT;
}

static int replay_remote(struct cli *cli, const char *run, bool on_head, const char *const *secrets,
			 json_t **rec, struct al_error *err)
{
	json_t *body = json_pack("{s:b,s:b}", "on_head", on_head, "wait", true);
	json_t *sec = json_array();
	for (size_t i = 0; secrets[i]; i++) {
		const char *eq = strchr(secrets[i], '=');
		json_array_append_new(sec, json_pack("{s:s%,s:s}", "name", secrets[i],
						     (size_t)(eq - secrets[i]), "value", eq + 1));
	}
	json_object_set_new(body, "secrets", sec);
	char path[128], esc[80];
	snprintf(path, sizeof(path), "/runs/%s/replay", cli_path_escape(run, esc, sizeof(esc)));
	int r = cli_http(cli, "POST", path, body, NULL, NULL, rec, err);
	size_t i;
	json_t *v;
	json_array_foreach(sec, i, v) { /* the request held the values */
		json_t *val = json_object_get(v, "value");
		explicit_bzero((char *)json_string_value(val), json_string_length(val));
	}
	json_decref(body);
	return r;
}

static bool secret_name_ok(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

int cmd_replay(struct cli *cli, int argc, char **argv)
{
	enum { O_ON_HEAD = 256, O_SECRET, O_JSON };
	static const struct option opts[] = { { "on-head", no_argument, NULL, O_ON_HEAD },
					      { "secret", required_argument, NULL, O_SECRET },
					      { "json", no_argument, NULL, O_JSON },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	bool on_head = false;
	const char **secrets = calloc((size_t)argc + 1, sizeof(char *));
	char **bufs = calloc((size_t)argc + 1, sizeof(char *));
	size_t ns = 0, nb = 0;
	int c, rc = secrets && bufs ? -1 : 1;
	optind = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_ON_HEAD: on_head = true; break;
		case O_JSON: cli->json = true; break;
		case O_SECRET: {
			const char *eq = strchr(optarg, '=');
			size_t nl = eq ? (size_t)(eq - optarg) : strlen(optarg);
			if (!secret_name_ok(optarg, nl)) {
				char name[65]; /* never the value: it may be the secret */
				snprintf(name, sizeof(name), "%.*s", (int)(nl < 64 ? nl : 64),
					 optarg);
				rc = cli_usage(cli,
					       "--secret: bad name '%s' (NAME[=VALUE], NAME "
					       "[A-Za-z_][A-Za-z0-9_]*)",
					       cli_esc(name, ""));
				break;
			}
			if (eq) {
				secrets[ns++] = optarg;
				break;
			}
			const char *v = getenv(optarg);
			char *b;
			if (!v)
				rc = cli_usage(
					cli,
					"--secret %s: no such variable in airlock's environment",
					optarg);
			else if (asprintf(&b, "%s=%s", optarg, v) < 0)
				rc = 1;
			else
				secrets[ns++] = bufs[nb++] = b;
			break;
		}
		case 'h':
			printf("%s", replay_help);
			rc = 0;
			break;
		default: rc = cli_usage(cli, "bad option"); break;
		}
	}
	if (rc < 0 && argc - optind != 1)
		rc = cli_usage(cli,
			       argc - optind < 1 ? "expected a run id"
						 : "expected one run id, not '%s' too",
			       argc - optind > 1 ? argv[optind + 1] : "");
	json_t *rec = NULL;
	struct al_error err = { 0 };
	if (rc < 0 && cli->server) {
		if (replay_remote(cli, argv[optind], on_head, secrets, &rec, &err) < 0)
			rc = cli_remote_error(cli, &err, rec), rec = NULL;
		else
			json_object_del(rec, "state");
	} else if (rc < 0) {
		struct al_store *st = NULL;
		char ibuf[4200];
		struct al_run_opts o = { .author = cli_author(NULL),
					 .init_path = ops_init_path(ibuf, sizeof(ibuf)),
					 .guest_dir = ops_guest_dir() };
		struct al_replay_opts ro = { .of = argv[optind],
					     .on_head = on_head,
					     .secrets = secrets };
		struct al_run_info info = { 0 };
		struct sigaction old[3];
		if (cli_open(cli, &st, &err) < 0) {
			rc = cli_error(cli, &err);
		} else {
			o.cancel_fd = cli_cancel_on_signals(old);
			int r = al_replay(st, &ro, &o, &info, &err);
			cli_cancel_restore(old);
			if (r < 0 || view_run(st, info.id, true, SIZE_MAX, &rec, &err) < 0)
				rc = cli_error(cli, &err);
			al_run_info_release(&info);
		}
		al_store_close(st);
	}
	if (rc < 0) {
		const char *v = json_string_value(
			json_object_get(json_object_get(rec, "verdict"), "result"));
		rc = !v || !strcmp(v, "identical") ? 0
		     : !strcmp(v, "divergent")     ? AL_REPLAY_EXIT_DIVERGENT
						   : AL_REPLAY_EXIT_NOT_REPLAYABLE;
		if (cli->server == NULL && cli_cancel_signal() &&
		    json_is_true(json_object_get(rec, "cancelled")))
			rc = 128 + cli_cancel_signal(); /* as a shell reports the signal */
		if (cli->json) {
			if (cli_json_print(json_incref(rec)))
				rc = 1;
		} else {
			print_verdict(rec);
		}
	}
	json_decref(rec);
	for (size_t i = 0; i < nb; i++) {
		explicit_bzero(bufs[i], strlen(bufs[i]));
		free(bufs[i]);
	}
	free(bufs);
	free(secrets);
	return rc;
}
