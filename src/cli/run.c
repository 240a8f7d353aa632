/* airlock run, airlock runs, airlock run show: a command in a sandbox
 * against a project; its changes become a draft. */
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "airlock/cas.h"
#include "airlock/integ.h"
#include "airlock/net.h"
#include "airlock/image.h"
#include "airlock/contract.h"
#include "airlock/run.h"
#include "airlock/store.h"
#include "cli.h"
#include "ops.h"
#include "view.h"
#include "airlock/util.h"

/* exit codes of airlock run beyond the command's own (docs/cli.md) */
#define EXIT_OOM 123
#define EXIT_TIMEOUT 124

static const char run_help[] =
	"usage: airlock run PROJECT [--image ID|NAME] [--network none|egress] [--timeout SEC]\n"
	"                   [--memory BYTES] [--pids N] [--cpus N] [--output-limit BYTES]\n"
	"                   [--disk-limit BYTES] [--files N] [--env K=V]... [--secret K[=V]]...\n"
	"                   [--secret-file K[=V]]... [--contract FILE] [--group G] [--author A]\n"
	"                   [--backend ns|vm] [--allow HOST[:PORT]]... [--egress-connections N]\n"
	"                   [--egress-bytes BYTES] [--integration NAME]... [--json]\n"
	"                   -- CMD [ARG...]\n"
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
	"  --network none      no network: only loopback (the default)\n"
	"  --network egress    still no route out; HTTP(S)_PROXY name airlock's proxy\n"
	"                      at 127.0.0.1:3128, which reaches only the --allow\n"
	"                      entries (within the policy's egress_allow) and records\n"
	"                      every connection\n"
	"  --allow HOST[:PORT] a destination: a name, *.suffix, an address; PORT or *\n"
	"                      (default: http:// to 80, a TLS tunnel to 443); private\n"
	"                      and loopback addresses only when an entry is that address\n"
	"  --egress-connections N, --egress-bytes BYTES  the run's egress caps (default\n"
	"                      256 connections, 1G both ways)\n"
	"  --integration NAME  reach the integration NAME (granted to the project or to\n"
	"                      you: airlock admin integration grant) at\n"
	"                      $AIRLOCK_INTEGRATIONS/NAME/PATH; airlock adds its\n"
	"                      credential on the host, the run never sees it; calls\n"
	"                      count against the egress caps\n"
	"  --backend ns|vm     the sandbox: ns (Linux namespaces, the default unless the\n"
	"                      policy says otherwise) or vm (a microVM with its own\n"
	"                      kernel: QEMU, KVM where usable, else TCG, ~2 s a run)\n"
	"  --timeout SEC       wall clock, then the whole sandbox is killed (default 3600)\n"
	"  --memory BYTES      memory of the whole sandbox (default 2G)\n"
	"  --pids N            processes and threads (default 1024)\n"
	"  --cpus N            CPU bandwidth, e.g. 0.5 (default 1)\n"
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
	"  --contract FILE     a run contract (JSON, docs/formats.md \"Contracts\"): the\n"
	"                      paths the run may change, must and must not change, what\n"
	"                      its outputs must be, its exit status; checked after the\n"
	"                      run (with the project's own contract, if it has one);\n"
	"                      a bad contract is refused before anything runs\n"
	"  --group G           the unit of work's id in the ledger (default: a new one)\n"
	"  --author A          who ran it, in the record and the ledger (default: $USER)\n"
	"  --json              no live output; one JSON object: the run record with the\n"
	"                      text of stdout and stderr\n"
	"BYTES take K, M, G or T (powers of 1024).  Every limit is positive: the\n"
	"defaults above are built in; the operator and the tenant's admin may change\n"
	"them and set ceilings ('airlock admin policy show'); a limit above its ceiling\n"
	"is refused (exit 8), one this host cannot enforce refuses the run unless the\n"
	"operator accepted best effort ('airlock doctor' says what is enforced).\n"
	"\n"
	"Without --json the command's output streams live and a summary goes to stderr.\n"
	"Exit status: the command's (128+N if killed by signal N); 124 if it hit\n"
	"--timeout, 123 if it ran out of --memory, 125 if the sandbox could not be set\n"
	"up; airlock's own errors as for every command (2 usage, 3 not found, 6 invalid).\n"
	"'airlock run show RUN' prints one run's record with its output.\n";

/* a limit: a positive size (0 is never "none") */
static int parse_bytes(const char *s, uint64_t *out)
{
	uint64_t v;
	if (al_parse_size(s, UINT64_MAX, &v, NULL) < 0 || !v)
		return -1;
	*out = v;
	return 0;
}

