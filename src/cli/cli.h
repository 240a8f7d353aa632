/* airlock CLI: shared state and helpers of the subcommands. */
#ifndef AL_CLI_H
#define AL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "airlock/error.h"

struct al_store;

struct cli {
	const char *home;
	const char *tenant;
	const char *prog;   /* "airlock snapshot import" for messages */
	bool json;
};

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
json_t *cli_json_id(const uint8_t id[32]);
/* JSON string from bytes that may not be UTF-8 (escaped as in messages). */
json_t *cli_json_bytes(const char *s, size_t n);

/* Progress on a TTY, shown once an operation has taken more than a second. */
struct cli_progress {
	const char *what;
	uint64_t start_ns, last_ns, total_bytes;
	bool shown, enabled;
};
void cli_progress_init(struct cli_progress *p, const char *what, uint64_t total_bytes);
void cli_progress_cb(void *ctx, uint64_t files, uint64_t bytes);
void cli_progress_done(struct cli_progress *p);

/* Dispatch argv[0] through a table of subcommands; prints help on --help. */
int cli_dispatch(struct cli *cli, const char *group, const struct cli_cmd *cmds, int argc,
		 char **argv);

struct al_conflict;
struct al_commit_result;
const char *cli_author(const char *given);
int cli_import(struct al_store *st, const char *dir, uint8_t id[32], struct al_error *err);
json_t *cli_conflicts_json(const struct al_conflict *c, size_t n);
void cli_conflicts_print(FILE *f, const struct al_conflict *c, size_t n);
int cli_commit_report(struct cli *cli, int r, const struct al_commit_result *res, const struct al_error *err,
		      json_t *extra);

struct al_entry;
/* An entry as JSON {type, mode, size[, sha256][, target]}; NULL -> null. */
json_t *cli_entry_json(const struct al_entry *e, const char *target);
/* Options parsers: return -1 to go on, else the exit code (help, usage). */
int cli_simple_opts(struct cli *cli, int argc, char **argv, const char *help, int nargs); /* --json */
int cli_create_opts(struct cli *cli, int argc, char **argv, const char *help, const char **from,
		    const char **author); /* NAME [--from DIR] [--author A] [--json] */
struct cli_commit_flags {
	const char *base, *message, *author;
	uint8_t base_id[32];
	int strategy; /* set the default before parsing */
};
int cli_commit_opts(struct cli *cli, int argc, char **argv, const char *help, int nargs,
		    struct cli_commit_flags *f); /* --base ID [--strategy S] [-m MSG] [--author A] [--json] */

/* A list command: options (--json), open the store, run (which prints a
 * line per item, or appends to arr with --json), print the array. */
typedef int (*cli_list_fn)(struct al_store *st, const char *arg, json_t *arr, struct al_error *err);
int cli_list(struct cli *cli, int argc, char **argv, const char *help, int nargs, cli_list_fn run);

int cmd_init(struct cli *cli, int argc, char **argv);
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
int cmd_run(struct cli *cli, int argc, char **argv);
int cmd_runs(struct cli *cli, int argc, char **argv);

#endif
