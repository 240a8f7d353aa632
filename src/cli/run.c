/* airlock run, airlock runs, airlock run show: a command in a sandbox
 * against a project; its changes become a draft. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/image.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "cli.h"
#include "util.h"

#define DEFAULT_IMAGE "busybox"
/* exit codes of airlock run beyond the command's own (docs/cli.md) */
#define EXIT_OOM 123
#define EXIT_TIMEOUT 124

static const char run_help[] =
	"usage: airlock run PROJECT [--image ID|NAME] [--network none|egress] [--timeout SEC]\n"
	"                   [--memory BYTES] [--pids N] [--cpus N] [--output-limit BYTES]\n"
	"                   [--disk-limit BYTES] [--files N] [--env K=V]... [--secret K[=V]]...\n"
	"                   [--secret-file K[=V]]... [--group G] [--author A] [--json] -- CMD [ARG...]\n"
	"       airlock run show RUN [--json]\n"
	"\n"
	"Run CMD in a sandbox on the project's head: the image as the root filesystem,\n"
	"the project's files at /workspace (the working directory), no network, no host\n"
	"path, no capabilities. What the command changes under /workspace becomes a new\n"
	"draft (review it with 'airlock review RUN', apply with 'airlock apply RUN');\n"
	"the project's head does not move.\n"
	"\n"
	"  --image ID|NAME     root filesystem (default: busybox, imported from the build\n"
	"                      on first use)\n"
	"  --network none      no network: only loopback (the default); 'egress' is\n"
	"                      refused by the namespace backend\n"
	"  --timeout SEC       wall clock, then the whole sandbox is killed (default 3600;\n"
	"                      0: none)\n"
	"  --memory BYTES      memory of the whole sandbox (default 2G; 0: none)\n"
	"  --pids N            processes and threads (default 1024; 0: none)\n"
	"  --cpus N            CPU bandwidth, e.g. 0.5 (default: none)\n"
	"  --output-limit BYTES  bytes kept of each of stdout and stderr (default 16M);\n"
	"                      the rest is counted and dropped, the run marked truncated\n"
	"  --disk-limit BYTES  bytes the run may write, / /workspace and /tmp together\n"
	"                      (default 1G); files beyond it get ENOSPC/EFBIG\n"
	"  --files N           files and directories the run may create (default 100000)\n"
	"  --env K=V           set a variable (over PATH, HOME=/root, TZ=UTC, LANG=C.UTF-8)\n"
	"  --secret K[=V]      set a variable whose value is never stored (without =V:\n"
	"                      taken from airlock's own environment); the record keeps K\n"
	"                      and the value's sha256\n"
	"  --secret-file K[=V] the same, as the file /run/airlock/secrets/K (mode 0400,\n"
	"                      on a tmpfs of this run only) instead of a variable\n"
	"  --group G           the unit of work's id in the ledger (default: a new one)\n"
	"  --author A          who ran it, in the record and the ledger (default: $USER)\n"
	"  --json              no live output; one JSON object: the run record with the\n"
	"                      text of stdout and stderr\n"
	"BYTES take K, M, G or T (powers of 1024).\n"
	"\n"
	"Without --json the command's output streams live and a summary goes to stderr.\n"
	"Exit status: the command's (128+N if killed by signal N); 124 if it hit\n"
	"--timeout, 123 if it ran out of --memory, 125 if the sandbox could not be set\n"
	"up; airlock's own errors as for every command (2 usage, 3 not found, 6 invalid).\n"
	"'airlock run show RUN' prints one run's record with its output.\n";