static void live_output(void *ctx, int stream, const void *p, size_t n)
{
	(void)ctx;
	FILE *f = stream == 1 ? stdout : stderr;
	cli_write_output(f, stream, p, n);
	fflush(f);
}

static const char *const streams[] = { "stdout", "stderr" };

/* SIGINT, SIGTERM, SIGHUP during a local run: the sandbox is cancelled
 * (its whole tree killed, its cgroups removed) and the run recorded as
 * cancelled with the output it produced, as under --server. */
static int cancel_pipe[2] = { -1, -1 };
static volatile sig_atomic_t cancel_signal;
static void on_cancel(int sig)
{
	cancel_signal = sig;
	char b = 1;
	if (write(cancel_pipe[1], &b, 1) < 0) {
		/* full or closed: already cancelling */
	}
}

int cli_cancel_signal(void)
{
	return cancel_signal;
}

int cli_cancel_on_signals(struct sigaction *old)
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	if (pipe2(cancel_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cancel;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	return cancel_pipe[0];
}

void cli_cancel_restore(struct sigaction *old)
{
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	for (int i = 0; i < 2; i++)
		if (cancel_pipe[i] >= 0) {
			close(cancel_pipe[i]);
			cancel_pipe[i] = -1;
		}
}

static const char *jstr(json_t *o, const char *k)
{
	return cli_esc(json_string_value(json_object_get(o, k)), "");
}

static long long jint(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static bool jtrue(json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

/* The text of stdout and stderr (the record has them: view_run_output). */
static void print_output(json_t *rec)
{
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		if (!json_is_object(s)) {
			printf("--- %s (none: the run failed before it ran)\n", streams[i]);
			continue;
		}
		const char *text = json_string_value(json_object_get(s, "text"));
		size_t len = json_string_length(json_object_get(s, "text"));
		printf("--- %s (%lld bytes%s)\n", streams[i], jint(s, "bytes"),
		       jtrue(s, "truncated") ? ", truncated" : "");
		if (text)
			cli_write_output(stdout, i + 1, text, len);
		if (len && text[len - 1] != '\n')
			putchar('\n');
	}
}

/* May the caller read a draft's review?  Locally yes; over --server an
 * agent may not (docs/api.md, the permission matrix): its summary names only
 * what its role may use. */
static bool may_review(struct cli *cli)
{
	if (!cli->server)
		return true;
	json_t *doc = NULL;
	struct al_error err = { 0 };
	bool ok = false;
	if (cli_http(cli, "GET", "/whoami", NULL, NULL, NULL, &doc, &err) == 0) {
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(doc, "roles"), i, v) {
			const char *r = json_string_value(v);
			if (r &&
			    (!strcmp(r, "admin") || !strcmp(r, "author") || !strcmp(r, "reviewer")))
				ok = true;
		}
	}
	json_decref(doc);
	return ok;
}

static void summary(FILE *f, json_t *rec, bool reviewer)
{
	if (!strcmp(jstr(rec, "outcome"), "not_replayable")) { /* a replay that never ran */
		fprintf(f, "run %s: not_replayable: %s\n", jstr(rec, "id"),
			jstr(json_object_get(rec, "verdict"), "reason"));
		return;
	}
	if (!strncmp(jstr(rec, "outcome"), "failed", 6)) {
		fprintf(f, "run %s: %s: %s\n", jstr(rec, "id"), jstr(rec, "outcome"),
			cli_esc(json_string_value(
					json_object_get(json_object_get(rec, "error"), "message")),
				"?"));
		return;
	}
	json_t *c = json_object_get(rec, "changes");
	long long a = jint(c, "added"), m = jint(c, "modified"), d = jint(c, "deleted"),
		  n = a + m + d;
	fprintf(f, "run %s: ", jstr(rec, "id"));
	if (!n)
		fprintf(f, "no changes");
	else {
		fprintf(f, "%lld change%s (", n, n == 1 ? "" : "s");
		const char *sep = "";
		if (a)
			fprintf(f, "%s%lld added", sep, a), sep = ", ";
		if (m)
			fprintf(f, "%s%lld modified", sep, m), sep = ", ";
		if (d)
			fprintf(f, "%s%lld deleted", sep, d);
		fprintf(f, ")");
	}
	if (jtrue(rec, "timed_out"))
		fprintf(f, "; timed out");
	if (jtrue(rec, "oom"))
		fprintf(f, "; out of memory");
	if (jtrue(rec, "cancelled"))
		fprintf(f, "; cancelled");
	if (jint(rec, "exit_code"))
		fprintf(f, "; exit status %lld", jint(rec, "exit_code"));
	json_t *ct = json_object_get(rec, "contract");
	if (ct) {
		size_t nv = json_array_size(json_object_get(ct, "violations")) +
			    (size_t)jint(ct, "more");
		if (nv)
			fprintf(f, "; contract violated (%zu), %s", nv, jstr(ct, "on_violation"));
		else
			fprintf(f, "; contract satisfied");
	}
	if (n && reviewer)
		fprintf(f, "; review: airlock review %s\n", jstr(rec, "id"));
	else if (n)
		fprintf(f, "; draft %s awaits a reviewer; the run: airlock run show %s\n",
			jstr(rec, "draft"), jstr(rec, "id"));
	else
		fprintf(f, "; draft %s closed: empty\n", jstr(rec, "draft"));
}

/* The contract's verdict, one line per violation. */
static void contract_text(json_t *rec)
{
	json_t *ct = json_object_get(rec, "contract"), *v;
	if (!json_is_object(ct))
		return;
	printf("contract %s (on violation: %s)\n", jstr(ct, "verdict"), jstr(ct, "on_violation"));
	size_t i;
	json_array_foreach(json_object_get(ct, "violations"), i, v) {
		printf("  %s %s", jstr(v, "kind"), cli_esc(contract_where(v), ""));
		if (!strcmp(jstr(v, "kind"), "exit"))
			printf("expected %lld, got %lld", jint(v, "expected"), jint(v, "actual"));
		json_t *e = json_array_get(json_object_get(v, "errors"), 0);
		if (e)
			printf(" at %s: %s", cli_esc(jstr(e, "at"), ""),
			       cli_esc(jstr(e, "message"), ""));
		if (json_is_string(json_object_get(v, "message")))
			printf(": %s", cli_esc(jstr(v, "message"), ""));
		printf(" (%s)\n", jstr(v, "source"));
	}
	if (jint(ct, "more"))
		printf("  … and %lld more\n", jint(ct, "more"));
	size_t nd = json_array_size(json_object_get(ct, "dropped"));
	if (nd)
		printf("  %zu change%s outside writable not kept\n", nd, nd == 1 ? "" : "s");
}

/* What the record says beyond the summary: truncation, neutralised entries. */
static void notes(FILE *f, json_t *rec)
{
	for (int i = 0; i < 2; i++) {
		json_t *s = json_object_get(rec, streams[i]);
		if (jtrue(s, "truncated"))
			fprintf(f,
				"run %s: %s truncated: %lld of %lld bytes kept (--output-limit)\n",
				jstr(rec, "id"), streams[i], jint(s, "kept"), jint(s, "bytes"));
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(rec, "neutralised"), i, v)
		fprintf(f, "run %s: not kept as is: %s\n", jstr(rec, "id"), json_string_value(v));
	if (jtrue(rec, "disk_limit_hit"))
		fprintf(f,
			"run %s: disk limit reached: %lld file%s not kept (--disk-limit counts "
			"apparent sizes)\n",
			jstr(rec, "id"), jint(rec, "dropped"),
			jint(rec, "dropped") == 1 ? "" : "s");
}

static int exit_status(json_t *rec)
{
	if (jtrue(rec, "timed_out"))
		return EXIT_TIMEOUT;
	if (jtrue(rec, "oom"))
		return EXIT_OOM;
	return (int)jint(rec, "exit_code");
}

static int run_local(struct al_store *st, const void *id, json_t **out, struct al_error *err)
{
	return view_run(st, id, true, SIZE_MAX, out, err);
}

static int run_show(struct cli *cli, int argc, char **argv)
{
	int rc = cli_simple_opts(
		cli, argc, argv,
		"usage: airlock run show RUN [--json]\n\n"
		"One run's record (command, environment without secret values, policy,\n"
		"limits, status, resource use, changes, bundle, draft) and its stdout and\n"
		"stderr. --json: the record with stdout.text and stderr.text.\n",
		1);
	if (rc >= 0)
		return rc;
	json_t *rec;
	char path[256], esc[128];
	char id[64];
	if ((rc = cli_id(cli, CLI_ID_RUN, argv[optind], id, sizeof(id))) ||
	    (rc = cli_id_check(cli, CLI_ID_RUN, id)))
		return rc;
	snprintf(path, sizeof(path), "/runs/%s?output=1", cli_path_escape(id, esc, sizeof(esc)));
	if ((rc = cli_fetch(cli, path, run_local, id, &rec)) >= 0)
		return rc;
	if (cli->server) {
		/* the daemon also knows runs in flight */
		if (strcmp(jstr(rec, "state"), "ended")) {
			fprintf(stderr, "%s: run %s is %s\n", cli->prog, argv[optind],
				jstr(rec, "state"));
			if (cli->json)
				return cli_json_print(rec);
			json_decref(rec);
			return al_code_exit(AL_ESTATE);
		}
		json_object_del(rec, "state");
	}
	if (cli->json)
		return cli_json_print(rec);
	char *argvs = json_dumps(json_object_get(rec, "argv"), JSON_COMPACT);
	printf("run      %s\nproject  %s\noutcome  %s\ndraft    %s\ngroup    %s\nbase     "
	       "%s\nimage    %s\n"
	       "argv     %s\nnetwork  %s\nexit     %lld%s%s%s\nwall     %lld ms\n",
	       jstr(rec, "id"), jstr(rec, "project"),
	       json_object_get(rec, "outcome") ? jstr(rec, "outcome") : "ok",
	       json_is_string(json_object_get(rec, "draft")) ? jstr(rec, "draft") : "-",
	       jstr(rec, "group"), jstr(rec, "base"), jstr(rec, "image"), argvs ? argvs : "?",
	       jstr(rec, "network"), jint(rec, "exit_code"),
	       jtrue(rec, "timed_out") ? " (timed out)" : "",
	       jtrue(rec, "oom") ? " (out of memory)" : "",
	       jtrue(rec, "cancelled") ? " (cancelled)" : "",
	       jint(json_object_get(rec, "usage"), "wall_ms"));
	free(argvs);
	if (json_is_string(json_object_get(rec, "replay_of")))
		printf("replay   of %s: %s\n", jstr(rec, "replay_of"),
		       jstr(json_object_get(rec, "verdict"), "result"));
	contract_text(rec);
	summary(stdout, rec, may_review(cli));
	notes(stdout, rec);
	print_output(rec);
	json_decref(rec);
	return 0;
}

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Follow a run on the daemon: print its output as it comes (polling
 * GET /runs/ID/output from what was printed), until it has ended; then
 * its record.  Ctrl-C cancels the run (and keeps following to its end). */
static int follow(struct cli *cli, const char *id, json_t **rec, struct al_error *err)
{
	struct sigaction sa = { .sa_handler = on_sigint }, old;
	sigaction(SIGINT, &sa, &old);
	size_t off[2] = { 0, 0 };
	bool cancelled = false, ended = false, last = false;
	int r = 0;
	while (r == 0 && !last) {
		last = ended; /* one more pass after the end: what came since */
		for (int k = 0; r == 0 && k < 2; k++) {
			char path[128], state[16];
			char *data = NULL;
			size_t len = 0;
			snprintf(path, sizeof(path), "/runs/%s/output?stream=%s&offset=%zu", id,
				 streams[k], off[k]);
			if ((r = cli_http_get_raw(cli, path, &data, &len, state, err)) == 0) {
				if (len) {
					cli_write_output(k ? stderr : stdout, k + 1, data, len);
					fflush(k ? stderr : stdout);
				}
				off[k] += len;
				ended = ended || strcmp(state, "running") != 0;
			}
			free(data);
		}
		if (interrupted && !cancelled) {
			char path[128];
			json_t *doc = NULL;
			snprintf(path, sizeof(path), "/runs/%s/cancel", id);
			struct al_error cerr = { 0 };
			cli_http(cli, "POST", path, NULL, NULL, NULL, &doc, &cerr);
			json_decref(doc);
			cancelled = true;
		}
		if (!ended) {
			struct timespec ts = { 0, 150000000 };
			nanosleep(&ts, NULL);
		}
	}
	sigaction(SIGINT, &old, NULL);
	/* the record (or, for a sandbox that could not start, its failure) */
	char path[128];
	snprintf(path, sizeof(path), "/runs/%s", id);
	json_t *doc = NULL;
	struct al_error gerr = { 0 };
	if (cli_http(cli, "GET", path, NULL, NULL, NULL, &doc, &gerr) < 0) {
		if (r == 0)
			*err = gerr;
		*rec = doc;
		return r < 0 ? r : gerr.code;
	}
	if (!strcmp(jstr(doc, "state"), "failed")) {
		json_t *e = json_object_get(doc, "error");
		r = al_fail(err, al_code_from_name(jstr(e, "code")), 0, "%s", jstr(e, "message"));
		*rec = json_pack("{s:O}", "error", e);
		json_decref(doc);
		return r;
	}
	*rec = doc;
	return 0;
}

/* The run as a request to airlockd; prints what the embedded run prints. */
/* A contract file, parsed (and so checked) before anything runs. */
static int load_contract(const char *path, struct al_contract **out, struct al_error *err)
{
	*out = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t n;
	int r = cli_read_small(path, AL_CONTRACT_MAX, &buf, &n, err);
	if (r == 0)
		r = al_contract_parse_text(buf, n, out, err);
	if (r < 0)
		al_error_prefix(err, "--contract: ");
	return r;
}

/* Progress for the run's heavy phases on either side of the command (the
 * command's own output has the terminal while it runs). */
static void run_phase(void *ctx, const char *phase)
{
	struct cli_watch *w = ctx;
	cli_watch_stop(w);
	if (!strcmp(phase, "materialise"))
		cli_watch_start(w, "materialising the workspace", -1, 0);
	else if (!strcmp(phase, "collect"))
		cli_watch_start(w, "collecting the changes", -1, 0);
}

static int run_remote(struct cli *cli, const struct al_run_opts *o)
{
	json_t *body = json_pack("{s:s}", "network", al_network_name(o->network));
	if (o->egress_allow && o->egress_allow[0]) {
		json_t *a = json_array();
		for (size_t i = 0; o->egress_allow[i]; i++)
			json_array_append_new(a, json_string(o->egress_allow[i]));
		json_object_set_new(body, "network",
				    json_pack("{s:s,s:o}", "mode", "egress", "allow", a));
	}
	if (o->integrations && o->integrations[0]) {
		json_t *a = json_array();
		for (size_t i = 0; o->integrations[i]; i++)
			json_array_append_new(a, json_string(o->integrations[i]));
		json_object_set_new(body, "integrations", a);
	}
	if (o->backend)
		json_object_set_new(body, "backend", json_string(o->backend));
	json_t *argvj = json_array(), *env = json_object(), *sec = json_array();
	for (size_t i = 0; o->argv[i]; i++)
		json_array_append_new(argvj, json_string(o->argv[i]));
	for (size_t i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		char k[256];
		snprintf(k, sizeof(k), "%.*s", (int)(eq - o->env[i]), o->env[i]);
		json_object_set_new(env, k, json_string(eq + 1));
	}
	for (int file = 0; file < 2; file++)
		for (size_t i = 0; (file ? o->secret_files : o->secrets) &&
				   (file ? o->secret_files : o->secrets)[i];
		     i++) {
			const char *kv = (file ? o->secret_files : o->secrets)[i],
				   *eq = strchr(kv, '=');
			json_array_append_new(sec, json_pack("{s:s%,s:s,s:s}", "name", kv,
							     (size_t)(eq - kv), "value", eq + 1,
							     "as", file ? "file" : "env"));
		}
	json_object_set_new(body, "argv", argvj);
	json_object_set_new(body, "env", env);
	json_object_set_new(body, "secrets", sec);
	if (o->image)
		json_object_set_new(body, "image", json_string(o->image));
	if (o->group)
		json_object_set_new(body, "group", json_string(o->group));
	if (o->contract)
		json_object_set(body, "contract", (json_t *)al_contract_json(o->contract));
	/* only the limits given: the daemon's policy decides the rest */
	const struct al_limits *l = &o->limits;
	if (l->timeout_ms)
		json_object_set_new(body, "timeout", json_real((double)l->timeout_ms / 1000.0));
	if (l->output)
		json_object_set_new(body, "output_limit", json_integer((json_int_t)l->output));
	if (l->disk)
		json_object_set_new(body, "disk_limit", json_integer((json_int_t)l->disk));
	if (l->files)
		json_object_set_new(body, "files", json_integer((json_int_t)l->files));
	if (l->memory)
		json_object_set_new(body, "memory", json_integer((json_int_t)l->memory));
	if (l->pids)
		json_object_set_new(body, "pids", json_integer((json_int_t)l->pids));
	if (l->cpus_milli)
		json_object_set_new(body, "cpus", json_real((double)l->cpus_milli / 1000.0));
	if (l->connections)
		json_object_set_new(body, "egress_connections",
				    json_integer((json_int_t)l->connections));
	if (l->egress_bytes)
		json_object_set_new(body, "egress_bytes",
				    json_integer((json_int_t)l->egress_bytes));
	char path[256], esc[200];
	snprintf(path, sizeof(path), "/projects/%s/runs",
		 cli_path_escape(o->project, esc, sizeof(esc)));
	struct al_error err = { 0 };
	json_t *rec = NULL;
	/* with --json the answer is the ended run; without, the output is
	 * followed live and the record fetched at the end */
	json_object_set_new(body, "wait", json_boolean(cli->json));
	int r = cli_http(cli, "POST", path, body, NULL, NULL, &rec, &err);
	/* the request held the secrets' values */
	size_t i;
	json_t *v;
	json_array_foreach(sec, i, v) {
		json_t *val = json_object_get(v, "value");
		explicit_bzero((char *)json_string_value(val), json_string_length(val));
	}
	json_decref(body);
	if (r == 0 && !cli->json) {
		char id[AL_RUN_ID_LEN + 1];
		snprintf(id, sizeof(id), "%s", jstr(rec, "id"));
		json_decref(rec);
		rec = NULL;
		r = follow(cli, id, &rec, &err);
	}
	if (r < 0)
		return cli_remote_error(cli, &err, rec);
	json_object_del(rec, "state");
	int rc = exit_status(rec);
	if (cli->json) {
		if (cli_json_print(json_incref(rec)))
			rc = 1;
	} else {
		notes(stderr, rec);
		if (!cli->quiet)
			summary(stderr, rec, may_review(cli));
	}
	json_decref(rec);
	return rc;
}

enum {
	O_IMAGE = 256,
	O_NETWORK,
	O_TIMEOUT,
	O_MEMORY,
	O_PIDS,
	O_CPUS,
	O_OUTPUT,
	O_DISK,
	O_FILES,
	O_ENV,
	O_SECRET,
	O_SECRET_FILE,
	O_GROUP,
	O_AUTHOR,
	O_CONTRACT,
	O_BACKEND,
	O_ALLOW,
	O_EGRESS_CONNS,
	O_EGRESS_BYTES,
	O_INTEGRATION,
	O_JSON
};

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

/* "airlock run p sh -c true": the command's own options reached getopt */
static int missing_dashes(struct cli *cli, char **argv)
{
	int words = 0;
	for (int i = 1; argv[i]; i++)
		words += argv[i][0] != '-';
	if (words < 2)
		return cli_usage(cli, "bad option '%s'", cli_esc(argv[optind - 1], ""));
	return cli_usage(cli, "an option of the command reached airlock run: put -- before the "
			      "command (airlock run PROJECT [OPTIONS] -- COMMAND [ARGS])");
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
		{ "image", required_argument, NULL, O_IMAGE },
		{ "network", required_argument, NULL, O_NETWORK },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "pids", required_argument, NULL, O_PIDS },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "output-limit", required_argument, NULL, O_OUTPUT },
		{ "disk-limit", required_argument, NULL, O_DISK },
		{ "files", required_argument, NULL, O_FILES },
		{ "env", required_argument, NULL, O_ENV },
		{ "secret", required_argument, NULL, O_SECRET },
		{ "secret-file", required_argument, NULL, O_SECRET_FILE },
		{ "group", required_argument, NULL, O_GROUP },
		{ "author", required_argument, NULL, O_AUTHOR },
		{ "contract", required_argument, NULL, O_CONTRACT },
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "allow", required_argument, NULL, O_ALLOW },
		{ "integration", required_argument, NULL, O_INTEGRATION },
		{ "egress-connections", required_argument, NULL, O_EGRESS_CONNS },
		{ "egress-bytes", required_argument, NULL, O_EGRESS_BYTES },
		{ "json", no_argument, NULL, O_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct al_run_opts o = { .network = AL_NET_NONE }; /* limits 0: the policy's defaults */
	struct al_contract *contract = NULL;
	struct strv env = { 0 }, secrets = { 0 }, secret_files = { 0 }, allow = { 0 },
		    integ = { 0 };
	char **secret_bufs = calloc((size_t)argc, sizeof(char *));
	size_t nbufs = 0;
	struct al_error err = { 0 };
	int c, rc = -1;
	double d;
	optind = 0;
	opterr = 0; /* bad options are reported below, with what to do */
	int oargc = dd ? dd : argc;
	while (rc < 0 && (c = getopt_long(oargc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_IMAGE: o.image = optarg; break;
		case O_BACKEND:
			if (!al_sandbox_backend_known(optarg))
				rc = cli_usage(cli, "--backend takes ns or vm");
			o.backend = optarg;
			break;
		case O_NETWORK:
			if (al_network_parse(optarg, &o.network, &err) < 0)
				rc = cli_usage(cli, "%s", err.msg);
			break;
		case O_TIMEOUT:
			if (al_parse_duration(optarg, 10000000ull * 1000, &o.limits.timeout_ms,
					      &err) < 0)
				rc = cli_usage(cli, "bad --timeout: %s", err.msg);
			if (rc < 0 && !o.limits.timeout_ms)
				rc = cli_usage(cli, "--timeout must be positive (leave it out for "
						    "the default)");
			break;
		case O_MEMORY:
			if (parse_bytes(optarg, &o.limits.memory) < 0)
				rc = cli_usage(cli,
					       "bad --memory '%s' (a positive number; leave it out "
					       "for the default)",
					       optarg);
			break;
		case O_PIDS:
			if (parse_bytes(optarg, &o.limits.pids) < 0 || o.limits.pids > INT_MAX)
				rc = cli_usage(cli,
					       "bad --pids '%s' (a positive number; leave it out "
					       "for the default)",
					       optarg);
			break;
		case O_CPUS:
			if (al_parse_decimal(optarg, 4096, &d, &err) < 0)
				rc = cli_usage(cli, "bad --cpus: %s", err.msg);
			o.limits.cpus_milli = (uint64_t)llround(d * 1000);
			if (rc < 0 && !o.limits.cpus_milli)
				rc = cli_usage(
					cli,
					"--cpus must be positive (leave it out for the default)");
			break;
		case O_OUTPUT:
			if (parse_bytes(optarg, &o.limits.output) < 0)
				rc = cli_usage(cli,
					       "bad --output-limit '%s' (a positive number; leave "
					       "it out for the default)",
					       optarg);
			break;
		case O_DISK:
			if (parse_bytes(optarg, &o.limits.disk) < 0)
				rc = cli_usage(cli,
					       "bad --disk-limit '%s' (a positive number; leave it "
					       "out for the default)",
					       optarg);
			break;
		case O_FILES:
			if (parse_bytes(optarg, &o.limits.files) < 0)
				rc = cli_usage(cli,
					       "bad --files '%s' (a positive number; leave it out "
					       "for the default)",
					       optarg);
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
					rc = cli_usage(cli,
						       "--%s %s: no such variable in airlock's "
						       "environment",
						       c == O_SECRET ? "secret" : "secret-file",
						       optarg);
					break;
				}
				char *b;
				if (!secret_bufs || asprintf(&b, "%s=%s", optarg, v) < 0) {
					rc = 1;
					break;
				}
				kv = secret_bufs[nbufs++] = b;
			}
			if (strv_push(c == O_SECRET ? &secrets : &secret_files, kv) < 0)
				rc = 1;
			break;
		}
		case O_INTEGRATION:
			if (al_integ_name_check(optarg, &err) < 0)
				rc = cli_usage(cli, "bad --integration: %s", err.msg);
			else if (strv_push(&integ, optarg) < 0)
				rc = 1;
			break;
		case O_ALLOW:
			if (al_net_allow_check(optarg, &err) < 0)
				rc = cli_usage(cli, "bad --allow: %s", err.msg);
			else if (strv_push(&allow, optarg) < 0)
				rc = 1;
			break;
		case O_EGRESS_CONNS:
		case O_EGRESS_BYTES:
			if (parse_bytes(optarg, c == O_EGRESS_CONNS ? &o.limits.connections
								    : &o.limits.egress_bytes) < 0)
				rc = cli_usage(cli,
					       "bad --%s '%s' (a positive number; leave it out for "
					       "the default)",
					       c == O_EGRESS_CONNS ? "egress-connections"
								   : "egress-bytes",
					       optarg);
			break;
		case O_GROUP: o.group = optarg; break;
		case O_AUTHOR: o.author = optarg; break;
		case O_CONTRACT:
			al_contract_free(contract);
			contract = NULL;
			if (load_contract(optarg, &contract, &err) < 0)
				rc = cli_error(cli, &err);
			o.contract = contract;
			break;
		case O_JSON: cli->json = true; break;
		case 'h':
			printf("%s", run_help);
			rc = 0;
			break;
		default:
			rc = dd ? cli_usage(cli, "bad option '%s'", cli_esc(argv[optind - 1], ""))
				: missing_dashes(cli, argv);
			break;
		}
	}
	opterr = 1;
	if (rc < 0 && oargc - optind < 1)
		rc = cli_usage(cli, "expected a project name");
	if (rc < 0 && oargc - optind > 1)
		rc = cli_usage(cli, "unexpected argument '%s' (the command goes after --)",
			       argv[optind + 1]);
	if (rc < 0 && (!dd || dd + 1 >= argc))
		rc = cli_usage(cli, "expected -- and the command after the project name");
	if (rc < 0 && allow.n && o.network != AL_NET_EGRESS)
		rc = cli_usage(cli, "--allow needs --network egress");
	if (rc < 0 && o.group && (strlen(o.group) < 1 || strlen(o.group) > 16))
		rc = cli_usage(cli, "--group takes 1 to 16 characters");
	if (rc < 0 && o.group && !al_text_safe(o.group, strlen(o.group)))
		rc = cli_usage(cli,
			       "--group takes UTF-8 text without control or format characters");
	struct al_store *st = NULL;
	o.project = argv[optind];
	o.argv = (const char *const *)argv + dd + 1;
	o.env = env.v;
	o.secrets = secrets.v;
	o.secret_files = secret_files.v;
	o.egress_allow = allow.v;
	o.integrations = integ.v;
	if (rc < 0 && cli->server) {
		rc = run_remote(cli, &o);
	} else if (rc < 0) {
		if (cli_open(cli, &st, &err) < 0 ||
		    (!o.image && ops_default_image(st, NULL, &err) < 0))
			rc = cli_error(cli, &err);
	}
	if (rc < 0) {
		char ibuf[4200];
		o.image = o.image ? o.image : OPS_DEFAULT_IMAGE;
		o.author = cli_author(o.author);
		o.init_path = ops_init_path(ibuf, sizeof(ibuf));
		o.guest_dir = ops_guest_dir();
		o.output = cli->json ? NULL : live_output;
		struct al_run_info info;
		json_t *rec = NULL;
		struct sigaction old[3];
		o.cancel_fd = cli_cancel_on_signals(old);
		struct cli_watch w = { 0 };
		o.phase = run_phase;
		o.phase_ctx = &w;
		int ar = al_run(st, &o, &info, &err);
		cli_watch_stop(&w);
		cli_cancel_restore(old);
		if (ar < 0 || view_run(st, info.id, true, SIZE_MAX, &rec, &err) < 0) {
			rc = cli_error(cli, &err);
		} else if (cancel_signal && json_is_true(json_object_get(rec, "cancelled"))) {
			if (cli->json && cli_json_print(json_incref(rec)))
				rc = 1;
			else
				fprintf(stderr,
					"run %s: cancelled (%s); recorded with its output: airlock "
					"run show %s\n",
					info.id, strsignal(cancel_signal), info.id);
			rc = 128 + cancel_signal; /* as a shell reports the signal */
			al_run_info_release(&info);
		} else {
			if (!cli->json) {
				notes(stderr, rec);
				if (!cli->quiet)
					summary(stderr, rec, true);
			}
			rc = exit_status(rec);
			if (cli->json && cli_json_print(json_incref(rec)))
				rc = 1;
			al_run_info_release(&info);
		}
		json_decref(rec);
	}
	al_store_close(st);
	free(env.v);
	free(secrets.v);
	free(allow.v);
	free(integ.v);
	free(secret_files.v);
	for (size_t i = 0; i < nbufs; i++) {
		explicit_bzero(secret_bufs[i], strlen(secret_bufs[i]));
		free(secret_bufs[i]);
	}
	free(secret_bufs);
	al_contract_free(contract);
	return rc;
}

