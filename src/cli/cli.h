/* airlock CLI: shared state and helpers of the subcommands.
 *
 * The files depend on each other downward only (scripts/layers.sh checks):
 *   main.c            the command table
 *   <command>.c       one per command (a command may use another's helpers)
 *   doc.c             documents from the home or the server, and printing them
 *   remote.c          the client of airlockd (libcurl, dl_curl.c)
 *   common.c          errors, JSON, progress, options, dispatch
 *   ids.c             names: id prefixes, PROJECT, PROJECT~N, @, short forms
 *   config.c          the user's config file ($XDG_CONFIG_HOME/airlock/config)
 *   term.c            terminal: safe text, colour, the pager, times for people
 * and below them src/front (views, ops) and include/airlock. */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "airlock/error.h"
#include "airlock/oid.h"
#include "airlock/auth.h"
#include "airlock/parse.h"
#include "airlock/volume.h"
#include "view.h"

struct al_store;

struct cli {
	const char *home;
	const char *tenant;
	const char *prog; /* "airlock snapshot import" for messages */
	bool json;
	bool page;            /* a long list: through the pager on a TTY (cli_print_list) */
	char change_base[80]; /* a commit's declared base, for a conflict's advice */
	const char *server;   /* --server URL / AIRLOCK_URL: a client of airlockd */
	const char *token;    /* AIRLOCK_TOKEN */
	const char *ca_cert;  /* --ca-cert / AIRLOCK_CA_CERT: a PEM CA for https servers */
	const char *pager;    /* the config file's pager (below AIRLOCK_PAGER, above PAGER) */
	bool quiet;           /* -q/--quiet: no progress, no informational lines */
	const char *metadata; /* --metadata / AIRLOCK_METADATA: postgres://… (admin metadata) */
};

/* config.c.  The config file's values (pointers into text), all NULL when
 * there is none.  cli_config_load: 0, or 2 (reported: a malformed line, an
 * unknown key, a token in the file). */
struct cli_config {
	char path[4096];
	char *text;
	const char *home, *server, *color, *pager, *token_file;
};
int cli_config_path(char *out, size_t n);
int cli_config_load(struct cli_config *c);
/* The token in path (malloc'ed): 0, or 2 (reported) unless path is a
 * regular file of the user that no one else may read or write. */
int cli_token_file(const char *path, char **out);

struct cli_cmd {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *summary;
};

/* Report err (stderr; and the JSON error object on stdout with --json) and
 * return the exit code for it. */
int cli_error(struct cli *cli, const struct al_error *err);
/* A usage error: message and the hint to --help; returns 2. */
int cli_usage(struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cli_open(struct cli *cli, struct al_store **out, struct al_error *err);
/* Print a JSON value on stdout (compact, one line) and release it. */
int cli_json_print(json_t *v);
/* Untrusted text for a terminal: as is if it is UTF-8 without Unicode Cc/Cf
 * characters, else \xNN-escaped (al_quote); NULL gives dflt.  The result
 * lives until 16 more calls of this thread. */
const char *cli_esc(const char *s, const char *dflt);
/* A small file's bytes (at most max: AL_ELIMIT past it), NUL-terminated;
 * errors name the path.  *out malloc'ed. */
int cli_read_small(const char *path, size_t max, char **out, size_t *n, struct al_error *err);
/* A run's output (stream 1 or 2) to f: on a terminal, only text, tabs, line
 * ends and colour pass, other controls are shown as \xNN. */
void cli_write_output(FILE *f, int stream, const void *p, size_t n);

/* Progress on a TTY (stderr), shown once an operation has taken more than a
 * second (AIRLOCK_PROGRESS_DELAY_MS), never in a pipe nor with -q. */
struct cli_progress {
	const char *what;
	uint64_t start_ns, last_ns, total_bytes, delay_ns;
	bool shown, enabled;
	bool time_only; /* the time alone: work whose size nothing counts */
};
void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total_bytes);
void cli_progress_cb(void *ctx, uint64_t files, uint64_t bytes);
void cli_progress_done(struct cli_progress *p);
/* -q: no progress anywhere */
void cli_progress_quiet(bool quiet);
/* Progress for work the library does not count: a thread that shows, every
 * 100 ms, the offset of fd (a file being read; -1: the time alone) against
 * total (0: unknown), until cli_watch_stop. Nothing when progress is off. */
