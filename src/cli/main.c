/* airlock: the command line.  One file per subcommand; the table is here. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "airlock/manifest.h"
#include "airlock/store.h"
#include "cli.h"
#include "airlock/util.h"

#define AIRLOCK_VERSION "0.1.0"

static const struct cli_cmd commands[] = {
	{ "init", cmd_init, "create the airlock home (and the default tenant)" },
	{ "snapshot", cmd_snapshot, "import, show, export and diff snapshots" },
	{ "image", cmd_image, "import and list sandbox root filesystems" },
	{ "project", cmd_project, "create projects, show their head and history" },
	{ "commit", cmd_commit, "commit a directory to a project (compare-and-swap)" },
	{ "draft", cmd_draft, "fork and list drafts of a project" },
	{ "run", cmd_run, "run a command in a sandbox; its changes become a draft" },
	{ "runs", cmd_runs, "list a project's runs" },
	{ "replay", cmd_replay, "run a recorded run again; say whether it did the same" },
	{ "review", cmd_review, "show a draft's changes with diffs" },
	{ "apply", cmd_apply, "apply (all, some paths or hunks) or reject a draft" },
	{ "bundle", cmd_bundle, "export, inspect and apply DeltaBundles" },
	{ "audit", cmd_audit, "the tamper-evident ledger: list, show, export, verify" },
	{ "fsck", cmd_fsck, "verify every stored object and every snapshot" },
	{ "gc", cmd_gc, "reclaim lower layers and objects nothing retained reaches" },
	{ "serve", cmd_serve, "run the daemon: the HTTP API (docs/api.md)" },
	{ "admin", cmd_admin, "tenants, principals, grants, tokens and the run policy" },
	{ "doctor", cmd_doctor, "can the sandbox run here, and what it enforces" },
	{ "whoami", cmd_whoami, "who you are: the OS user and home, or the server's principal" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: airlock [--home DIR] [--tenant NAME] [--server URL] COMMAND [ARGS]\n"
		"\n"
		"Run untrusted automation against a project's files: isolated, reviewable,\n"
		"recoverable.\n"
		"\n"
		"options:\n"
		"  --home DIR      airlock home (env AIRLOCK_HOME; default "
		"~/.local/share/airlock)\n"
		"  --tenant NAME   tenant to act as (env AIRLOCK_TENANT; default \"default\")\n"
		"  --server URL    be a client of airlock serve at URL (env AIRLOCK_URL), with\n"
		"                  the bearer token in env AIRLOCK_TOKEN; the tenant is the\n"
		"                  token's. project, commit, draft list, run, runs, review,\n"
		"                  apply, bundle apply, image list, image import TARBALL,\n"
		"                  whoami,\n"
		"                  audit (list, show, checkpoint, export) and admin principal,\n"
		"                  grant and token work this way (docs/cli.md)\n"
		"  --blobs URL     also keep the objects in S3 (env AIRLOCK_BLOBS):\n"
		"                  s3://BUCKET[/PREFIX][?endpoint=URL&region=R\n"
		"                  &credentials=FILE&inline=BYTES]; else AWS_ACCESS_KEY_ID\n"
		"                  and AWS_SECRET_ACCESS_KEY; with --metadata, objects up\n"
		"                  to inline= bytes (16384) in the database (docs/operations.md)\n"
		"  --metadata URL  keep the metadata (projects, drafts, runs, the ledger,\n"
		"                  tenants, principals, tokens, policy) in PostgreSQL,\n"
		"                  postgres://… as the service role (env AIRLOCK_METADATA);\n"
		"                  the home keeps the keys and the objects; for admin\n"
		"                  metadata migrate, the owner (docs/operations.md)\n"
		"  --ca-cert PEM   trust this CA (or self-signed certificate) for an https\n"
		"                  --server, besides the system's (env AIRLOCK_CA_CERT)\n"
		"  --color=WHEN    colour: auto (on a terminal, without NO_COLOR), always,\n"
		"                  never (--color alone: always; --no-color: never); also\n"
		"                  accepted after COMMAND (before --)\n"
		"  -q, --quiet     no progress and no informational lines on stderr; also\n"
		"                  accepted after COMMAND (before --)\n"
		"  --version       print the version\n"
		"  -h, --help      this help; 'airlock COMMAND --help' for a command\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
		"\nexit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 corrupt,\n"
		"5 conflict, 6 invalid input, 7 already exists, 8 limit, 9 invalid state,\n"
		"10 unauthorized, 11 forbidden, 12 unavailable, 125 sandbox failure; airlock "
		"run: the command's status, 123 out of memory,\n"
		"124 timeout\n"
		"(docs/cli.md)\n"
		"\n"
		"config file: $XDG_CONFIG_HOME/airlock/config (default ~/.config/...):\n"
		"home, server, color, pager, token_file (below the flags and the environment)\n");
}

int main(int argc, char **argv)
{
	static char home_buf[4096];
	struct cli cli = { .prog = "airlock" };
	static struct cli_config conf;
	if (cli_config_load(&conf))
		return 2;
	cli.home = getenv("AIRLOCK_HOME");
	if (!cli.home || !*cli.home)
		cli.home = conf.home;
	cli.tenant = getenv("AIRLOCK_TENANT");
	cli.server = getenv("AIRLOCK_URL");
	if (!cli.server)
		cli.server = conf.server;
	cli.token = getenv("AIRLOCK_TOKEN");
	cli.ca_cert = getenv("AIRLOCK_CA_CERT");
	cli.pager = conf.pager;
	const char *blobs = getenv("AIRLOCK_BLOBS");
	cli.metadata = getenv("AIRLOCK_METADATA");
	/* --color=WHEN and -q anywhere before "--" (a command's own arguments follow it) */
	const char *color = getenv("AIRLOCK_COLOR");
	if (!color || !*color)
		color = conf.color;
	int kept = 1;
	bool tenant_flag = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (i < argc)
				argv[kept++] = argv[i++];
			break;
		}
		if (!strncmp(argv[i], "--color=", 8))
			color = argv[i] + 8;
		else if (!strcmp(argv[i], "--color"))
			color = "always";
		else if (!strcmp(argv[i], "--no-color"))
			color = "never";
		else if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))
			cli.quiet = true;
		else
			argv[kept++] = argv[i];
	}
	argc = kept;
	argv[argc] = NULL;
	if (cli_color_setup(color) < 0) {
		fprintf(stderr, "airlock: --color: expected auto, always or never, not '%s'\n",
			cli_esc(color, ""));
		return 2;
	}
	static const struct option opts[] = {
		{ "blobs", required_argument, NULL, 'B' },
		{ "metadata", required_argument, NULL, 'M' },
		{ "ca-cert", required_argument, NULL, 'C' },
		{ "home", required_argument, NULL, 'H' },
		{ "tenant", required_argument, NULL, 'T' },
		{ "server", required_argument, NULL, 'S' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'H': cli.home = optarg; break;
		case 'T':
			cli.tenant = optarg;
			tenant_flag = true;
			break;
		case 'S': cli.server = optarg; break;
		case 'C': cli.ca_cert = optarg; break;
		case 'B': blobs = optarg; break;
		case 'M': cli.metadata = optarg; break;
		case 'V': printf("airlock %s\n", AIRLOCK_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!cli.home || !*cli.home) {
		const char *h = getenv("HOME");
		const char *xdg = getenv("XDG_DATA_HOME");
		if (xdg && *xdg)
			snprintf(home_buf, sizeof(home_buf), "%s/airlock", xdg);
		else
			snprintf(home_buf, sizeof(home_buf), "%s/.local/share/airlock",
				 h && *h ? h : ".");
		cli.home = home_buf;
	}
	if (cli.server && !*cli.server)
		cli.server = NULL;
	static char *token_buf;
	if (cli.server && (!cli.token || !*cli.token) && conf.token_file) {
		if (cli_token_file(conf.token_file, &token_buf))
			return 2;
		cli.token = token_buf;
	}
	cli_progress_quiet(cli.quiet);
	cli_abbrev_setup(!cli.server && isatty(1));
	if (cli.server && tenant_flag) {
		fprintf(stderr, "airlock: --tenant cannot be used with --server: the token decides "
				"the tenant (drop --tenant, or use a token of that tenant)\n");
		return 2;
	}
	if (!cli.tenant || !*cli.tenant)
		cli.tenant = AL_DEFAULT_TENANT;
	if (blobs && *blobs) {
		struct al_error err = { 0 };
		/* before any thread; and in the environment, for the processes
		 * airlock starts (a daemon's replays, a run's helpers) */
		if (al_store_blobs(blobs, &err) < 0)
			return cli_error(&cli, &err);
		setenv("AIRLOCK_BLOBS", blobs, 1);
	}
	if (cli.metadata && *cli.metadata && !cli.server) {
		struct al_error err = { 0 };
		/* as --blobs: before any thread, and for airlock's own processes */
		if (al_store_metadata(cli.metadata, &err) < 0)
			return cli_error(&cli, &err);
		setenv("AIRLOCK_METADATA", cli.metadata, 1);
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[optind];
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(name, commands[i].name) == 0) {
			char prog[64];
			snprintf(prog, sizeof(prog), "airlock %s", name);
			cli.prog = prog;
			optind++;
			/* subcommands parse from their own argv[0] */
			return commands[i].run(&cli, argc - optind + 1, argv + optind - 1);
		}
	}
	fprintf(stderr, "airlock: unknown command '%s' (see airlock --help)\n", name);
	return 2;
}