static void run_text(json_t *rec)
{
	char *argvs = json_dumps(json_object_get(rec, "argv"), JSON_COMPACT);
	json_t *c = json_object_get(rec, "changes");
	bool failed = !strncmp(jstr(rec, "outcome"), "failed", 6) ||
		      !strcmp(jstr(rec, "outcome"), "not_replayable") ||
		      !strcmp(jstr(rec, "outcome"), "running");
	printf("%s %s exit %-3lld %s%s%s%s%s+%lld ~%lld -%lld %s\n", cli_id_text(jstr(rec, "id")),
	       json_is_string(json_object_get(rec, "draft")) ? cli_id_text(jstr(rec, "draft"))
							     : "-",
	       jint(rec, "exit_code"), jtrue(rec, "timed_out") ? "timeout " : "",
	       jtrue(rec, "oom") ? "oom " : "", jtrue(rec, "cancelled") ? "cancelled " : "",
	       failed ? jstr(rec, "outcome") : "", failed ? " " : "", jint(c, "added"),
	       jint(c, "modified"), jint(c, "deleted"), argvs ? argvs : "");
	free(argvs);
}

static int list_runs(struct al_store *st, const char *project, json_t *arr, struct al_error *err)
{
	return view_runs(st, project, arr, err);
}

int cmd_runs(struct cli *cli, int argc, char **argv)
{
	return cli_list(cli, argc, argv,
			"usage: airlock runs PROJECT [--json]\n\n"
			"A project's runs, oldest first: run id, draft id, exit status, flags,\n"
			"+added ~modified -deleted, the command. --json: the run records.\n",
			1, "/projects/%s/runs", list_runs, run_text);
}
