/* airlock init: create the home directory and the default tenant. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/store.h"
#include "cli.h"

int cmd_init(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: airlock [--home DIR] init\n\n"
			       "Create the airlock home (AIRLOCK_HOME, default "
			       "~/.local/share/airlock)\n"
			       "with the default tenant. Running it again changes nothing.\n");
			return 0;
		}
		return cli_usage(cli, "bad option");
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (cli->server)
		return cli_local_only(cli);
	struct al_error err = { 0 };
	if (al_home_init(cli->home, &err) < 0)
		return cli_error(cli, &err);
	printf("%s\n", cli->home);
	return 0;
}