static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 0: break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'B')
		end += *end == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_decimal(const char *s, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* airlock-init: $AIRLOCK_INIT, beside this binary, or the installed one. */
static const char *init_path(char *buf, size_t n)
{
	const char *env = getenv("AIRLOCK_INIT");
	if (env && *env)
		return env;
	ssize_t len = readlink("/proc/self/exe", buf, n - 20);
	if (len > 0) {
		buf[len] = 0;
		char *slash = strrchr(buf, '/');
		if (slash) {
			strcpy(slash + 1, "airlock-init");
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	return "/usr/libexec/airlock/airlock-init";
}

/* The default image: imported from the build (beside this binary) on first use. */
static int default_image(struct al_store *st, struct al_error *err)
{
	uint8_t id[32];
	int r = al_image_resolve(st, DEFAULT_IMAGE, id, err);
	if (r != AL_ENOTFOUND)
		return r;
	char dir[4200];
	ssize_t len = readlink("/proc/self/exe", dir, sizeof(dir) - 40);
	char *slash = len > 0 ? (dir[len] = 0, strrchr(dir, '/')) : NULL;
	struct stat s;
	if (!slash || (strcpy(slash + 1, "image/busybox"), stat(dir, &s)) < 0 || !S_ISDIR(s.st_mode))
		return al_fail(err, AL_ENOTFOUND, 0,
			       "no image '" DEFAULT_IMAGE "': import one (airlock image import DIR --name " DEFAULT_IMAGE
			       ") or pass --image");
	fprintf(stderr, "airlock: importing the built-in busybox image from %s\n", dir);
	struct al_import_result res;
	return al_image_import(st, dir, DEFAULT_IMAGE, &res, err);
}

static void live_output(void *ctx, int stream, const void *p, size_t n)
{
	(void)ctx;
	FILE *f = stream == 1 ? stdout : stderr;
	fwrite(p, 1, n, f);
	fflush(f);
}

static const char *const streams[] = { "stdout", "stderr" };

/* The bytes of one of a run's streams, named by its record. */
static int stream_bytes(struct al_store *st, json_t *rec, int i, uint8_t **data, size_t *len, struct al_error *err)
{
	uint8_t id[32];
	json_t *s = json_object_get(rec, streams[i]);
	if (al_id_parse(json_string_value(json_object_get(s, "blob")), id, err) < 0)
		return -1;
	return al_cas_get(al_store_cas(st), id, data, len, err);
}

/* The record, with the text of stdout and stderr added. */
static json_t *record_with_output(struct al_store *st, const struct al_run_info *info, struct al_error *err)
{
	json_t *rec = json_loads(info->record, 0, NULL);
	if (!rec) {
		al_fail(err, AL_ECORRUPT, 0, "run %s: unreadable record", info->id);
		return NULL;
	}
	for (int i = 0; i < 2; i++) {
		uint8_t *data = NULL;
		size_t len = 0;
		if (stream_bytes(st, rec, i, &data, &len, err) < 0) {
			json_decref(rec);
			return NULL;
		}
		json_object_set_new(json_object_get(rec, streams[i]), "text", cli_json_bytes((const char *)data, len));
		free(data);
	}
	return rec;
}

static int print_output(struct al_store *st, const struct al_run_info *info, struct al_error *err)
{
	json_t *rec = json_loads(info->record, 0, NULL);
	if (!rec)
		return al_fail(err, AL_ECORRUPT, 0, "run %s: unreadable record", info->id);
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		uint8_t *data = NULL;
		size_t len = 0;
		if (stream_bytes(st, rec, i, &data, &len, err) < 0) {
			json_decref(rec);
			return -1;
		}
		printf("--- %s (%lld bytes%s)\n", streams[i], (long long)json_integer_value(json_object_get(s, "bytes")),
		       json_is_true(json_object_get(s, "truncated")) ? ", truncated" : "");
		fwrite(data, 1, len, stdout);
		if (len && data[len - 1] != '\n')
			putchar('\n');
		free(data);
	}
	json_decref(rec);
	return 0;
}

static void summary(FILE *f, const struct al_run_info *info)
{
	uint64_t n = info->added + info->modified + info->deleted;
	fprintf(f, "run %s: ", info->id);
	if (!n)
		fprintf(f, "no changes");
	else {
		fprintf(f, "%llu change%s (", (unsigned long long)n, n == 1 ? "" : "s");
		const char *sep = "";
		if (info->added)
			fprintf(f, "%s%llu added", sep, (unsigned long long)info->added), sep = ", ";
		if (info->modified)
			fprintf(f, "%s%llu modified", sep, (unsigned long long)info->modified), sep = ", ";
		if (info->deleted)
			fprintf(f, "%s%llu deleted", sep, (unsigned long long)info->deleted);
		fprintf(f, ")");
	}
	if (info->timed_out)
		fprintf(f, "; timed out");
	if (info->oom)
		fprintf(f, "; out of memory");
	if (info->exit_code)
		fprintf(f, "; exit status %d", info->exit_code);
	if (n)
		fprintf(f, "; review: airlock review %s\n", info->id);
	else
		fprintf(f, "; draft %s\n", info->draft);
}

/* What the record says beyond the summary: truncation, neutralised entries. */
static void notes(FILE *f, const struct al_run_info *info)
{
	json_t *rec = json_loads(info->record, 0, NULL);
	if (!rec)
		return;
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		if (json_is_true(json_object_get(s, "truncated")))
			fprintf(f, "run %s: %s truncated: %lld of %lld bytes kept (--output-limit)\n", info->id,
				streams[i], (long long)json_integer_value(json_object_get(s, "kept")),
				(long long)json_integer_value(json_object_get(s, "bytes")));
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(rec, "neutralised"), i, v)
		fprintf(f, "run %s: not kept as is: %s\n", info->id, json_string_value(v));
	json_decref(rec);
}

static int exit_status(const struct al_run_info *info)
{
	if (info->timed_out)
		return EXIT_TIMEOUT;
	if (info->oom)
		return EXIT_OOM;
	return info->exit_code;
}

static int run_show(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(cli, argc, argv,
				 "usage: airlock run show RUN [--json]\n\n"
				 "One run's record (command, environment without secret values, policy,\n"
				 "limits, status, resource use, changes, bundle, draft) and its stdout and\n"
				 "stderr. --json: the record with stdout.text and stderr.text.\n",
				 1);
	if (rc >= 0)
		return rc;
	struct al_error err = { 0 };
	struct al_store *st = NULL;
	if (cli_open(cli, &st, &err) < 0)
		return cli_error(cli, &err);
	struct al_run_info info;
	int r = al_run_get(st, argv[optind], &info, &err);
	if (r == 0 && cli->json) {
		json_t *rec = record_with_output(st, &info, &err);
		r = rec ? cli_json_print(rec) : -1;
	} else if (r == 0) {
		json_t *rec = json_loads(info.record, 0, NULL);
		char *argvs = json_dumps(json_object_get(rec, "argv"), JSON_COMPACT);
		printf("run      %s\nproject  %s\ndraft    %s\ngroup    %s\nbase     %s\nimage    %s\n"
		       "argv     %s\nnetwork  %s\nexit     %d%s%s\nwall     %lld ms\n",
		       info.id, info.project, info.draft, info.group,
		       json_string_value(json_object_get(rec, "base")), json_string_value(json_object_get(rec, "image")),
		       argvs ? argvs : "?", json_string_value(json_object_get(rec, "network")), info.exit_code,
		       info.timed_out ? " (timed out)" : "", info.oom ? " (out of memory)" : "",
		       (long long)json_integer_value(json_object_get(json_object_get(rec, "usage"), "wall_ms")));
		free(argvs);
		json_decref(rec);
		summary(stdout, &info);
		notes(stdout, &info);
		r = print_output(st, &info, &err);
	}
	al_run_info_release(&info);
	al_store_close(st);
	return r < 0 ? cli_error(cli, &err) : 0;
}

enum { O_IMAGE = 256, O_NETWORK, O_TIMEOUT, O_MEMORY, O_PIDS, O_CPUS, O_OUTPUT, O_DISK, O_FILES, O_ENV, O_SECRET, O_SECRET_FILE,
       O_GROUP, O_AUTHOR, O_JSON };

struct strv {
	const char **v;
	size_t n;
};

static int strv_push(struct strv *s, const char *x)
{
	const char **v = realloc(s->v, (s->n + 2) * sizeof(*v));
	if (!v)
		return -1;
	s->v = v;
	v[s->n++] = x;
	v[s->n] = NULL;
	return 0;
}

int cmd_run(struct cli *cli, int argc, char **argv)
{
	int dd = 0; /* the "--" before the command: options may come before or after PROJECT */
	for (int i = 1; i < argc && !dd; i++)
		if (!strcmp(argv[i], "--"))
			dd = i;
	if (argc > 1 && !strcmp(argv[1], "show") && !dd) {
		cli->prog = "airlock run show";
		return run_show(cli, argc - 1, argv + 1);
	}
	static const struct option opts[] = {
		{ "image", required_argument, NULL, O_IMAGE }, { "network", required_argument, NULL, O_NETWORK },
		{ "timeout", required_argument, NULL, O_TIMEOUT }, { "memory", required_argument, NULL, O_MEMORY },
		{ "pids", required_argument, NULL, O_PIDS }, { "cpus", required_argument, NULL, O_CPUS },
		{ "output-limit", required_argument, NULL, O_OUTPUT }, { "disk-limit", required_argument, NULL, O_DISK },
		{ "files", required_argument, NULL, O_FILES }, { "env", required_argument, NULL, O_ENV },
		{ "secret", required_argument, NULL, O_SECRET }, { "secret-file", required_argument, NULL, O_SECRET_FILE },
		{ "group", required_argument, NULL, O_GROUP },
		{ "author", required_argument, NULL, O_AUTHOR }, { "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct al_run_opts o = { .network = AL_NET_NONE, .best_effort_limits = true };
	al_limits_default(&o.limits);
	struct strv env = { 0 }, secrets = { 0 }, secret_files = { 0 };
	char **secret_bufs = calloc((size_t)argc, sizeof(char *));
	size_t nbufs = 0;
	struct al_error err = { 0 };
	int c, rc = -1;
	double d;
	optind = 0;
	int oargc = dd ? dd : argc;
	while (rc < 0 && (c = getopt_long(oargc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_IMAGE: o.image = optarg; break;
		case O_NETWORK:
			if (al_network_parse(optarg, &o.network, &err) < 0)
				rc = cli_usage(cli, "%s", err.msg);
			break;
		case O_TIMEOUT:
			if (parse_decimal(optarg, 1e7, &d) < 0)
				rc = cli_usage(cli, "bad --timeout '%s' (seconds)", optarg);
			o.limits.timeout_ms = (uint64_t)llround(d * 1000);
			break;
		case O_MEMORY:
			if (parse_bytes(optarg, &o.limits.memory) < 0)
				rc = cli_usage(cli, "bad --memory '%s'", optarg);
			o.best_effort_limits = false;
			break;
		case O_PIDS:
			if (parse_bytes(optarg, &o.limits.pids) < 0 || o.limits.pids > INT_MAX)
				rc = cli_usage(cli, "bad --pids '%s'", optarg);
			o.best_effort_limits = false;
			break;
		case O_CPUS:
			if (parse_decimal(optarg, 4096, &d) < 0)
				rc = cli_usage(cli, "bad --cpus '%s'", optarg);
			o.limits.cpus_milli = (uint64_t)llround(d * 1000);
			o.best_effort_limits = false;
			break;
		case O_OUTPUT:
			if (parse_bytes(optarg, &o.limits.output) < 0)
				rc = cli_usage(cli, "bad --output-limit '%s'", optarg);
			break;
		case O_DISK:
			if (parse_bytes(optarg, &o.limits.disk) < 0)
				rc = cli_usage(cli, "bad --disk-limit '%s'", optarg);
			break;
		case O_FILES:
			if (parse_bytes(optarg, &o.limits.files) < 0)
				rc = cli_usage(cli, "bad --files '%s'", optarg);
			break;
		case O_ENV:
			if (!strchr(optarg, '='))
				rc = cli_usage(cli, "--env takes NAME=VALUE, not '%s'", optarg);
			else if (strv_push(&env, optarg) < 0)
				rc = 1;
			break;
		case O_SECRET:
		case O_SECRET_FILE: {
			const char *kv = optarg;
			if (!strchr(optarg, '=')) {
				const char *v = getenv(optarg);
				if (!v) {
					rc = cli_usage(cli, "--%s %s: no such variable in airlock's environment",
						       c == O_SECRET ? "secret" : "secret-file", optarg);
					break;
				}
				char *b = malloc(strlen(optarg) + strlen(v) + 2);
				if (!b || !secret_bufs) {
					free(b);
					rc = 1;
					break;
				}
				sprintf(b, "%s=%s", optarg, v);
				kv = secret_bufs[nbufs++] = b;
			}
			if (strv_push(c == O_SECRET ? &secrets : &secret_files, kv) < 0)
				rc = 1;
			break;
		}
		case O_GROUP: o.group = optarg; break;
		case O_AUTHOR: o.author = optarg; break;
		case O_JSON: cli->json = true; break;
		case 'h': printf("%s", run_help); rc = 0; break;
		default: rc = cli_usage(cli, "bad option"); break;
		}
	}
	if (rc < 0 && oargc - optind < 1)
		rc = cli_usage(cli, "expected a project name");
	if (rc < 0 && oargc - optind > 1)
		rc = cli_usage(cli, "unexpected argument '%s' (the command goes after --)", argv[optind + 1]);
	if (rc < 0 && (!dd || dd + 1 >= argc))
		rc = cli_usage(cli, "expected -- and the command after the project name");
	if (rc < 0 && o.group && (strlen(o.group) < 1 || strlen(o.group) > 16))
		rc = cli_usage(cli, "--group takes 1 to 16 characters");
	struct al_store *st = NULL;
	if (rc < 0 && cli_open(cli, &st, &err) < 0)
		rc = cli_error(cli, &err);
	if (rc < 0 && !o.image && default_image(st, &err) < 0)
		rc = cli_error(cli, &err);
	if (rc < 0) {
		char ibuf[4200];
		o.project = argv[optind];
		o.argv = (const char *const *)argv + dd + 1;
		o.env = env.v;
		o.secrets = secrets.v;
		o.secret_files = secret_files.v;
		o.image = o.image ? o.image : DEFAULT_IMAGE;
		o.author = cli_author(o.author);
		o.init_path = init_path(ibuf, sizeof(ibuf));
		o.output = cli->json ? NULL : live_output;
		struct al_run_info info;
		if (al_run(st, &o, &info, &err) < 0) {
			rc = cli_error(cli, &err);
		} else {
			if (cli->json) {
				json_t *rec = record_with_output(st, &info, &err);
				rc = rec ? cli_json_print(rec) : cli_error(cli, &err);
			} else {
				notes(stderr, &info);
				summary(stderr, &info);
			}
			if (rc <= 0)
				rc = exit_status(&info);
			al_run_info_release(&info);
		}
	}
	al_store_close(st);
	free(env.v);
	free(secrets.v);
	free(secret_files.v);
	for (size_t i = 0; i < nbufs; i++) {
		explicit_bzero(secret_bufs[i], strlen(secret_bufs[i]));
		free(secret_bufs[i]);
	}
	free(secret_bufs);
	return rc;
}

static int list_one(void *ctx, const struct al_run_info *r, struct al_error *err)
{
	json_t *arr = ctx;
	(void)err;
	if (arr) {
		json_array_append_new(arr, json_loads(r->record, 0, NULL));
		return 0;
	}
	json_t *rec = json_loads(r->record, 0, NULL);
	char *argvs = rec ? json_dumps(json_object_get(rec, "argv"), JSON_COMPACT) : NULL;
	printf("%s %s exit %-3d %s%s+%llu ~%llu -%llu %s\n", r->id, r->draft, r->exit_code,
	       r->timed_out ? "timeout " : "", r->oom ? "oom " : "", (unsigned long long)r->added,
	       (unsigned long long)r->modified, (unsigned long long)r->deleted, argvs ? argvs : "");
	free(argvs);
	json_decref(rec);
	return 0;
}

static int list_runs(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return al_run_foreach(st, project, list_one, arr, err);
}

int cmd_runs(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv,
			"usage: airlock runs PROJECT [--json]\n\n"
			"A project's runs, oldest first: run id, draft id, exit status, flags,\n"
			"+added ~modified -deleted, the command. --json: the run records.\n",
			1, list_runs);
}