struct cli_watch {
	struct cli_progress p;
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool running, stop;
};
void cli_watch_start(struct cli_watch *w, const char *what, int fd, uint64_t total);
void cli_watch_stop(struct cli_watch *w);

/* term.c.  --color=WHEN (auto, always, never): 0, or -1 for another WHEN;
 * auto is on a TTY without NO_COLOR (and TERM not dumb). */
int cli_color_setup(const char *when);
/* sgr when colour is on, else "" */
const char *cli_color(const char *sgr);
#define CLI_RED "\033[31m"
#define CLI_GREEN "\033[32m"
#define CLI_YELLOW "\033[33m"
#define CLI_CYAN "\033[36m"
#define CLI_BOLD "\033[1m"
#define CLI_RESET "\033[m"
/* The colour of a state, outcome or change kind (A/M/D), or "" */
const char *cli_state_color(const char *state);
/* Long output (not --json) on a TTY goes through $AIRLOCK_PAGER, $PAGER or
 * "less -FRX" (empty or "cat": none); waited for at exit. */
void cli_pager(struct cli *cli);
/* "2026-11-30 12:04 UTC, 3 min ago" (now 0: the clock); lives for 4 calls */
const char *cli_when(int64_t secs, int64_t now);

/* ids.c.  What a person typed where an id of kinds is asked, resolved into
 * out: a unique prefix (at least 4 characters) of a run, draft or snapshot
 * id (bare hex too), PROJECT or PROJECT~N (a snapshot), @ (the current
 * user's last run, or its draft).  Anything else, and everything with
 * --server, is copied as it is (the verb reports it).  0, or the exit code
 * (reported): 2 for an ambiguous prefix, listing the candidates. */
#define CLI_ID_RUN 1u
#define CLI_ID_DRAFT 2u
#define CLI_ID_SNAPSHOT 4u
int cli_id(struct cli *cli, unsigned kinds, const char *in, char *out, size_t outsz);
/* A malformed run or draft id (after cli_id) is invalid input, as a
 * malformed snapshot id is: 0, or exit 6 (reported). */
int cli_id_check(struct cli *cli, unsigned kinds, const char *id);
/* A path inside a draft as a shell's completion gives it: "./a/b/" is
 * "a/b" (leading "./" and trailing "/" dropped, in place); "." or "./"
 * stay as they are (the library refuses them). */
char *cli_draft_path(char *path);
/* An id's short form for people: 12 hex characters (sha256: dropped) */
const char *cli_short(const char *id);
/* An id in a text list: its short form for people (a local home, stdout a
 * terminal: cli_abbrev_setup(true)), else the full id (scripts and pipes
 * read it back; a --server resolves no prefixes). NULL gives "-". */
void cli_abbrev_setup(bool on);
const char *cli_id_text(const char *id);

/* Dispatch argv[0] through a table of subcommands; prints help on --help. */
int cli_dispatch(struct cli *cli, const char *group, const struct cli_cmd *cmds, int argc,
		 char **argv);

struct al_conflict;
struct al_commit_result;
const char *cli_author(const char *given);
int cli_import(struct al_store *st, const char *dir, struct al_oid *id, struct al_error *err);
/* Print a commit result document (view_commit_result); releases it. */
int cli_commit_print(struct cli *cli, json_t *doc);
int cli_commit_report(struct cli *cli, int r, const struct al_commit_result *res,
		      const struct al_error *err, json_t *extra);

/* Options parsers: return -1 to go on, else the exit code (help, usage). */
int cli_simple_opts(struct cli *cli, int argc, char **argv, const char *help,
		    int nargs); /* --json */
int cli_create_opts(struct cli *cli, int argc, char **argv, const char *help, const char **from,
		    const char **author); /* NAME [--from DIR] [--author A] [--json] */
struct cli_commit_flags {
	const char *base, *message, *author;
	struct al_oid base_id;
	enum al_strategy strategy; /* set the default before parsing */
};
int cli_commit_opts(
	struct cli *cli, int argc, char **argv, const char *help, int nargs,
	struct cli_commit_flags *f); /* --base ID [--strategy S] [-m MSG] [--author A] [--json] */

