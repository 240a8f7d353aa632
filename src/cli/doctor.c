/* airlock doctor: can the sandbox run here, and what does it enforce. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "airlock/sandbox.h"
#include "cli.h"

static const char help[] =
	"usage: airlock doctor [--json]\n\n"
	"Check what this host gives airlock's sandbox: user namespaces, overlayfs with\n"
	"userxattr, /proc in a new PID namespace, the seccomp filter, each cgroup\n"
	"controller (memory, pids, cpu) and whether airlock may use it, IA32 emulation\n"
	"and vsock.  One line per check: ok, FAIL (a run cannot work) or WARN (a limit\n"
	"is not enforced), what it means and what to change.  Exit 0 when runs can\n"
	"work here (every required check passes), 1 otherwise.\n";

int cmd_doctor(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      { 0 } };
	int c;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'j')
			cli->json = true;
		else if (c == 'h')
			return printf("%s", help), 0;
		else
			return cli_usage(cli, "bad option");
	}
	if (optind != argc)
		return cli_usage(cli, "unexpected argument '%s'", argv[optind]);
	if (cli->server)
		return cli_local_only(cli);
	struct al_doctor_item items[AL_DOCTOR_MAX];
	int n = al_sandbox_doctor(items);
	bool runs = true;
	json_t *arr = json_array();
	for (int i = 0; i < n; i++) {
		runs &= items[i].ok || !items[i].required;
		json_array_append_new(arr,
				      json_pack("{s:s,s:b,s:b,s:s,s:s}", "check", items[i].check,
						"ok", items[i].ok, "required", items[i].required,
						"detail", items[i].detail, "fix", items[i].fix));
	}
	if (cli->json) {
		cli_json_print(json_pack("{s:b,s:o}", "runs", runs, "checks", arr));
		return runs ? 0 : 1;
	}
	for (int i = 0; i < n; i++) {
		printf("%-4s  %-28s %s\n",
		       items[i].ok         ? "ok"
		       : items[i].required ? "FAIL"
					   : "WARN",
		       items[i].check, items[i].detail);
		if (!items[i].ok)
			printf("      %-28s fix: %s\n", "", items[i].fix);
	}
	printf("%s\n", runs ? "runs can work on this host"
			    : "runs cannot work on this host: fix the FAIL lines");
	json_decref(arr);
	return runs ? 0 : 1;
}