/* A list command: options (--json); the items from the local store (run
 * appends them to arr) or, with --server, from GET remote (a format with
 * one %s for the argument); then the array (--json) or text(item) each. */
typedef int (*cli_list_fn)(struct al_store *st, const char *arg, json_t *arr, struct al_error *err);
typedef void (*cli_text_fn)(json_t *item);
int cli_list(struct cli *cli, int argc, char **argv, const char *help, int nargs,
	     const char *remote, cli_list_fn run, cli_text_fn text);

/* A document: GET path from the server (--server), or local(st, arg, out)
 * on the home.  -1 with *out set, else the exit code (already reported). */
typedef int (*cli_doc_fn)(struct al_store *st, const void *arg, json_t **out, struct al_error *err);
int cli_fetch(struct cli *cli, const char *path, cli_doc_fn local, const void *arg, json_t **out);
/* Print an array: itself with --json, else text(item) each; releases it. */
int cli_print_list(struct cli *cli, json_t *arr, cli_text_fn text);

/* remote.c: the client of airlockd.  cli_http returns 0 or the error's
 * code (err filled from the server's error document, kept in *out). */
int cli_http(struct cli *cli, const char *method, const char *path, json_t *body,
	     const char *upload, const char *download, json_t **out, struct al_error *err);
/* GET path's raw bytes (malloc'ed; may be NULL when empty) and its
 * X-Airlock-Run-State header. */
int cli_http_get_raw(struct cli *cli, const char *path, char **data, size_t *len, char state[16],
		     struct al_error *err);
/* POST a directory (as a tar archive) to path. */
int cli_http_tree(struct cli *cli, const char *path, const char *dir, json_t **out,
		  struct al_error *err);
/* Report a remote error (the server's document as is with --json); exit code. */
int cli_remote_error(struct cli *cli, const struct al_error *err, json_t *doc);
/* GET path into *out: -1 on success, else the exit code (reported). */
int cli_remote_get(struct cli *cli, const char *path, json_t **out);
/* A verb that needs a local home, asked with --server: exit 2. */
int cli_local_only(struct cli *cli);
/* A path segment, percent-encoded. */
const char *cli_path_escape(const char *s, char *out, size_t n);

struct sigaction;
/* run.c: SIGINT, SIGTERM and SIGHUP cancel a local run: the fd to give it
 * as cancel_fd (-1 if none could be made); restore the handlers after;
 * the signal that cancelled it (0: none). */

int cli_cancel_on_signals(struct sigaction *old); /* old: 3 of them */
void cli_cancel_restore(struct sigaction *old);
int cli_cancel_signal(void);

int cmd_init(struct cli *cli, int argc, char **argv);
int cmd_admin_policy(struct cli *cli, int argc, char **argv);
int cmd_admin_integration(struct cli *cli, int argc, char **argv);
int cmd_doctor(struct cli *cli, int argc, char **argv);
int cmd_whoami(struct cli *cli, int argc, char **argv);
int cmd_project(struct cli *cli, int argc, char **argv);
int cmd_commit(struct cli *cli, int argc, char **argv);
int cmd_draft(struct cli *cli, int argc, char **argv);
int cmd_apply(struct cli *cli, int argc, char **argv);
int cmd_review(struct cli *cli, int argc, char **argv);
int cmd_bundle(struct cli *cli, int argc, char **argv);
int cmd_audit(struct cli *cli, int argc, char **argv);
int cmd_image(struct cli *cli, int argc, char **argv);
int cmd_snapshot(struct cli *cli, int argc, char **argv);
int cmd_fsck(struct cli *cli, int argc, char **argv);
int cmd_gc(struct cli *cli, int argc, char **argv);
int cmd_run(struct cli *cli, int argc, char **argv);
int cmd_runs(struct cli *cli, int argc, char **argv);
int cmd_replay(struct cli *cli, int argc, char **argv);
int cmd_serve(struct cli *cli, int argc, char **argv);
int cmd_admin(struct cli *cli, int argc, char **argv);

#endif
